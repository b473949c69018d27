package session

import (
	"crypto/rand"
	"slices"
	"sync"

	"github.com/bouncer-mcp/bouncer/internal/taint"
)

// Group is sessions whose untrusted output is checked together while they
// live: bouncer listen's MCP sessions of one user on one replica. Each
// member keeps a history of its own (what vouches, what a human approved,
// stays the member's), but its taint check (Tainted) also sees every
// other live member's untrusted output, so a destination one session of a
// user read is denied in the user's other sessions too. A member that
// ends leaves; what it recorded is no longer seen, which can only turn a
// deny into an ask, never into an allow.
//
// The members share one hash key, so a probe made by one is good for the
// stores of all.
type Group struct {
	key [taint.KeySize]byte

	mu      sync.RWMutex
	members []*Session // in the order they joined
}

// NewGroup returns an empty group.
func NewGroup() *Group {
	g := &Group{}
	if _, err := rand.Read(g.key[:]); err != nil {
		panic("session: no randomness: " + err.Error())
	}
	return g
}

// New returns a new session in the group, kept in this process's memory.
func (g *Group) New() *Session {
	s := newWithKey(g.key)
	s.group = g
	g.mu.Lock()
	g.members = append(g.members, s)
	g.mu.Unlock()
	return s
}

// Leave takes a session that ended out of the group.
func (g *Group) Leave(s *Session) {
	g.mu.Lock()
	g.members = slices.DeleteFunc(g.members, func(m *Session) bool { return m == s })
	g.mu.Unlock()
}

// Len is the number of live members.
func (g *Group) Len() int {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return len(g.members)
}

// tainted is Tainted over the other members' stores, in the order they
// joined (the same history gives the same reason).
func (g *Group) tainted(self *Session, forms []string) (string, bool) {
	g.mu.RLock()
	others := make([]*Session, 0, len(g.members))
	for _, m := range g.members {
		if m != self {
			others = append(others, m)
		}
	}
	g.mu.RUnlock()
	for _, m := range others {
		if server, ok := m.taintedHere(forms); ok {
			return server, true
		}
	}
	return "", false
}
