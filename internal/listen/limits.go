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

// limiter keeps the spawn rate (a token bucket) and each user's process
// count.
type limiter struct {
	lim Limits
	now func() time.Time

	mu     sync.Mutex
	tokens float64
	last   time.Time
	procs  map[string]int
}

func newLimiter(lim Limits, now func() time.Time) *limiter {
	return &limiter{lim: lim, now: now, tokens: float64(lim.SpawnBurst), last: now(), procs: map[string]int{}}
}

// spawn takes a process slot for user, or says why not.
func (l *limiter) spawn(user string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.procs[user] >= l.lim.ProcessesPerUser {
		return &errLimit{status: http.StatusTooManyRequests, retry: 5 * time.Second,
			msg: fmt.Sprintf("your sessions run %d server processes on this replica, the limit; end a session first", l.lim.ProcessesPerUser)}
	}
	if wait, ok := l.tokenLocked(); !ok {
		return &errLimit{status: http.StatusTooManyRequests, retry: wait,
			msg: fmt.Sprintf("server processes are started at most %g a second here; try again shortly", l.lim.SpawnRate)}
	}
	l.procs[user]++
	return nil
}

// tokenLocked takes a token of the spawn rate's bucket, or says how long
// until there is one. l.mu is held.
func (l *limiter) tokenLocked() (wait time.Duration, ok bool) {
	now := l.now()
	l.tokens = min(float64(l.lim.SpawnBurst), l.tokens+now.Sub(l.last).Seconds()*l.lim.SpawnRate)
	l.last = now
	if l.tokens < 1 {
		return time.Duration((1 - l.tokens) / l.lim.SpawnRate * float64(time.Second)), false
	}
	l.tokens--
	return 0, true
}

// adopt counts a process taken from the warm pool (started already, so
// not against the spawn rate) against user's limit.
func (l *limiter) adopt(user string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.procs[user] >= l.lim.ProcessesPerUser {
		return &errLimit{status: http.StatusTooManyRequests, retry: 5 * time.Second,
			msg: fmt.Sprintf("your sessions run %d server processes on this replica, the limit; end a session first", l.lim.ProcessesPerUser)}
	}
	l.procs[user]++
	return nil
}

// spawnPooled takes a spawn token for the warm pool, or fails when there
// is none now.
func (l *limiter) spawnPooled() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.tokenLocked(); !ok {
		return errors.New("no spawn token")
	}
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
