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

	// sessions counts the user's live sessions here (guarded by users.mu).
	sessions int
	dir      string // UserDir: made when the user first remembers a destination
}

// Remember keeps a destination the user vouched for with "remember"
// ticked (proxy.Config.Remember), in the user's own file.
func (s *Scope) Remember(server, dest string, now time.Time) error {
	if err := ensureDir(filepath.Dir(s.dir)); err != nil {
		return err
	}
	if err := ensureDir(s.dir); err != nil {
		return err
	}
	return s.Remembered.Add(server, dest, "client", now)
}

// users keeps the scope of each user with a live session on this replica,
// or with calls in the budget window: a scope holds nothing else (the
// taint union is of live sessions; remembered destinations are on disk),
// so one that has neither is forgotten (prune) and the memory the
// listener holds does not grow with the number of users it has seen.
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

// acquire counts one more live session of user's and returns their scope,
// made on first use (or again after it was pruned); it returns nil when
// the user has max live sessions already. Each scope acquire returns is
// given back with release when its session ends.
func (u *users) acquire(user string, max int) *Scope {
	u.mu.Lock()
	defer u.mu.Unlock()
	s := u.m[user]
	if s == nil {
		dir := UserDir(u.dir, user)
		s = &Scope{
			User:       user,
			dir:        dir,
			Taint:      session.NewGroup(),
			Remembered: session.OpenRemembered(dir),
			Budget:     &Budget{window: u.window, now: u.now, calls: map[string][]time.Time{}},
		}
		u.m[user] = s
	}
	if s.sessions >= max {
		return nil
	}
	s.sessions++
	return s
}

// release ends one of the scope's sessions; the scope goes at once if that
// was its last and its budget window holds no call.
func (u *users) release(s *Scope) {
	u.mu.Lock()
	defer u.mu.Unlock()
	s.sessions--
	if s.sessions <= 0 && s.Budget.idle() && u.m[s.User] == s {
		delete(u.m, s.User)
	}
}

// prune forgets every scope with no live session whose budget window has
// passed since its last call, and returns how many scopes are left.
func (u *users) prune() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	for user, s := range u.m {
		if s.sessions <= 0 && s.Budget.idle() {
			delete(u.m, user)
		}
	}
	return len(u.m)
}

// count returns how many scopes are held.
func (u *users) count() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.m)
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

// idle reports whether no call of any tool is in the window any more.
func (b *Budget) idle() bool {
	cut := b.now().Add(-b.window)
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, ts := range b.calls {
		if len(ts) > 0 && ts[len(ts)-1].After(cut) {
			return false
		}
	}
	return true
}

// ensureDir makes a directory of Bouncer's own state (0700, this user's).
func ensureDir(dir string) error { return statefile.Dir(dir) }

// removeDir removes a session's directory, if one of its codes made it.
func removeDir(dir string) { _ = os.RemoveAll(dir) }
