package listen

import (
	"errors"
	"net/http"
	"testing"
	"time"
)

// The spawn rate is a token bucket on the clock, a user's processes are
// counted until they exit, and a pooled process counts against its user
// but not against the rate.
func TestLimiter(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	l := newLimiter(Limits{ProcessesPerUser: 2, SpawnRate: 2, SpawnBurst: 2}, func() time.Time { return now })
	refused := func(err error, retry time.Duration) {
		t.Helper()
		var lim *errLimit
		if !errors.As(err, &lim) || lim.status != http.StatusTooManyRequests {
			t.Fatalf("got %v, want a 429", err)
		}
		if lim.retry != retry {
			t.Fatalf("Retry-After %v, want %v", lim.retry, retry)
		}
	}
	ok := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	ok(l.spawn("alice"))
	ok(l.spawn("bob"))
	// The burst is spent: the next token comes in half a second.
	refused(l.spawn("carol"), 500*time.Millisecond)
	now = now.Add(250 * time.Millisecond)
	refused(l.spawn("carol"), 250*time.Millisecond)
	now = now.Add(250 * time.Millisecond)
	ok(l.spawn("carol"))
	// A quiet while refills the bucket to its burst, not beyond.
	now = now.Add(time.Hour)
	ok(l.spawn("alice"))
	ok(l.spawn("bob"))
	refused(l.spawn("dave"), 500*time.Millisecond)
	// alice runs two processes, her limit, whatever the rate; the warm
	// pool's process is refused her too.
	now = now.Add(time.Hour)
	refused(l.spawn("alice"), 5*time.Second)
	refused(l.adopt("alice"), 5*time.Second)
	// One exits: she may start one again.
	l.exited("alice")
	ok(l.adopt("alice"))
	l.exited("alice")
	now = now.Add(2 * time.Second) // the adoption took her share's token
	ok(l.spawn("alice"))
	// The refusals and the adoption took no token of the rate: one is
	// left of two.
	ok(l.spawnPooled())
	if err := l.spawnPooled(); err == nil {
		t.Fatal("the warm pool took a third token of a burst of two")
	}
	// Every process of a user gone, the user is forgotten.
	for range 2 {
		l.exited("alice")
	}
	if _, held := l.procs["alice"]; held {
		t.Fatal("alice's count outlived her processes")
	}
}

// One user takes at most a quarter of the spawn rate and burst, so that a
// client starting sessions in a loop leaves the rest to others; a share
// that is full again is forgotten.
func TestLimiterUserShare(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	l := newLimiter(Limits{ProcessesPerUser: 100, SpawnRate: 8, SpawnBurst: 8}, func() time.Time { return now })
	for range 2 {
		if err := l.spawn("alice"); err != nil {
			t.Fatal(err)
		}
		l.exited("alice")
	}
	var lim *errLimit
	if err := l.spawn("alice"); !errors.As(err, &lim) || lim.retry != 500*time.Millisecond {
		t.Fatalf("alice's third start at once: %v; want a 429 for her share, retry in 500ms", err)
	}
	if err := l.spawn("bob"); err != nil {
		t.Fatalf("bob, while alice's share is spent: %v", err)
	}
	// A process from the warm pool (its start took a token of the rate)
	// counts against her share all the same: else her loop would drain
	// the pool, and its refills would take the rate from everyone else.
	if err := l.adopt("alice"); !errors.As(err, &lim) {
		t.Fatalf("alice adopts a warm process with her share spent: %v; want a 429", err)
	}
	now = now.Add(time.Second)
	l.prune()
	if _, kept := l.shares["alice"]; kept {
		t.Fatal("alice's full share was kept")
	}
}
