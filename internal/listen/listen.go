// Package listen is bouncer listen: one Bouncer in front of MCP servers for
// many clients, over streamable HTTP. Each MCP session a client opens is a
// session of its own, judged exactly as bouncer run judges one: a pump
// (internal/proxy's, which cmd/bouncer builds and hands in as a Pump, so
// that nothing here imports the proxy) between the session's HTTP side
// (conn) and the session's own upstream, a child process or a session with
// a remote server, started from the listener's configuration and never
// from anything a client sends.
//
// What is shared between sessions, and what is not, is the point of this
// package (docs/listen.md, "Scopes"):
//
//   - the tool pin is one per wrapped server, for the whole deployment,
//     taken at start (readiness waits for it); a session whose upstream
//     lists anything else is refused;
//   - untrusted output is recorded per session, and checked against the
//     union of the same user's live sessions on this replica;
//   - what vouches (the prompt, trusted output, directories, an
//     elicitation yes) stays per session; approval codes are per session,
//     and only their user can approve them; remembered destinations are
//     the user's own, plus the operator's;
//   - budgets count per session and per user per time window;
//   - an upstream that crashes is started again, held to the pin, and the
//     session keeps its history.
//
// Session ids name the replica that minted them (REPLICA.RANDOM, 192
// random bits), so a load balancer can route on them; they are looked up
// by a keyed hash of the user and the id, so an id of another user and an
// id that never was take the same path to the same 404.
package listen

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bouncer-mcp/bouncer/internal/approval"
	"github.com/bouncer-mcp/bouncer/internal/audit"
	"github.com/bouncer-mcp/bouncer/internal/transport"
)

// Pump judges one session between its client and one upstream: a
// proxy.Proxy. Run returns when either side ends (see proxy.Proxy.Run).
type Pump interface {
	Run(ctx context.Context, down mcp.Connection, up transport.Upstream) error
}

// Judge is what judges one MCP session for its whole life: one history,
// one engine (pins, budgets, approvals), one audit identity. It makes a
// pump for each upstream the session has: the first, and one in place of
// each that crashed.
type Judge interface {
	Pump() Pump
	// Close releases what the session held (its history leaves the
	// user's scope).
	Close()
}

// Pinner is the engine of a session, as the deployment's pin holds it
// (*engine.Engine).
type Pinner interface {
	Pin(tools []json.RawMessage) error
	Differs(tools []json.RawMessage) []string
	Refuse(why string)
}

// Auditor receives a session's audit lines (*audit.Log): one, or several
// decided together as one commit.
type Auditor interface {
	Append(audit.Entry) error
	AppendAll([]audit.Entry) error
}

// SessionSpec is what NewJudge is told about a session.
type SessionSpec struct {
	// Server is the wrapped server's name (its audit and approval name).
	Server string
	// ID is the session id, as the client sends it.
	ID string
	// User is who signed in.
	User string
	// Scope is the user's scope on this replica: the history union,
	// remembered destinations, budgets.
	Scope *Scope
	// Audit writes the session's lines, each naming its user, session and
	// replica.
	Audit Auditor
	// Approvals holds the session's one-time codes.
	Approvals *approval.Store
	// Pinned must be called with every tool list the session's pump
	// pins (proxy.Config.OnPinned), with the session's engine once that
	// list is its pin: it holds
	// the engine to the deployment's pin, and ends the session if its
	// upstream lists anything else.
	Pinned func(e Pinner, tools []json.RawMessage)
	// Log, if not nil, receives the session pump's diagnostics instead of
	// the process's stderr.
	Log io.Writer
}

// Backend is one wrapped server.
type Backend struct {
	Name string
	// Start starts an upstream for one session: a child process, confined
	// as bouncer run confines it, or a new session with a remote server.
	// Only the listener's configuration goes into it.
	Start func(ctx context.Context) (transport.Upstream, error)
	// Process is true for a stdio server: its upstreams are processes,
	// counted against the spawn rate and each user's process limit.
	Process bool
}

// Options configure a Listener.
type Options struct {
	Backends []Backend
	// NewJudge builds the judge of a new session.
	NewJudge func(SessionSpec) (Judge, error)
	// Auth authenticates each request.
	Auth Authenticator
	// Edge is the HTTP edge's checks and limits.
	Edge Edge
	// Limits are the session and process limits.
	Limits Limits
	// Replica names this replica in session ids and audit lines.
	Replica string
	// StateDir is the listener's state directory: per-session approval
	// files, per-user remembered destinations.
	StateDir string
	// Audit is the replica's audit log.
	Audit Auditor
	// AuditWritable reports whether the audit log can still be written
	// (readiness).
	AuditWritable func() error
	// Log receives diagnostics, one line each.
	Log io.Writer
	// Now is the clock (budget windows); nil is time.Now.
	Now func() time.Time
}

// Listener serves the wrapped servers over streamable HTTP.
type Listener struct {
	opts     Options
	backends map[string]*backend
	key      [32]byte // keys the session table (see lookup)
	metrics  *Metrics
	users    *users
	limiter  *limiter
	log      func(format string, a ...any)

	mu       sync.Mutex
	sessions map[[32]byte]*Session
	// opening counts the sessions that passed the replica's cap and are
	// still starting, so that initializes at once cannot all pass it.
	opening int

	draining atomic.Bool
	wg       sync.WaitGroup // sessions' goroutines
	ctx      context.Context
	cancel   context.CancelFunc
}

// backend is a wrapped server, its deployment pin, and its warm pool.
type backend struct {
	Backend
	pin *pin
	// warm holds started, uninitialized processes for the next sessions
	// (Limits.Warm of them; nil without a pool); room holds a token for
	// each place in it that is free.
	warm, room chan transport.Upstream
}

// Session is one MCP session.
type Session struct {
	id, user, server string
	scope            *Scope
	conn             *conn
	judge            Judge
	approvals        *approval.Store
	dir              string                 // the approval store's, made by its first code
	refused          atomic.Pointer[string] // why the pin refused it
	stop             context.CancelFunc
	done             chan struct{}
}

// sessionHeader is streamable HTTP's session header.
const sessionHeader = "Mcp-Session-Id"

// New makes a listener. Call Start before serving, and Close after.
func New(opts Options) (*Listener, error) {
	if len(opts.Backends) == 0 {
		return nil, errors.New("no servers to serve")
	}
	if opts.NewJudge == nil || opts.Auth == nil || opts.Audit == nil {
		return nil, errors.New("listen: NewJudge, Auth and Audit are required")
	}
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Replica == "" {
		opts.Replica = "r0"
	}
	if err := ValidReplica(opts.Replica); err != nil {
		return nil, err
	}
	opts.Edge.defaults()
	opts.Limits.defaults()
	l := &Listener{
		opts:     opts,
		backends: map[string]*backend{},
		metrics:  newMetrics(),
		sessions: map[[32]byte]*Session{},
	}
	l.metrics.draining = l.draining.Load
	l.log = func(format string, a ...any) { fmt.Fprintf(opts.Log, "bouncer: "+format+"\n", a...) }
	l.users = newUsers(opts.StateDir, opts.Limits.BudgetWindow, opts.Now)
	l.metrics.users = l.users.count
	l.limiter = newLimiter(opts.Limits, opts.Now)
	if _, err := rand.Read(l.key[:]); err != nil {
		return nil, err
	}
	for _, b := range opts.Backends {
		if _, dup := l.backends[b.Name]; dup {
			return nil, fmt.Errorf("server %q is named twice", b.Name)
		}
		be := &backend{Backend: b, pin: newPin()}
		if b.Process && opts.Limits.Warm > 0 {
			be.warm = make(chan transport.Upstream, opts.Limits.Warm)
			be.room = make(chan transport.Upstream, opts.Limits.Warm)
			for range opts.Limits.Warm {
				be.room <- nil
			}
		}
		l.backends[b.Name] = be
	}
	l.ctx, l.cancel = context.WithCancel(context.Background())
	return l, nil
}

// ValidReplica checks a replica name: it starts every session id, which
// load balancers match, so it is kept to [a-z0-9-], at most 63 bytes (a
// DNS label, as a StatefulSet's pod names are).
func ValidReplica(r string) error {
	if r == "" || len(r) > 63 || r[0] == '-' {
		return fmt.Errorf("replica name %q: give 1 to 63 of a-z, 0-9 and '-' (not first), as a pod name", r)
	}
	for _, c := range r {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return fmt.Errorf("replica name %q: give 1 to 63 of a-z, 0-9 and '-' (not first), as a pod name", r)
		}
	}
	return nil
}

// Metrics returns the listener's metrics, for the metrics address.
func (l *Listener) Metrics() *Metrics { return l.metrics }

// sessionRandom is how many random bytes a session id holds (192 bits).
const sessionRandom = 24

var idEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// newSessionID mints a session id: the replica, a dot, 192 random bits.
func (l *Listener) newSessionID() string {
	var b [sessionRandom]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("listen: no randomness: " + err.Error())
	}
	return l.opts.Replica + "." + idEncoding.EncodeToString(b[:])
}

// tableKey is where a user's session id is kept in the session table: a
// keyed hash of both. A lookup costs the same whatever the id, and an id
// of another user is simply not there, as an id that never was.
func (l *Listener) tableKey(user, id string) [32]byte {
	m := hmac.New(sha256.New, l.key[:])
	m.Write([]byte(user))
	m.Write([]byte{0})
	m.Write([]byte(id))
	var k [32]byte
	m.Sum(k[:0])
	return k
}

// lookup finds the user's session id on server.
func (l *Listener) lookup(user, server, id string) *Session {
	if len(id) > 256 {
		id = id[:256] // hashed all the same: no id is this long
	}
	k := l.tableKey(user, id)
	l.mu.Lock()
	s := l.sessions[k]
	l.mu.Unlock()
	if s == nil || s.server != server || s.conn.isClosed() {
		return nil
	}
	return s
}

// errLimit is a refusal of a new session by a limit; status is the HTTP
// status it is answered with.
type errLimit struct {
	status int
	msg    string
	retry  time.Duration
}

func (e *errLimit) Error() string { return e.msg }

// open starts a new session of user on server.
func (l *Listener) open(user string, b *backend) (*Session, error) {
	if l.draining.Load() {
		return nil, &errLimit{status: http.StatusServiceUnavailable, msg: "this replica is shutting down; try again (another replica will take the session)", retry: time.Second}
	}
	if !b.pin.taken() {
		return nil, &errLimit{status: http.StatusServiceUnavailable, msg: fmt.Sprintf("server %q is not ready: its tool list is not pinned yet", b.Name), retry: 2 * time.Second}
	}
	lim := l.opts.Limits
	l.mu.Lock()
	full := len(l.sessions)+l.opening >= lim.Sessions
	if !full {
		l.opening++ // start's table entry takes it over; unopened below
	}
	l.mu.Unlock()
	if full {
		return nil, &errLimit{status: http.StatusServiceUnavailable, msg: fmt.Sprintf("this replica has %d sessions, its limit", lim.Sessions), retry: 5 * time.Second}
	}
	unopened := func() {
		l.mu.Lock()
		l.opening--
		l.mu.Unlock()
	}
	scope := l.users.acquire(user, lim.SessionsPerUser) // given back if the session does not start
	if scope == nil {
		unopened()
		return nil, &errLimit{status: http.StatusTooManyRequests, msg: fmt.Sprintf("you have %d sessions open on this replica, the limit; end one (DELETE) or let it expire", lim.SessionsPerUser), retry: 5 * time.Second}
	}
	s, err := l.start(user, scope, b)
	if err != nil {
		unopened()
		l.users.release(scope)
		return nil, err
	}
	return s, nil
}

// start makes the session: its judge, its first upstream, its pump.
func (l *Listener) start(user string, scope *Scope, b *backend) (*Session, error) {
	id := l.newSessionID()
	// The session's directory holds its one-time codes. It is made (and
	// checked) by the approval store when the first code is issued: most
	// sessions never need one, and making it is a journaled write.
	dir := filepath.Join(l.opts.StateDir, "sessions", strings.ReplaceAll(id, ".", "-"))
	s := &Session{id: id, user: user, server: b.Name, scope: scope, conn: newConn(id, l.opts.Edge.WriteTimeout), dir: dir, done: make(chan struct{})}
	s.approvals = approval.Open(filepath.Join(dir, "pending.json"), nil)
	spec := SessionSpec{
		Server: b.Name, ID: id, User: user, Scope: scope,
		Audit:     scopedAudit{l.opts.Audit, user, l.opts.Replica, l.metrics},
		Approvals: s.approvals,
		Pinned: func(e Pinner, tools []json.RawMessage) {
			if why := b.pin.hold(e, tools); why != "" {
				s.refused.Store(&why)
				l.log("session %s of %s on server %q refused: %s", id, user, b.Name, why)
				s.conn.end("the session was refused: " + why)
			}
		},
	}
	up, err := l.startUpstream(user, b)
	if err != nil {
		return nil, err
	}
	judge, err := l.opts.NewJudge(spec)
	if err != nil {
		up.Close()
		return nil, err
	}
	s.judge = judge
	ctx, cancel := context.WithCancel(l.ctx)
	s.stop = cancel
	l.mu.Lock()
	l.sessions[l.tableKey(user, id)] = s
	l.opening-- // open's reservation is this entry now
	n := len(l.sessions)
	l.mu.Unlock()
	l.metrics.sessionsOpen.Store(int64(n))
	l.metrics.sessionsStarted.Add(1)
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		l.run(ctx, s, b, up)
	}()
	return s, nil
}

// startUpstream starts an upstream of b for user, within the limits.
func (l *Listener) startUpstream(user string, b *backend) (transport.Upstream, error) {
	if b.Process {
		if up := b.takeWarm(); up != nil {
			if err := l.limiter.adopt(user); err != nil {
				closeUpstream(up)
				return nil, err
			}
			return &counted{Upstream: up, done: func() { l.limiter.exited(user) }}, nil
		}
		if err := l.limiter.spawn(user); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithTimeout(l.ctx, 30*time.Second)
	defer cancel()
	up, err := b.Start(ctx)
	if err != nil {
		if b.Process {
			l.limiter.exited(user)
		}
		l.metrics.upstreamFailures.Add(1)
		return nil, fmt.Errorf("starting server %q: %w", b.Name, err)
	}
	l.metrics.upstreamStarts.Add(1)
	if b.Process {
		return &counted{Upstream: up, done: func() { l.limiter.exited(user) }}, nil
	}
	return up, nil
}

// takeWarm takes a started process from the pool, if one is there and
// still running.
func (b *backend) takeWarm() transport.Upstream {
	for {
		select {
		case up := <-b.warm:
			b.room <- nil
			if d, ok := up.(interface{ Done() <-chan struct{} }); ok {
				select {
				case <-d.Done():
					closeUpstream(up) // it died waiting
					continue
				default:
				}
			}
			return up
		default:
			return nil
		}
	}
}

// keepWarm keeps b's pool full until the listener closes. Its starts
// count against the spawn rate, as any other.
func (l *Listener) keepWarm(b *backend) {
	wait := time.Second
	for l.ctx.Err() == nil {
		select {
		case <-b.room:
		case <-l.ctx.Done():
			continue
		}
		for l.limiter.spawnPooled() != nil && l.ctx.Err() == nil {
			select {
			case <-time.After(100 * time.Millisecond):
			case <-l.ctx.Done():
			}
		}
		ctx, cancel := context.WithTimeout(l.ctx, 30*time.Second)
		up, err := b.Start(ctx)
		cancel()
		if err != nil {
			b.room <- nil
			l.metrics.upstreamFailures.Add(1)
			l.log("server %q: starting a process for the warm pool: %v", b.Name, err)
			select {
			case <-time.After(wait):
			case <-l.ctx.Done():
			}
			wait = min(2*wait, 30*time.Second)
			continue
		}
		wait = time.Second
		l.metrics.upstreamStarts.Add(1)
		b.warm <- up // there is room: its token was taken
	}
	for {
		select {
		case up := <-b.warm:
			closeUpstream(up)
		default:
			return
		}
	}
}

// counted gives back a user's process slot when its upstream is closed.
type counted struct {
	transport.Upstream
	once sync.Once
	done func()
}

func (c *counted) Close() error {
	err := c.Upstream.Close()
	c.once.Do(c.done)
	return err
}

func (c *counted) InBatch(id jsonrpc.ID) bool { return inBatch(c.Upstream, id) }
func (c *counted) Release(id jsonrpc.ID) bool { return release(c.Upstream, id) }

// batchBook is an upstream's book of the batches of requests it sent the
// client (*transport.Process keeps one): the pump asks it when the
// upstream cancels a request of a batch, which the pump then answers for
// the client. The wrappers here pass it on; an upstream without one
// answers as one that sent no batch.
type batchBook interface {
	InBatch(jsonrpc.ID) bool
	Release(jsonrpc.ID) (inBatch bool)
}

func inBatch(up transport.Upstream, id jsonrpc.ID) bool {
	b, ok := up.(batchBook)
	return ok && b.InBatch(id)
}

func release(up transport.Upstream, id jsonrpc.ID) bool {
	b, ok := up.(batchBook)
	return ok && b.Release(id)
}

// watched is a session's upstream as its pump sees it: when its output
// ends, the session's view is told (view.upstreamEnded), so that what the
// client sends from then on waits for the upstream started in its place.
type watched struct {
	transport.Upstream
	ended func()
}

func (w watched) Read(ctx context.Context) (jsonrpc.Message, error) {
	m, err := w.Upstream.Read(ctx)
	var refused *transport.RefusedError
	if err != nil && !errors.As(err, &refused) {
		w.ended() // a refused message is dropped, and reading goes on
	}
	return m, err
}

func (w watched) InBatch(id jsonrpc.ID) bool { return inBatch(w.Upstream, id) }
func (w watched) Release(id jsonrpc.ID) bool { return release(w.Upstream, id) }

// SetRepinner passes the pump's side to a remote upstream that can resume
// a session the server forgot (transport.Resumer); other upstreams have no
// use for it.
func (w watched) SetRepinner(p transport.Repinner) {
	if r, ok := w.Upstream.(transport.Resumer); ok {
		r.SetRepinner(p)
	}
}

// stopper is an upstream that can be stopped with a grace period
// (*transport.Process).
type stopper interface{ Stop(time.Duration) error }

// closeUpstream stops an upstream: a process gets its grace period.
func closeUpstream(up transport.Upstream) {
	if c, ok := up.(*counted); ok {
		if s, ok := c.Upstream.(stopper); ok {
			_ = s.Stop(2 * time.Second)
		}
		_ = c.Close()
		return
	}
	if s, ok := up.(stopper); ok {
		_ = s.Stop(2 * time.Second)
	}
	_ = up.Close()
}

// run pumps the session until it ends, starting a new upstream in place
// of one that crashed (at most Limits.Respawns times).
func (l *Listener) run(ctx context.Context, s *Session, b *backend, up transport.Upstream) {
	defer l.end(s)
	respawns := 0
	replay := false
	for {
		v, err := s.conn.newView(replay)
		if err != nil {
			closeUpstream(up)
			return
		}
		runErr := s.judge.Pump().Run(ctx, v, watched{up, v.upstreamEnded})
		closeUpstream(up)
		if s.conn.isClosed() || ctx.Err() != nil || runErr == nil {
			return
		}
		// The upstream ended while the client is still there.
		if respawns >= l.opts.Limits.Respawns {
			l.log("session %s: server %q ended again (%v); it was started %d times, the limit, so the session ends", s.id, b.Name, runErr, respawns+1)
			return
		}
		respawns++
		l.log("session %s: server %q ended (%v); starting it again, held to the pin; the session keeps its history", s.id, b.Name, runErr)
		up, err = l.startUpstream(s.user, b)
		if err != nil {
			l.log("session %s: %v; the session ends", s.id, err)
			return
		}
		l.metrics.upstreamRespawns.Add(1)
		replay = true
	}
}

// end forgets a session whose pump stopped.
func (l *Listener) end(s *Session) {
	s.conn.close()
	s.judge.Close()
	l.mu.Lock()
	delete(l.sessions, l.tableKey(s.user, s.id))
	n := len(l.sessions)
	l.mu.Unlock()
	l.users.release(s.scope)
	l.metrics.sessionsOpen.Store(int64(n))
	removeDir(s.dir)
	close(s.done)
}

// Close ends every session at once and stops their upstreams.
func (l *Listener) Close() {
	l.draining.Store(true)
	l.mu.Lock()
	all := make([]*Session, 0, len(l.sessions))
	for _, s := range l.sessions {
		all = append(all, s)
	}
	l.mu.Unlock()
	for _, s := range all {
		s.conn.close()
	}
	l.cancel()
	l.wg.Wait()
}

// Drain stops new sessions (readiness fails from now on) and waits, until
// ctx ends, for the requests in flight to be answered; then every session
// is closed.
func (l *Listener) Drain(ctx context.Context) {
	l.draining.Store(true)
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for l.inFlight() > 0 {
		select {
		case <-ctx.Done():
			l.Close()
			return
		case <-t.C:
		}
	}
	l.Close()
}

// inFlight counts the client requests still awaiting an answer.
func (l *Listener) inFlight() int {
	l.mu.Lock()
	all := make([]*Session, 0, len(l.sessions))
	for _, s := range l.sessions {
		all = append(all, s)
	}
	l.mu.Unlock()
	n := 0
	for _, s := range all {
		s.conn.mu.Lock()
		n += len(s.conn.streams)
		s.conn.mu.Unlock()
	}
	return n
}

// reap ends sessions idle for longer than Limits.Idle, and forgets the
// scopes of users with no session left whose budget window has passed,
// and the spawn shares that are full again.
func (l *Listener) reap() {
	l.users.prune()
	l.limiter.prune()
	cut := l.opts.Now().Add(-l.opts.Limits.Idle)
	l.mu.Lock()
	var idle []*Session
	for _, s := range l.sessions {
		if s.conn.idleSince(cut) {
			idle = append(idle, s)
		}
	}
	l.mu.Unlock()
	for _, s := range idle {
		l.log("session %s of %s ended: idle for %v", s.id, s.user, l.opts.Limits.Idle)
		s.conn.close()
	}
}

// userSessions lists a user's live sessions, oldest id first.
func (l *Listener) userSessions(user string) []*Session {
	l.mu.Lock()
	var out []*Session
	for _, s := range l.sessions {
		if s.user == user {
			out = append(out, s)
		}
	}
	l.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}

// scopedAudit names the user and the replica on every line of a session.
type scopedAudit struct {
	log           Auditor
	user, replica string
	m             *Metrics
}

func (a scopedAudit) Append(e audit.Entry) error {
	e.User, e.Replica = a.user, a.replica
	err := a.log.Append(e)
	if err == nil {
		a.m.verdict(e.Verdict, e.Rule)
	}
	return err
}

func (a scopedAudit) AppendAll(es []audit.Entry) error {
	for i := range es {
		es[i].User, es[i].Replica = a.user, a.replica
	}
	err := a.log.AppendAll(es)
	if err == nil {
		for _, e := range es {
			a.m.verdict(e.Verdict, e.Rule)
		}
	}
	return err
}

// randomText returns n random base32 characters.
func randomText(n int) string {
	b := make([]byte, (n*5+7)/8)
	_, _ = rand.Read(b)
	return idEncoding.EncodeToString(b)[:n]
}

// jsonrpcError answers an HTTP request with a JSON-RPC error and a status.
func jsonrpcError(w http.ResponseWriter, status int, id jsonrpc.ID, code int64, msg string) {
	body, _ := json.Marshal(struct {
		JSONRPC string         `json:"jsonrpc"`
		ID      any            `json:"id"`
		Error   *jsonrpc.Error `json:"error"`
	}{"2.0", id.Raw(), &jsonrpc.Error{Code: code, Message: msg}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
