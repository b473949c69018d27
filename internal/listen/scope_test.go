package listen

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

// clock is a settable time for the budget window.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// A user's scope lives while they have a session, and after their last one
// ends for as long as their budget window holds a call; then it goes, and
// a session after that starts a scope with nothing counted.
func TestUserScopesPruned(t *testing.T) {
	c := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	u := newUsers(t.TempDir(), time.Hour, c.now)

	a1, a2 := u.acquire("alice", 2), u.acquire("alice", 2)
	if a1 == nil || a1 != a2 {
		t.Fatal("alice's two sessions do not share one scope")
	}
	if u.acquire("alice", 2) != nil {
		t.Fatal("a third session of alice's was let past her limit of 2")
	}
	a1.Budget.Take("send_email", true)
	u.release(a1)
	u.prune()
	if u.count() != 1 {
		t.Fatal("alice's scope went while she still had a session")
	}
	u.release(a2)
	c.add(59 * time.Minute)
	if u.prune() != 1 {
		t.Fatal("alice's scope went with a call still in her budget window")
	}
	if a := u.acquire("alice", 2); a != a1 || a.Budget.Take("send_email", false) != 1 {
		t.Fatal("alice's new session within the window does not see her budget")
	} else {
		u.release(a)
	}
	c.add(2 * time.Minute)
	if n := u.prune(); n != 0 {
		t.Fatalf("%d scopes left after alice's window passed with no session", n)
	}
	a := u.acquire("alice", 2)
	if a == a1 || a.Budget.Take("send_email", false) != 0 {
		t.Fatal("alice's scope after the window still counts the old call")
	}
	u.release(a)

	// A user whose sessions made no budgeted call is forgotten as their
	// last session ends, without waiting for a prune: ten thousand
	// distinct users leave nothing behind.
	for i := range 10_000 {
		s := u.acquire(fmt.Sprintf("user-%d", i), 20)
		u.release(s)
	}
	if n := u.count(); n != 0 {
		t.Fatalf("%d scopes held after 10,000 users came and went", n)
	}
	// Those who made budgeted calls go once their window has passed.
	for i := range 1000 {
		s := u.acquire(fmt.Sprintf("caller-%d", i), 20)
		s.Budget.Take("send_email", true)
		u.release(s)
	}
	if n := u.prune(); n != 1000 {
		t.Fatalf("%d scopes held within the window, want 1000", n)
	}
	c.add(time.Hour + time.Second)
	if n := u.prune(); n != 0 {
		t.Fatalf("%d scopes held after the window, want 0", n)
	}
}
