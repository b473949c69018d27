package listen

import (
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// Limits bound what clients can make the listener hold (docs/listen.md,
// "Limits"). Zero fields take the defaults below.
type Limits struct {
	// Sessions is the most sessions this replica holds; beyond, a new one
	// is answered 503 (another replica may take it).
	Sessions int
	// SessionsPerUser is the most sessions one user holds here; beyond,
	// 429.
	SessionsPerUser int
	// ProcessesPerUser is the most upstream processes one user's sessions
	// run at once.
	ProcessesPerUser int
	// SpawnRate is how many upstream processes may start per second, with
	// SpawnBurst at once; beyond, a new session is answered 429 with
	// Retry-After.
	SpawnRate  float64
	SpawnBurst int
	// Idle ends a session no request has touched for this long.
	Idle time.Duration
	// Respawns is how many times a session's upstream is started again
	// after it crashed.
	Respawns int
	// BudgetWindow is the window over which a user's calls count against
	// a tool's max_calls, across sessions.
	BudgetWindow time.Duration
	// Warm is how many started upstream processes each stdio server keeps
	// ready for the next sessions (0: none).
	Warm int
}

// The defaults.
const (
	DefaultSessions         = 1000
	DefaultSessionsPerUser  = 20
	DefaultProcessesPerUser = 20
	DefaultSpawnRate        = 25
	DefaultSpawnBurst       = 50
	DefaultIdle             = 30 * time.Minute
	DefaultRespawns         = 3
	DefaultBudgetWindow     = 24 * time.Hour
)

func (l *Limits) defaults() {
	if l.Sessions <= 0 {
		l.Sessions = DefaultSessions
	}
	if l.SessionsPerUser <= 0 {
		l.SessionsPerUser = DefaultSessionsPerUser
	}
	if l.ProcessesPerUser <= 0 {
		l.ProcessesPerUser = DefaultProcessesPerUser
	}
	if l.SpawnRate <= 0 {
		l.SpawnRate = DefaultSpawnRate
	}
	if l.SpawnBurst <= 0 {
		l.SpawnBurst = DefaultSpawnBurst
	}
	if l.Idle <= 0 {
		l.Idle = DefaultIdle
	}
	if l.Respawns < 0 {
		l.Respawns = 0
	} else if l.Respawns == 0 {
		l.Respawns = DefaultRespawns
	}
	if l.BudgetWindow <= 0 {
		l.BudgetWindow = DefaultBudgetWindow
	}
}

// limiter keeps the spawn rate (a token bucket), each user's share of it
// (a bucket of its own) and each user's process count.
type limiter struct {
	lim Limits
	now func() time.Time

	mu     sync.Mutex
	all    bucket
	shares map[string]*bucket
	procs  map[string]int
}

// userShare is the part of the spawn rate and burst one user may take. A
// user whose client starts sessions in a loop, ending each (so that the
// limit on their processes never binds), would otherwise take the whole
// rate, and every other user's sessions would be refused until it
// stopped.
const userShare = 4

// bucket is a token bucket.
type bucket struct {
	tokens float64
	last   time.Time
}

// refill adds what rate has given since the last refill, up to burst.
func (b *bucket) refill(now time.Time, rate, burst float64) {
	b.tokens = min(burst, b.tokens+now.Sub(b.last).Seconds()*rate)
	b.last = now
}

// wait is how long until the bucket holds a token at rate (0: it does).
func (b *bucket) wait(rate float64) time.Duration {
	if b.tokens >= 1 {
		return 0
	}
	return time.Duration((1 - b.tokens) / rate * float64(time.Second))
}

func newLimiter(lim Limits, now func() time.Time) *limiter {
	return &limiter{lim: lim, now: now, all: bucket{float64(lim.SpawnBurst), now()}, shares: map[string]*bucket{}, procs: map[string]int{}}
}

// share is a user's part of the spawn rate and burst.
func (l *limiter) share() (rate, burst float64) {
	return l.lim.SpawnRate / userShare, max(1, float64(l.lim.SpawnBurst/userShare))
}

// spawn takes a process slot for user, or says why not.
func (l *limiter) spawn(user string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.procs[user] >= l.lim.ProcessesPerUser {
		return &errLimit{status: http.StatusTooManyRequests, retry: 5 * time.Second,
			msg: fmt.Sprintf("your sessions run %d server processes on this replica, the limit; end a session first", l.lim.ProcessesPerUser)}
	}
	now := l.now()
	mine, err := l.shareLocked(user, now)
	if err != nil {
		return err
	}
	l.all.refill(now, l.lim.SpawnRate, float64(l.lim.SpawnBurst))
	if wait := l.all.wait(l.lim.SpawnRate); wait > 0 {
		return &errLimit{status: http.StatusTooManyRequests, retry: wait,
			msg: fmt.Sprintf("server processes are started at most %g a second here; try again shortly", l.lim.SpawnRate)}
	}
	mine.tokens--
	l.all.tokens--
	l.procs[user]++
	return nil
}

// shareLocked is user's share of the spawn rate, refilled, if it holds a
// token; else a 429 saying when it will. l.mu is held.
func (l *limiter) shareLocked(user string, now time.Time) (*bucket, error) {
	rate, burst := l.share()
	mine := l.shares[user]
	if mine == nil {
		mine = &bucket{burst, now}
		l.shares[user] = mine
	}
	mine.refill(now, rate, burst)
	if wait := mine.wait(rate); wait > 0 {
		return nil, &errLimit{status: http.StatusTooManyRequests, retry: wait,
			msg: fmt.Sprintf("your sessions start at most %g server processes a second here, a share of the replica's %g; try again shortly", rate, l.lim.SpawnRate)}
	}
	return mine, nil
}

// prune forgets the shares of users whose bucket is full again: a new
// one starts full.
func (l *limiter) prune() {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	rate, burst := l.share()
	for user, b := range l.shares {
		if b.refill(now, rate, burst); b.tokens >= burst {
			delete(l.shares, user)
		}
	}
}

// adopt counts a process taken from the warm pool (its start took a
// token of the rate already) against user's limit and user's share of the
// rate: else a user's loop would drain the pool, and its refills would
// take the rate from everyone else.
func (l *limiter) adopt(user string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.procs[user] >= l.lim.ProcessesPerUser {
		return &errLimit{status: http.StatusTooManyRequests, retry: 5 * time.Second,
			msg: fmt.Sprintf("your sessions run %d server processes on this replica, the limit; end a session first", l.lim.ProcessesPerUser)}
	}
	mine, err := l.shareLocked(user, l.now())
	if err != nil {
		return err
	}
	mine.tokens--
	l.procs[user]++
	return nil
}

// spawnPooled takes a spawn token for the warm pool, or fails when there
// is none now.
func (l *limiter) spawnPooled() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.all.refill(l.now(), l.lim.SpawnRate, float64(l.lim.SpawnBurst))
	if l.all.wait(l.lim.SpawnRate) > 0 {
		return errors.New("no spawn token")
	}
	l.all.tokens--
	return nil
}

// exited gives back a process slot.
func (l *limiter) exited(user string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.procs[user]--; l.procs[user] <= 0 {
		delete(l.procs, user)
	}
}
