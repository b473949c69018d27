// Package proxy is the JSON-RPC pump between an MCP client and one upstream
// MCP server. It is the only package that judges MCP traffic: the
// connections it pumps between (stdio, a server process, a remote server
// over HTTP) are internal/transport's, which moves messages and judges
// none.
//
// Every message passes through unchanged in both directions, except what
// Bouncer must see or answer itself:
//
//   - server/discover, and modern stateless requests before initialize, are
//     answered with -32601 so that every session is a legacy, initialize-based
//     one the proxy can follow;
//   - initialize: the client's capabilities are noted (can it elicit?), the
//     requested protocol version is clamped to 2025-11-25, and the negotiated
//     version is taken from the upstream's answer; a client that can elicit,
//     of a server that speaks 2024-11-05 or 2025-03-26, is answered
//     2025-06-18 and the session is bridged (bridge.go);
//   - tools/list: the proxy lists every page itself at startup and pins the
//     result; later lists (the client's, and its own after list_changed) are
//     compared against the pin, and no call is decided while a re-list that
//     a list_changed asked for is under way (pin.go);
//   - tools/call: decided by the engine in the read loop, written to the audit
//     log before anything else happens, and forwarded only when allowed;
//   - the proxy's own requests (its tools/list pages, its elicitation/create)
//     use string IDs "bouncer-N" and their answers are not forwarded;
//   - request IDs pass unchanged or not at all, and each request gets exactly
//     one answer, a batch's as one array: transport.Conn refuses what it
//     can't carry exactly and keeps a ledger of the answers owed, and the
//     pump answers a cancelled request that came in a batch and drops the
//     upstream's answers to IDs it was never sent.
//
// Everything the upstream sends is recorded as untrusted in the session's
// taint store before the client has it: a small message before it is
// written, a large result while it is written, its last byte held back
// until the recording is done (transport.Conn.WriteHeld).
//
// # Locks
//
// The pump has four locks. A lock may be held while taking one below it in
// this list, never one above it:
//
//  1. call.mu: one call's state (held, forwarded, answered, withdrawn) and
//     the request it forwards. It is held while the call is forwarded or
//     answered, so that a cancellation can't slip in between; with it held
//     the pump takes Proxy.mu (goneText), routes.mu, and writes to either
//     side, which takes the transport's locks (and, upstream over HTTP,
//     waits until the request is on the wire). A call's id is read without
//     it: it never changes.
//  2. Proxy.mu: the session's stage, what it learnt on the way (protocol
//     versions, elicitation) and the tool list's bookkeeping (pin.go). With
//     it held the pump takes routes.mu (to hold a queued call, to count the
//     answers owed) and nothing else: it never writes to a side, asks the
//     engine or writes an audit line holding it.
//  3. routes.mu: where each message in flight is owed (lifecycle.go). With
//     it held only the client connection's answer book is asked (InBatch,
//     which takes transport.Conn's owedMu); an answer to one of the pump's
//     own requests is handed to its waiter once it is released.
//  4. The transport's locks (see internal/transport), taken by a write to
//     either side and by the answer book.
//
// Proxy.recording stands apart. Its write side is an empty barrier each
// decision passes (settled); its read side is held while a result is
// recorded, by the session's stores, which take none of the pump's locks.
// Both sides are taken holding none of the locks above, and none of them is
// taken under either: a decision waits for a recording, never the reverse.
//
// The transport calls the pump back (transport.Repinner, when a remote
// server forgot the session) holding none of its own locks, and the pump's
// side of that takes Proxy.mu, routes.mu and the client connection's
// locks, never a call.mu: a write upstream made under call.mu can't wait on
// it.
package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bouncer-mcp/bouncer/internal/approval"
	"github.com/bouncer-mcp/bouncer/internal/audit"
	"github.com/bouncer-mcp/bouncer/internal/engine"
	"github.com/bouncer-mcp/bouncer/internal/taint"
	"github.com/bouncer-mcp/bouncer/internal/transport"
)

// Defaults for Config's timeouts.
const (
	// DefaultElicitTimeout is how long a question to the human may stay
	// unanswered before the call is denied.
	DefaultElicitTimeout = 5 * time.Minute
	// DefaultPinTimeout bounds each page of the startup tools/list. A server
	// that does not answer in time pins nothing, and every call is denied.
	DefaultPinTimeout = 60 * time.Second
	// DefaultDrainTimeout is how long, after the client closed its side, the
	// proxy keeps relaying what the upstream still says before giving up.
	DefaultDrainTimeout = 3 * time.Second
)

// MaxProtocolVersion is the newest protocol version the proxy lets a session
// negotiate: the last initialize-based one. Newer (stateless) versions move
// capabilities into every request, which the pump does not follow.
const MaxProtocolVersion = "2025-11-25"

// Auditor receives the audit lines. *audit.Log implements it; an error means
// the line was not written and the call it describes must be denied.
type Auditor interface {
	Append(audit.Entry) error
	// AppendAll writes several lines, in order, as one commit; an error
	// denies every call they describe.
	AppendAll([]audit.Entry) error
}

// Recorder records a tool's result (a CallToolResult's JSON). It keeps
// none of doc's bytes once RecordJSON returns: their frame may be read into
// again (giver).
type Recorder interface {
	RecordJSON(doc []byte)
}

// Tape is told, in the order the session lives them, what its decisions
// rest on (bouncer run --record, internal/record): each output recorded
// (before it is), each tools/call the engine judges (before it does), and
// each destination a human approved for the session.
type Tape interface {
	// Output is a document the upstream sent, recorded as its output;
	// tool names the tool whose call it answers, if it answers one. It
	// keeps none of doc's bytes once it returns (see Recorder).
	Output(doc json.RawMessage, tool string)
	// Call is a tools/call's params, as the client sent them.
	Call(params json.RawMessage)
	// Approve is a human's yes to dest in param of tool's calls.
	Approve(tool, param, dest string)
}

// Config is what the pump needs from the outside world.
type Config struct {
	// Server is the name written in audit lines and approval codes.
	Server string
	// Engine decides calls. Its pins are set by the pump.
	Engine *engine.Engine
	// Store is the session's taint store; everything the upstream sends is
	// recorded in it, except the results of tools the policy trusts.
	Store *taint.Store
	// Trusted records the results of tools whose output the policy trusts
	// (Engine.TrustedOutput): their destinations vouch (session.Vouches).
	// Nil records them in Store like everything else.
	Trusted Recorder
	// Directory records, besides Store, the results of tools the policy
	// marks as a directory (Engine.Directory) under the kind of entry
	// they list. Nil records nothing more.
	Directory func(kind string) Recorder
	// Anchors records, besides Store, the results of tools whose records
	// the policy opts in to anchoring (Engine.AnchorRecords); text says
	// whether text blocks that are wholly JSON hold records too. Nil
	// records nothing more.
	Anchors func(text bool) Recorder
	// Audit receives one line per verdict. Required.
	Audit Auditor
	// Approvals holds one-time codes for clients that cannot elicit. Nil
	// means no codes can be issued: such asks are denied.
	Approvals *approval.Store
	// Remember, if set, keeps a destination a human vouched for through the
	// client's question with "remember" ticked: allowed through this server
	// from now on (session.Remembered). Nil offers no such choice.
	Remember func(dest string) error
	// Observe decides every call exactly as enforcing would and audits it
	// with enforced: false, then forwards it whatever the verdict: nobody
	// is asked and no approval code is issued (bouncer run --observe).
	Observe bool
	// Policy is the effective policy's digest, written on every audit line.
	Policy string
	// OnPinned, if set, receives the tool list once it is pinned (run
	// keeps it for bouncer report and warns about policy entries that name
	// no tool of the server). It runs before any call is decided.
	OnPinned func(tools []json.RawMessage)
	// Session identifies this proxy session in audit lines.
	Session string
	// Tape, if set, gets a copy of what the decisions rest on.
	Tape Tape
	// ElicitTimeout, PinTimeout, DrainTimeout default to the constants above.
	ElicitTimeout time.Duration
	PinTimeout    time.Duration
	DrainTimeout  time.Duration
	// Log receives diagnostics, one line each, prefixed "bouncer: ". Nil
	// discards them.
	Log io.Writer
	// Now is the clock for audit timestamps; nil is time.Now.
	Now func() time.Time
}

// ErrUpstreamExited is returned by Run when the upstream closed its output
// (it exited or crashed) while the client was still connected.
var ErrUpstreamExited = errors.New("the upstream server closed its output")

// Proxy is one session between a client and an upstream server.
type Proxy struct {
	cfg    Config
	down   mcp.Connection
	up     transport.Upstream
	ctx    context.Context // cancelled when the session ends
	nextID atomic.Int64
	wg     sync.WaitGroup

	// recording is read-held while a large result is recorded as untrusted
	// in parallel with its write to the client; every decision takes it
	// for writing first, so no call is decided on a half-recorded history.
	// holds says the client's side can hold a frame's last byte back
	// until its recording is done (holder), which that parallel recording
	// needs.
	recording sync.RWMutex
	holds     bool
	// gives is the server's side, when the frames of its large answers
	// may be handed back (giver); nil otherwise.
	gives giver

	// routes says where each message in flight is owed (lifecycle.go).
	routes *routes

	// The client's read loop's own: the calls it decided and has not
	// committed (calls.go), whether it commits them only when it has read
	// all the client sent (batching: the client's side tells it, see
	// transport.Conn.OnIdle), and whether it holds the upstream's side
	// corked meanwhile.
	staged   staged
	batching bool
	upCorked bool
	// The upstream's read loop's own: whether it holds the client's side
	// corked while it has the upstream's messages in hand.
	downCorked bool

	mu sync.Mutex
	// stage is where the session is in its life; advanceLocked moves it
	// (lifecycle.go).
	stage stage
	// What the session learnt on the way, which stays true whatever the
	// stage.
	initID       *jsonrpc.ID // the client's latest initialize request
	initialized  bool        // the client sent notifications/initialized
	requested    string      // protocol version the client asked for, as clamped
	negotiated   string      // protocol version from the upstream's answer
	told         string      // protocol version the client was answered: negotiated, or ElicitVersion when bridged
	clientElicit bool        // the client can answer form elicitation
	gone         string      // why the upstream is gone, once it is
	// sampling holds, in a bridged session, the server's sampling requests
	// the client has yet to answer (bridge.go).
	sampling map[jsonrpc.ID]bool

	// The tool list; see pin.go.
	list listState
}

// listState is the tool list's bookkeeping: which listings were asked for
// and done, and the calls waiting for them. Guarded by Proxy.mu.
type listState struct {
	running     bool              // the lister goroutine runs
	want        uint64            // listings asked for: the pin, then one per list_changed
	tried       uint64            // want when the last listing started
	have        uint64            // want when the last successful listing started
	err         error             // why the last re-list failed
	done        chan struct{}     // closed (and replaced) whenever a listing ends
	queue       []*call           // tools/call waiting for the tool list, in order
	clientLists []json.RawMessage // tools/list results the client got before the pin
}

// New returns a proxy for one session.
func New(cfg Config) *Proxy {
	if cfg.ElicitTimeout <= 0 {
		cfg.ElicitTimeout = DefaultElicitTimeout
	}
	if cfg.PinTimeout <= 0 {
		cfg.PinTimeout = DefaultPinTimeout
	}
	if cfg.DrainTimeout <= 0 {
		cfg.DrainTimeout = DefaultDrainTimeout
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Proxy{
		cfg:    cfg,
		routes: newRoutes(),
		list: listState{
			want: 1, // the pin
			done: make(chan struct{}),
		},
	}
}

func (p *Proxy) logf(format string, a ...any) {
	fmt.Fprintf(p.cfg.Log, "bouncer: "+format+"\n", a...)
}

// Run pumps messages between down (the client) and up (the upstream server)
// until one side ends. It returns nil when the client closed its side
// (after giving the upstream DrainTimeout to finish answering),
// ErrUpstreamExited (wrapped, with the upstream's *transport.EndedError
// when it gave one) when the upstream ended first, the context's error when
// ctx was cancelled, transport.ErrUpstreamOutput (wrapped) when the
// upstream sent something that is not JSON-RPC, or another error when the
// client did. Run closes down but not up: the caller owns the upstream and
// stops it.
func (p *Proxy) Run(ctx context.Context, down mcp.Connection, up transport.Upstream) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	p.ctx, p.down, p.up = ctx, down, up
	_, p.holds = down.(holder)
	if g, ok := up.(giver); ok && p.holds {
		p.gives = g
	}
	if r, ok := up.(transport.Resumer); ok {
		r.SetRepinner(repinner{p})
	}
	// Each read loop learns when the side it reads has nothing more in
	// hand: the client's commits the calls it decided and lets the
	// upstream's side write what piled up, the upstream's lets the
	// client's side write.
	if d, ok := down.(idler); ok {
		d.OnIdle(p.clientIdle)
		p.batching = true
	}
	if u, ok := up.(idler); ok {
		u.OnIdle(p.upstreamIdle)
	}

	upErr := make(chan error, 1)
	go func() { upErr <- p.upLoop(ctx) }()
	downErr := make(chan error, 1)
	go func() { downErr <- p.downLoop(ctx) }()

	var result error
	select {
	case err := <-downErr:
		if err == nil || errors.Is(err, io.EOF) {
			// The client is done. Let queued work finish, then tell the
			// upstream and relay what it still says.
			var ended *transport.EndedError
			switch err := p.drain(ctx, upErr); {
			case errors.As(err, &ended):
				// The upstream went while the client's last requests were
				// answered: they get the reason, and so does the caller.
				result = fmt.Errorf("%w: %w", ErrUpstreamExited, err)
				p.failPending("bouncer: " + ended.Why)
			case err != nil && !errors.Is(err, io.EOF) && !isReadError(err):
				result = fmt.Errorf("%w: %w", transport.ErrUpstreamOutput, err)
				p.failPending("bouncer: the upstream server wrote output that is not MCP, so the session was closed (bouncer's stderr says more)")
			default:
				result = nil
			}
		} else {
			result = fmt.Errorf("reading from the client: %w", err)
		}
	case err := <-upErr:
		var ended *transport.EndedError
		switch {
		case errors.As(err, &ended):
			result = fmt.Errorf("%w: %w", ErrUpstreamExited, err)
			p.failPending("bouncer: " + ended.Why)
		case err == nil || errors.Is(err, io.EOF):
			result = ErrUpstreamExited
			p.failPending("bouncer: the upstream server exited before answering")
		case isReadError(err):
			result = fmt.Errorf("%w: %w", ErrUpstreamExited, err)
			p.failPending("bouncer: the upstream server exited before answering")
		default:
			result = fmt.Errorf("%w: %w", transport.ErrUpstreamOutput, err)
			p.failPending("bouncer: the upstream server wrote output that is not MCP, so the session was closed (bouncer's stderr says more)")
		}
	case <-ctx.Done():
		result = ctx.Err()
	}
	cancel()
	p.mu.Lock()
	p.advanceLocked(stageClosed)
	p.mu.Unlock()
	// The calls still held are now denied (the session ended before a
	// human answered, or before the tool list came). Their answers go out
	// before the client's side is closed: a batch holding one would
	// otherwise never be sent. A client that stopped reading holds this up
	// for DrainTimeout at most.
	idle := make(chan struct{})
	go func() { p.wg.Wait(); close(idle) }()
	select {
	case <-idle:
	case <-time.After(p.cfg.DrainTimeout):
	}
	_ = down.Close()
	<-idle
	return result
}

// drain runs after the client closed its side: queued calls are decided,
// then the upstream gets EOF and the proxy keeps relaying its output until it
// stops or DrainTimeout passes. It returns how the upstream's output ended,
// if it did.
func (p *Proxy) drain(ctx context.Context, upErr <-chan error) error {
	deadline := time.NewTimer(p.cfg.DrainTimeout)
	defer deadline.Stop()
	// Wait for the pin, the calls queued behind it and the answers owed
	// (bounded by the drain deadline): they were asked before the client
	// left.
	for {
		p.mu.Lock()
		// Some servers (the go-sdk's among them) drop answers still owed
		// when their stdin closes, so wait for those too.
		waiting := p.list.running || len(p.list.queue) > 0 || p.routes.owed() > 0
		p.mu.Unlock()
		if !waiting {
			break
		}
		select {
		case <-time.After(5 * time.Millisecond):
		case <-deadline.C:
			return nil
		case err := <-upErr:
			return err
		case <-ctx.Done():
			return nil
		}
	}
	p.mu.Lock()
	p.advanceLocked(stageDraining)
	p.mu.Unlock()
	_ = p.up.CloseWrite()
	select {
	case err := <-upErr:
		return err
	case <-deadline.C:
	case <-ctx.Done():
	}
	return nil
}

// isReadError reports whether err came from reading the upstream's pipe
// (it broke or closed), as opposed to what was read not parsing.
func isReadError(err error) bool {
	var pe *fs.PathError
	return errors.As(err, &pe) || errors.Is(err, io.ErrClosedPipe) || errors.Is(err, os.ErrClosed)
}

// failPending answers every client request still waiting for the upstream
// with a JSON-RPC error, so the client is not left hanging after a crash.
func (p *Proxy) failPending(msg string) {
	p.mu.Lock()
	p.advanceLocked(stageClosed)
	p.gone = strings.TrimPrefix(msg, "bouncer: ")
	p.mu.Unlock()
	ids := p.routes.close()
	for _, id := range ids {
		p.writeDown(&jsonrpc.Response{ID: id, Error: &jsonrpc.Error{
			Code:    jsonrpc.CodeInternalError,
			Message: msg,
		}})
	}
}

// goneText says why nothing can be sent upstream any more.
func (p *Proxy) goneText() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.gone != "" {
		return p.gone
	}
	return "the upstream server exited"
}

// writeDown sends a message to the client. A failed write means the client
// is gone; the read side will see that too, so the error is only logged.
func (p *Proxy) writeDown(m jsonrpc.Message) {
	if err := p.down.Write(context.Background(), m); err != nil {
		p.logf("writing to the client: %v", err)
	}
}

// writeDownAbout sends one of the pump's own messages to the client, about
// the client's request id (its question about a call it holds): a client
// side with a stream per request sends it on that request's stream
// (transport.WithRelated), where a client that opened no other stream
// still reads it.
func (p *Proxy) writeDownAbout(id jsonrpc.ID, m jsonrpc.Message) {
	if err := p.down.Write(transport.WithRelated(context.Background(), id), m); err != nil {
		p.logf("writing to the client: %v", err)
	}
}

// writeDownHeld is writeDown, but the last byte of m's frame leaves only
// once ready is closed (transport.Conn.WriteHeld).
func (p *Proxy) writeDownHeld(m jsonrpc.Message, ready <-chan struct{}) {
	if err := p.down.(holder).WriteHeld(context.Background(), m, ready); err != nil {
		p.logf("writing to the client: %v", err)
	}
}

// writeUp sends a message to the upstream.
func (p *Proxy) writeUp(m jsonrpc.Message) error {
	if err := p.up.Write(context.Background(), m); err != nil {
		return fmt.Errorf("writing to the upstream: %w", err)
	}
	return nil
}

// newID returns a fresh ID in the proxy's own range.
func (p *Proxy) newID() jsonrpc.ID {
	id, _ := jsonrpc.MakeID(transport.IDPrefix + strconv.FormatInt(p.nextID.Add(1), 10))
	return id
}

// ours reports whether id is in the proxy's own range.
func ours(id jsonrpc.ID) bool {
	s, ok := id.Raw().(string)
	return ok && strings.HasPrefix(s, transport.IDPrefix)
}

// idler is implemented by the stdio connections (*transport.Conn, and
// *transport.Process for a server's): OnIdle's function runs in the
// reading goroutine when what the peer sent is used up.
type idler interface{ OnIdle(func()) }

// holder is implemented by the client's stdio connection: a message may
// be written but for its last byte until it is recorded. Without it, a
// large result is recorded before it is written, as a small one is.
type holder interface {
	WriteHeld(ctx context.Context, m jsonrpc.Message, ready <-chan struct{}) error
}

// giver is implemented by a server's stdio connection (transport.Process):
// the frame of a large answer it read may be handed back, once nothing
// reads its bytes, to be read into again. An answer is given back only
// when the client's side is a stdio connection too (holder), whose writes
// copy what they are given, and only once it is recorded and written; the
// recorders (Store, Recorder, Tape) keep none of a document's bytes
// either.
type giver interface{ GiveBack(m jsonrpc.Message) }

// corker is implemented by the stdio connections: what is written between
// Cork and Uncork leaves in one write.
type corker interface {
	Cork()
	Uncork()
}

// clientIdle runs in the client's read loop when it has handled all the
// client sent: the calls decided meanwhile are committed, and what they
// and the other messages sent upstream leaves in one write.
func (p *Proxy) clientIdle() {
	p.commit()
	if p.upCorked {
		p.upCorked = false
		p.up.(corker).Uncork()
	}
}

// upstreamIdle runs in the upstream's read loop when it has handled all
// the upstream sent: what was written to the client meanwhile leaves.
func (p *Proxy) upstreamIdle() {
	if p.downCorked {
		p.downCorked = false
		p.down.(corker).Uncork()
	}
}

// ---- client → upstream ----

func (p *Proxy) downLoop(ctx context.Context) error {
	defer p.clientIdle()
	_, cork := p.up.(corker)
	cork = cork && p.batching
	for {
		msg, err := p.down.Read(ctx)
		if err != nil {
			var refused *transport.RefusedError
			if errors.As(err, &refused) {
				p.logf("from the client: %v", err)
				continue
			}
			return err
		}
		if cork && !p.upCorked {
			p.upCorked = true
			p.up.(corker).Cork()
		}
		switch m := msg.(type) {
		case *jsonrpc.Response:
			p.commit()
			p.fromClientResponse(m)
		case *jsonrpc.Request:
			if m.Method != "tools/call" {
				p.commit()
			}
			if err := p.fromClientRequest(m); err != nil {
				return err
			}
		}
	}
}

// fromClientResponse routes the client's answer: to the proxy's own waiter
// if it answers one of our requests, else to the upstream that asked.
func (p *Proxy) fromClientResponse(m *jsonrpc.Response) {
	if ours(m.ID) {
		// An answer to a question we withdrew (or never asked) goes nowhere.
		p.routes.deliverDown(m)
		return
	}
	m = p.bridgeAnswer(m)
	if err := p.writeUp(m); err != nil {
		p.logf("%v", err)
	}
}

func (p *Proxy) fromClientRequest(m *jsonrpc.Request) error {
	if m.IsCall() {
		if why := p.unusableID(m.ID); why != "" {
			p.writeDown(&jsonrpc.Response{ID: m.ID, Error: &jsonrpc.Error{
				Code: jsonrpc.CodeInvalidRequest, Message: "bouncer: " + why,
			}})
			return nil
		}
	}
	switch m.Method {
	case "server/discover":
		p.methodNotFound(m)
		return nil
	case "initialize":
		return p.clientInitialize(m)
	case "notifications/initialized":
		if err := p.writeUp(m); err != nil {
			p.logf("%v", err)
			return nil
		}
		p.mu.Lock()
		p.initialized = true
		start := p.listerDueLocked()
		p.mu.Unlock()
		if start {
			p.startLister()
		}
		return nil
	case "tools/call":
		return p.clientCall(m)
	case "notifications/cancelled":
		if p.cancelHeld(m) {
			return nil
		}
		if why := cancelsNothing(m.Params); why != "" {
			p.logf("dropped the client's notifications/cancelled: %s", why)
			return nil
		}
		p.cancelForwarded(m)
	}
	if m.IsCall() {
		p.mu.Lock()
		preInit := p.stage == stageNew
		p.mu.Unlock()
		if preInit && hasModernMeta(m.Params) {
			p.methodNotFound(m)
			return nil
		}
		if !p.routes.send(m.ID, m.Method, "") {
			p.writeDown(&jsonrpc.Response{ID: m.ID, Error: &jsonrpc.Error{
				Code: jsonrpc.CodeInternalError, Message: "bouncer: " + p.goneText(),
			}})
			return nil
		}
	}
	p.relay(m)
	return nil
}

// relay forwards a client request upstream. If that fails (the upstream is
// gone; its read side will end the session), a call is answered with an
// error at once instead of waiting for an answer that can't come.
func (p *Proxy) relay(m *jsonrpc.Request) {
	err := p.writeUp(m)
	if err == nil {
		return
	}
	p.logf("%v", err)
	if !m.IsCall() {
		return
	}
	if p.routes.unsend(m.ID) {
		p.writeDown(&jsonrpc.Response{ID: m.ID, Error: &jsonrpc.Error{
			Code: jsonrpc.CodeInternalError, Message: "bouncer: " + err.Error(),
		}})
	}
}

// methodNotFound answers a request with -32601 (notifications get nothing).
func (p *Proxy) methodNotFound(m *jsonrpc.Request) {
	if !m.IsCall() {
		return
	}
	p.writeDown(&jsonrpc.Response{ID: m.ID, Error: &jsonrpc.Error{
		Code:    jsonrpc.CodeMethodNotFound,
		Message: "Method not found: " + m.Method,
	}})
}

// hasModernMeta reports whether params carry the stateless-era
// _meta["io.modelcontextprotocol/protocolVersion"].
func hasModernMeta(params json.RawMessage) bool {
	var v struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if json.Unmarshal(params, &v) != nil {
		return false
	}
	_, ok := v.Meta["io.modelcontextprotocol/protocolVersion"]
	return ok
}

// clientInitialize notes the client's capabilities and clamps the requested
// version before forwarding.
func (p *Proxy) clientInitialize(m *jsonrpc.Request) error {
	var params struct {
		ProtocolVersion string `json:"protocolVersion"`
		Capabilities    struct {
			Elicitation *struct {
				Form json.RawMessage `json:"form"`
				URL  json.RawMessage `json:"url"`
			} `json:"elicitation"`
		} `json:"capabilities"`
	}
	_ = json.Unmarshal(m.Params, &params)
	form := false
	if e := params.Capabilities.Elicitation; e != nil {
		// {} means form (2025-06-18 style); URL-only clients can't show our form.
		form = len(e.Form) > 0 && string(e.Form) != "null" || len(e.URL) == 0 || string(e.URL) == "null"
	}
	requested := params.ProtocolVersion
	if params.ProtocolVersion > MaxProtocolVersion {
		if clamped, err := transport.SetField(m.Params, "protocolVersion", MaxProtocolVersion); err == nil {
			m = &jsonrpc.Request{ID: m.ID, Method: m.Method, Params: clamped}
			requested = MaxProtocolVersion
		}
	}
	p.mu.Lock()
	p.clientElicit = form
	p.requested = requested
	if m.IsCall() {
		id := m.ID
		p.initID = &id
		p.advanceLocked(stageInitializing)
	}
	p.mu.Unlock()
	if m.IsCall() && !p.routes.send(m.ID, m.Method, "") {
		p.writeDown(&jsonrpc.Response{ID: m.ID, Error: &jsonrpc.Error{
			Code: jsonrpc.CodeInternalError, Message: "bouncer: " + p.goneText(),
		}})
		return nil
	}
	p.relay(m)
	return nil
}

// unusableID says why a client request can't have the id it has, or "".
// The proxy's own range is refused, so an answer can never be mistaken for
// one meant for the proxy. So is the id of a request the proxy answered
// itself while the upstream still has it (see cancelForwarded): the
// upstream's late answer would be taken for the new request's.
func (p *Proxy) unusableID(id jsonrpc.ID) string {
	if ours(id) {
		return fmt.Sprintf("request IDs starting with %q are reserved for the proxy", transport.IDPrefix)
	}
	if p.routes.dropping(id) {
		return fmt.Sprintf("request id %s was cancelled but the upstream has not answered it yet; use another id", transport.IDText(id))
	}
	return ""
}

// cancelledID is the request a notifications/cancelled names, read as
// exactly as the request's own id was (see transport.ParseID).
func cancelledID(params json.RawMessage) (jsonrpc.ID, bool) {
	var v struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	if json.Unmarshal(params, &v) != nil {
		return jsonrpc.ID{}, false
	}
	id, err := transport.ParseID(v.RequestID)
	return id, err == nil && id.IsValid()
}

// cancelsNothing says why a notifications/cancelled can name no request
// that was passed on, or "": its requestId is one no request may have (see
// transport.ParseID). Such a notification is dropped, not relayed: a peer reading ids
// as the go-sdk does would take requestId 1.5 for 1, and cancel that.
func cancelsNothing(params json.RawMessage) string {
	var v struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	if json.Unmarshal(params, &v) != nil || len(v.RequestID) == 0 {
		return ""
	}
	if _, err := transport.ParseID(v.RequestID); err != nil {
		return err.Error()
	}
	return ""
}

// codeCancelled is the error code of the answer a cancelled request gets
// when it must get one (see withdrawn); JSON-RPC and MCP define none, and
// this is the one LSP uses.
const codeCancelled = -32800

// cancelHeld handles the client's notifications/cancelled for a call the
// proxy holds (asking a human, or waiting for the tool list): the call is
// withdrawn here and the upstream never hears of it. It reports whether the
// notification was consumed.
func (p *Proxy) cancelHeld(m *jsonrpc.Request) bool {
	id, ok := cancelledID(m.Params)
	if !ok {
		return false
	}
	c, ok := p.routes.holding(id)
	if !ok {
		return false
	}
	consumed, withdrawn := c.withdraw()
	if withdrawn {
		p.unhold(c)
		p.withdrawn(id)
	}
	return consumed
}

// withdrawn is called for a client request that will get no answer,
// because the client cancelled it. If it came in a batch it is answered
// anyway, with an error: its batch goes back as one array once every
// request in it is answered, and without this the answers to the others
// would never reach the client. (MCP has the client ignore an answer to a
// request it cancelled.) Otherwise its id is free again.
func (p *Proxy) withdrawn(id jsonrpc.ID) {
	book, ok := p.down.(answerBook)
	if !ok || !book.Release(id) {
		return
	}
	p.writeDown(&jsonrpc.Response{ID: id, Error: &jsonrpc.Error{
		Code: codeCancelled, Message: "bouncer: the request was cancelled",
	}})
}

// cancelForwarded handles the client's notifications/cancelled for a
// request already sent upstream, before it is relayed there. A request
// that came alone is left to the upstream, which may answer it or not, as
// MCP allows. One that came in a batch is answered now (see withdrawn),
// since an upstream that does not answer cancelled requests would hold up
// the whole batch; its answer from the upstream, if one comes, is dropped.
func (p *Proxy) cancelForwarded(m *jsonrpc.Request) {
	id, ok := cancelledID(m.Params)
	if !ok {
		return
	}
	book, ok := p.down.(answerBook)
	if !ok {
		return
	}
	if p.routes.cancel(id, book.InBatch) {
		p.writeDown(&jsonrpc.Response{ID: id, Error: &jsonrpc.Error{
			Code: codeCancelled, Message: "bouncer: the request was cancelled",
		}})
	}
}

// answerBook is implemented by *transport.Conn (and *transport.Process,
// for the upstream's side): the requests read from a side that are still
// owed an answer. The pump needs it to answer each request in a batch
// exactly once.
type answerBook interface {
	InBatch(jsonrpc.ID) bool
	Release(jsonrpc.ID) (inBatch bool)
}

// unhold forgets a held call, unless its id is held by a newer call.
func (p *Proxy) unhold(c *call) { p.routes.unhold(c) }

// ---- upstream → client ----

func (p *Proxy) upLoop(ctx context.Context) error {
	defer p.upstreamIdle()
	_, idles := p.up.(idler)
	_, cork := p.down.(corker)
	cork = cork && idles
	for {
		msg, err := p.up.Read(ctx)
		if err != nil {
			var refused *transport.RefusedError
			if errors.As(err, &refused) {
				p.logf("from the upstream: %v", err)
				continue
			}
			return err
		}
		if cork && !p.downCorked {
			p.downCorked = true
			p.down.(corker).Cork()
		}
		switch m := msg.(type) {
		case *jsonrpc.Response:
			p.fromUpstreamResponse(m)
		case *jsonrpc.Request:
			p.fromUpstreamRequest(m)
		}
	}
}

// record marks what the upstream said as untrusted, before anyone can act
// on it (tool: the tool whose call it answers, if any). The tape gets it
// first: a call decided meanwhile then replays after it, with its taint.
func (p *Proxy) record(doc json.RawMessage, tool string) {
	if f := slowRecord.Load(); f != nil {
		(*f)()
	}
	if len(doc) > 0 && p.cfg.Tape != nil {
		p.cfg.Tape.Output(doc, tool)
	}
	if len(doc) > 0 && p.cfg.Store != nil {
		p.cfg.Store.RecordJSON(doc)
	}
}

func (p *Proxy) recordResponse(m *jsonrpc.Response, tool string) {
	p.record(m.Result, tool)
	if m.Error != nil {
		if b, err := json.Marshal(m.Error); err == nil {
			p.record(b, tool)
		} else {
			p.cfg.Store.Record(m.Error.Error())
		}
	}
}

// parallelRecord is the result size from which recording runs alongside
// the write to the client instead of before it (up to the frame's last
// byte, which waits for it). Below it, recording first costs less than
// the goroutine, the wake-ups and the second write(2) that holding the
// last byte takes: at 64 KiB, recording first used 11% less CPU on a
// result the store had seen and carried 6% more new ones
// (docs/performance.md, fifth pass).
const parallelRecord = 256 << 10

// slowRecord, set only by tests, delays every recording so that a test
// can show no decision overtakes it. It is atomic because a proxy of an
// earlier test may still be reading it when the next test sets it.
var slowRecord atomic.Pointer[func()]

// recordHeld records a result whose recording holds p.recording's read
// side, then closes done and releases the lock.
func (p *Proxy) recordHeld(doc json.RawMessage, tool string, done chan<- struct{}) {
	defer p.recording.RUnlock()
	defer close(done)
	p.record(doc, tool)
}

// settled waits until every result the client may have seen is recorded.
func (p *Proxy) settled() {
	p.recording.Lock()
	//lint:ignore SA2001 an empty critical section is the point: a barrier behind every recording in flight
	p.recording.Unlock()
}

func (p *Proxy) fromUpstreamResponse(m *jsonrpc.Response) {
	var a answer
	var ready <-chan struct{} // closed once m is recorded, when that runs alongside its write
	if !ours(m.ID) {
		a = p.routes.answered(m.ID)
	}
	if a.tool != "" && m.Error == nil && !ours(m.ID) && p.cfg.Directory != nil {
		if kind := p.cfg.Engine.Directory(a.tool); kind != "" {
			// A directory's whole entries vouch for arguments of
			// their kind; the output is recorded as untrusted too,
			// below.
			p.recording.RLock()
			p.cfg.Directory(kind).RecordJSON(m.Result)
			p.recording.RUnlock()
		}
	}
	if on, text := p.cfg.Engine.AnchorRecords(a.tool); a.tool != "" && m.Error == nil && !ours(m.ID) && p.cfg.Anchors != nil && on {
		p.recording.RLock()
		p.cfg.Anchors(text).RecordJSON(m.Result)
		p.recording.RUnlock()
	}
	if a.tool != "" && p.cfg.Engine.TrustedOutput(a.tool) && m.Error == nil && p.cfg.Trusted != nil && !ours(m.ID) {
		// The user's own data (trusted_output): it vouches, and is not
		// recorded as untrusted.
		p.recording.RLock()
		if p.cfg.Tape != nil {
			p.cfg.Tape.Output(m.Result, a.tool)
		}
		p.cfg.Trusted.RecordJSON(m.Result)
		p.recording.RUnlock()
	} else if len(m.Result) >= parallelRecord && m.Error == nil && !ours(m.ID) && p.holds {
		// Recorded while it is written to the client: the client reads
		// all of it but the last byte meanwhile, and that byte waits
		// until the result is in the store and in the session's file,
		// where the client's other proxies read it (ready). The read
		// lock, taken before the client can see any of it, keeps this
		// proxy's decisions behind the recording too (settled), so the
		// tape, which has the result first, replays as the call was
		// decided.
		done := make(chan struct{})
		p.recording.RLock()
		go p.recordHeld(m.Result, a.tool, done)
		ready = done
	} else {
		p.recordResponse(m, a.tool)
	}
	if ours(m.ID) {
		p.routes.deliverUp(m)
		return
	}
	method, known, dropped := a.method, a.known, a.dropped
	p.mu.Lock()
	isInit := method == "initialize" && p.initID != nil && *p.initID == m.ID
	p.mu.Unlock()
	if !known {
		// Only a request sent upstream gets the upstream's answer: an
		// answer to anything else (a call the proxy holds or answered
		// itself, an id nobody used, a second answer) would reach the
		// client as one it never asked for, or answer a request twice.
		if !dropped {
			p.logf("the upstream answered id %s, which no request sent to it is waiting for; dropped", transport.IDText(m.ID))
		}
		return
	}
	switch {
	case isInit:
		m = p.upstreamInitialized(m)
	case method == "tools/list" && m.Error == nil:
		p.observeList(m.Result, "the client's tools/list")
	}
	if ready != nil {
		// Recorded alongside its write: its frame is left to the
		// collector.
		p.writeDownHeld(m, ready)
		return
	}
	p.writeDown(m)
	if p.gives != nil && !isInit && method != "tools/list" {
		// Recorded, and copied into the client's side: nothing reads
		// its frame any more (the initialize and tools/list results
		// are read again: the version, the pins).
		p.gives.GiveBack(m)
	}
}

// upstreamInitialized takes the negotiated version from the upstream's
// initialize result, and returns the answer the client gets: the
// upstream's, with the version raised to ElicitVersion when the session is
// bridged (bridge.go).
func (p *Proxy) upstreamInitialized(m *jsonrpc.Response) *jsonrpc.Response {
	var res struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if m.Error == nil {
		_ = json.Unmarshal(m.Result, &res)
	}
	p.mu.Lock()
	p.negotiated, p.told = res.ProtocolVersion, res.ProtocolVersion
	p.sampling = nil
	bridged := false
	if m.Error == nil && bridges(p.requested, res.ProtocolVersion, p.clientElicit && !p.cfg.Observe) {
		// Observe mode asks nobody, so it has nothing to bridge for.
		if raised, err := transport.SetField(m.Result, "protocolVersion", ElicitVersion); err == nil {
			m = &jsonrpc.Response{ID: m.ID, Result: raised}
			p.told, bridged = ElicitVersion, true
		}
	}
	if m.Error == nil {
		p.advanceLocked(stageListing)
	} else if p.advanceLocked(stageRefusing) {
		// No session, so no tool list: nothing is pinned, and every call
		// (those that waited, too) is denied with rule pinning.
		p.list.tried, p.list.have = p.list.want, p.list.want
	}
	start := p.listerDueLocked()
	p.mu.Unlock()
	if m.Error != nil {
		p.logf("the upstream refused initialize, so every tool call will be denied: %v", m.Error)
	}
	if bridged {
		p.logf("server %q speaks MCP %s; the client, which can ask a human, is answered %s, and bouncer bridges the two so that approvals reach it",
			p.cfg.Server, res.ProtocolVersion, ElicitVersion)
	}
	if start {
		p.startLister()
	}
	return m
}

func (p *Proxy) fromUpstreamRequest(m *jsonrpc.Request) {
	p.record(m.Params, "")
	if m.IsCall() && ours(m.ID) {
		if err := p.writeUp(&jsonrpc.Response{ID: m.ID, Error: &jsonrpc.Error{
			Code:    jsonrpc.CodeInvalidRequest,
			Message: fmt.Sprintf("bouncer: request IDs starting with %q are reserved for the proxy", transport.IDPrefix),
		}}); err != nil {
			p.logf("%v", err)
		}
		return
	}
	switch m.Method {
	case "notifications/tools/list_changed":
		p.relist()
	case "notifications/cancelled":
		if why := cancelsNothing(m.Params); why != "" {
			p.logf("dropped the upstream's notifications/cancelled: %s", why)
			return
		}
		p.upstreamCancelled(m.Params)
	default:
		p.noteServerRequest(m)
	}
	p.writeDown(m)
}

// upstreamCancelled is withdrawn's mirror: the upstream cancelled a
// request it sent the client, so the client need not answer it (and an
// answer that comes anyway is dropped). If the request came in a batch,
// the proxy answers it for the client, or the upstream's batch would wait
// for it forever.
func (p *Proxy) upstreamCancelled(params json.RawMessage) {
	id, ok := cancelledID(params)
	if !ok {
		return
	}
	p.forgetServerRequest(id)
	book, ok := p.up.(answerBook)
	if !ok || !book.Release(id) {
		return
	}
	if err := p.writeUp(&jsonrpc.Response{ID: id, Error: &jsonrpc.Error{
		Code: codeCancelled, Message: "bouncer: the request was cancelled",
	}}); err != nil {
		p.logf("%v", err)
	}
}
