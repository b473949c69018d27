package listen

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/bouncer-mcp/bouncer/internal/session"
	"github.com/bouncer-mcp/bouncer/internal/statefile"
)

// Scope is what one user's sessions on this replica share (docs/listen.md,
// "Scopes"). A session's own history, what vouches in it and what a human
// approved in it are the session's (its Judge keeps them); what is here is
// the user's.
type Scope struct {
	User string
	// Taint is the user's live sessions: each session is a member, and
	// its taint check sees the union of their untrusted output.
	Taint *session.Group
	// Remembered is the destinations the user chose to remember (a
	// "remember" ticked in the client's question): the user's own, in
	// STATE/users/HASH/remembered.json. The operator's (STATE's
	// remembered.json, `bouncer trust add`) hold for every user beside
	// them.
	Remembered *session.Remembered
	// Budget counts the user's calls of each tool in the budget window,
	// across sessions (engine.Options.Budget).
	Budget *Budget
}

// users keeps the scope of each user seen on this replica.
type users struct {
	dir    string
	window time.Duration
	now    func() time.Time

	mu sync.Mutex
	m  map[string]*Scope
}

func newUsers(stateDir string, window time.Duration, now func() time.Time) *users {
	return &users{dir: stateDir, window: window, now: now, m: map[string]*Scope{}}
}

// get returns user's scope, making it on first use.
func (u *users) get(user string) *Scope {
	u.mu.Lock()
	defer u.mu.Unlock()
	if s := u.m[user]; s != nil {
		return s
	}
	dir := UserDir(u.dir, user)
	_ = ensureDir(filepath.Dir(dir))
	_ = ensureDir(dir)
	s := &Scope{
		User:       user,
		Taint:      session.NewGroup(),
		Remembered: session.OpenRemembered(dir),
		Budget:     &Budget{window: u.window, now: u.now, calls: map[string][]time.Time{}},
	}
	u.m[user] = s
	return s
}

// UserDir is a user's directory in the state directory, named by a hash of
// the user (a user name is whatever the token file or the issuer says).
func UserDir(stateDir, user string) string {
	h := sha256.Sum256([]byte(user))
	return filepath.Join(stateDir, "users", hex.EncodeToString(h[:16]))
}

// Budget counts one user's calls of each tool in a sliding window: at any
// moment, the attempts of the last window. Every attempt counts, as the
// engine counts them.
type Budget struct {
	window time.Duration
	now    func() time.Time

	mu    sync.Mutex
	calls map[string][]time.Time // by tool, oldest first
}

// maxCounted bounds what one tool's window keeps: beyond it every attempt
// is counted as maxCounted+1, over any budget of a size people write.
const maxCounted = 1 << 16

// Take implements engine.Budget.
func (b *Budget) Take(tool string, count bool) int {
	now := b.now()
	b.mu.Lock()
	defer b.mu.Unlock()
	ts := b.calls[tool]
	cut := now.Add(-b.window)
	i := 0
	for i < len(ts) && !ts[i].After(cut) {
		i++
	}
	ts = ts[i:]
	if count {
		if len(ts) >= maxCounted {
			b.calls[tool] = ts
			return maxCounted + 1
		}
		ts = append(ts, now)
	}
	if len(ts) == 0 {
		delete(b.calls, tool)
	} else {
		b.calls[tool] = ts
	}
	return len(ts)
}

// ensureDir makes a directory of Bouncer's own state (0700, this user's).
func ensureDir(dir string) error { return statefile.Dir(dir) }

// removeDir removes a session's directory.
func removeDir(dir string) { _ = os.RemoveAll(dir) }
