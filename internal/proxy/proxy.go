// Package proxy is the JSON-RPC pump between an MCP client and one upstream
// MCP server. It is the only package that speaks MCP.
//
// Every message passes through unchanged in both directions, except what
// Bouncer must see or answer itself:
//
//   - server/discover, and modern stateless requests before initialize, are
//     answered with -32601 so that every session is a legacy, initialize-based
//     one the proxy can follow;
//   - initialize: the client's capabilities are noted (can it elicit?), the
//     requested protocol version is clamped to 2025-11-25, and the negotiated
//     version is taken from the upstream's answer;
//   - tools/list: the proxy lists every page itself at startup and pins the
//     result; later lists (the client's, and its own after list_changed) are
//     compared against the pin;
//   - tools/call: decided by the engine in the read loop, written to the audit
//     log before anything else happens, and forwarded only when allowed;
//   - the proxy's own requests (its tools/list pages, its elicitation/create)
//     use string IDs "bouncer-N" and their answers are not forwarded.
//
// Everything the upstream sends is recorded as untrusted in the session's
// taint store before the client sees it.
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

// idPrefix starts every ID the proxy itself sends. Peers' requests using it
// are refused, so an answer can never be mistaken for one meant for us.
const idPrefix = "bouncer-"

// Auditor receives the audit lines. *audit.Log implements it; an error means
// the line was not written and the call it describes must be denied.
type Auditor interface {
	Append(audit.Entry) error
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
	// (Engine.TrustedOutput): their destinations vouch. Nil records them in
	// Store like everything else.
	Trusted *taint.Store
	// Audit receives one line per verdict. Required.
	Audit Auditor
	// Approvals holds one-time codes for clients that cannot elicit. Nil
	// means no codes can be issued: such asks are denied.
	Approvals *approval.Store
	// Remember, if set, keeps a destination a human vouched for through the
	// client's question with "remember" ticked: allowed through this server
	// from now on (session.Remembered). Nil offers no such choice.
	Remember func(dest string) error
	// OnPinned, if set, receives the tool list once it is pinned (run
	// keeps it for bouncer report and warns about policy entries that name
	// no tool of the server). It runs before any call is decided.
	OnPinned func(tools []json.RawMessage)
	// Session identifies this proxy session in audit lines.
	Session string
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

// ErrUpstreamOutput is returned by Run (wrapping the parse error) when the
// upstream wrote something on its stdout that is not a JSON-RPC message: a
// server that logs to stdout, or a wrong command. The session can't go on,
// since the stream can't be trusted to be in step.
var ErrUpstreamOutput = errors.New("the upstream server wrote something that is not an MCP message on its stdout")

// halfCloser is implemented by upstream connections that can signal EOF to
// the server while still reading its remaining output (*Process does).
type halfCloser interface{ CloseWrite() error }

// Proxy is one session between a client and an upstream server.
type Proxy struct {
	cfg      Config
	down, up mcp.Connection
	ctx      context.Context // cancelled when the session ends
	nextID   atomic.Int64
	wg       sync.WaitGroup

	// recording is read-held while a large result is recorded as untrusted
	// in parallel with its write to the client; every decision takes it
	// for writing first, so no call is decided on a half-recorded history.
	recording sync.RWMutex

	mu           sync.Mutex
	initID       *jsonrpc.ID // the client's initialize request, until answered
	initResult   bool        // the upstream answered initialize
	initialized  bool        // the client sent notifications/initialized
	negotiated   string      // protocol version from the upstream's answer
	clientElicit bool        // the client can answer form elicitation
	pinStarted   bool
	pinDone      bool
	prepin       []*call                               // tools/call waiting for the pin, in order
	held         map[jsonrpc.ID]*call                  // calls decided but not forwarded (asking, or waiting for the pin)
	fwd          map[jsonrpc.ID]string                 // client requests sent upstream, by ID → method
	fwdTrusted   map[jsonrpc.ID]bool                   // forwarded calls of tools whose output the policy trusts
	waitUp       map[jsonrpc.ID]chan *jsonrpc.Response // the proxy's own requests to the upstream
	waitDown     map[jsonrpc.ID]chan *jsonrpc.Response // the proxy's own requests to the client
	relisting    bool
	relistAgain  bool
	upClosed     bool
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
		cfg:        cfg,
		held:       map[jsonrpc.ID]*call{},
		fwd:        map[jsonrpc.ID]string{},
		fwdTrusted: map[jsonrpc.ID]bool{},
		waitUp:     map[jsonrpc.ID]chan *jsonrpc.Response{},
		waitDown:   map[jsonrpc.ID]chan *jsonrpc.Response{},
	}
}

func (p *Proxy) logf(format string, a ...any) {
	fmt.Fprintf(p.cfg.Log, "bouncer: "+format+"\n", a...)
}

// Run pumps messages between down (the client) and up (the upstream server)
// until one side ends. It returns nil when the client closed its side
// (after giving the upstream DrainTimeout to finish answering),
// ErrUpstreamExited (wrapped) when the upstream's output ended first, the
// context's error when ctx was cancelled, or another error when a peer sent
// something that is not JSON-RPC. Run closes down but not up: the caller
// owns the upstream process and stops it.
func (p *Proxy) Run(ctx context.Context, down, up mcp.Connection) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	p.ctx, p.down, p.up = ctx, down, up

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
			if err := p.drain(ctx, upErr); err != nil && !errors.Is(err, io.EOF) && !isReadError(err) {
				result = fmt.Errorf("%w: %w", ErrUpstreamOutput, err)
				p.failPending("bouncer: the upstream server wrote output that is not MCP, so the session was closed (bouncer's stderr says more)")
			} else {
				result = nil
			}
		} else {
			result = fmt.Errorf("reading from the client: %w", err)
		}
	case err := <-upErr:
		switch {
		case err == nil || errors.Is(err, io.EOF):
			result = ErrUpstreamExited
			p.failPending("bouncer: the upstream server exited before answering")
		case isReadError(err):
			result = fmt.Errorf("%w: %w", ErrUpstreamExited, err)
			p.failPending("bouncer: the upstream server exited before answering")
		default:
			result = fmt.Errorf("%w: %w", ErrUpstreamOutput, err)
			p.failPending("bouncer: the upstream server wrote output that is not MCP, so the session was closed (bouncer's stderr says more)")
		}
	case <-ctx.Done():
		result = ctx.Err()
	}
	cancel()
	_ = down.Close()
	p.wg.Wait()
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
		waiting := !p.pinDone && (p.pinStarted || len(p.prepin) > 0) || len(p.fwd) > 0
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
	if hc, ok := p.up.(halfCloser); ok {
		_ = hc.CloseWrite()
	} else {
		_ = p.up.Close()
	}
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
	p.upClosed = true
	ids := make([]jsonrpc.ID, 0, len(p.fwd))
	for id := range p.fwd {
		ids = append(ids, id)
	}
	p.fwd = map[jsonrpc.ID]string{}
	for id, ch := range p.waitUp {
		close(ch)
		delete(p.waitUp, id)
	}
	p.mu.Unlock()
	for _, id := range ids {
		p.writeDown(&jsonrpc.Response{ID: id, Error: &jsonrpc.Error{
			Code:    jsonrpc.CodeInternalError,
			Message: msg,
		}})
	}
}

// writeDown sends a message to the client. A failed write means the client
// is gone; the read side will see that too, so the error is only logged.
func (p *Proxy) writeDown(m jsonrpc.Message) {
	if err := p.down.Write(context.Background(), m); err != nil {
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
	id, _ := jsonrpc.MakeID(idPrefix + strconv.FormatInt(p.nextID.Add(1), 10))
	return id
}

// ours reports whether id is in the proxy's own range.
func ours(id jsonrpc.ID) bool {
	s, ok := id.Raw().(string)
	return ok && strings.HasPrefix(s, idPrefix)
}

// ---- client → upstream ----

func (p *Proxy) downLoop(ctx context.Context) error {
	for {
		msg, err := p.down.Read(ctx)
		if err != nil {
			return err
		}
		switch m := msg.(type) {
		case *jsonrpc.Response:
			p.fromClientResponse(m)
		case *jsonrpc.Request:
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
		p.mu.Lock()
		ch, ok := p.waitDown[m.ID]
		delete(p.waitDown, m.ID)
		p.mu.Unlock()
		if ok {
			ch <- m
		}
		// An answer to a question we withdrew (or never asked) goes nowhere.
		return
	}
	if err := p.writeUp(m); err != nil {
		p.logf("%v", err)
	}
}

func (p *Proxy) fromClientRequest(m *jsonrpc.Request) error {
	if m.IsCall() && ours(m.ID) {
		p.writeDown(&jsonrpc.Response{ID: m.ID, Error: &jsonrpc.Error{
			Code:    jsonrpc.CodeInvalidRequest,
			Message: fmt.Sprintf("bouncer: request IDs starting with %q are reserved for the proxy", idPrefix),
		}})
		return nil
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
		start := p.initResult && !p.pinStarted
		if start {
			p.pinStarted = true
		}
		p.mu.Unlock()
		if start {
			p.startPin()
		}
		return nil
	case "tools/call":
		return p.clientCall(m)
	case "notifications/cancelled":
		if p.cancelHeld(m) {
			return nil
		}
	}
	if m.IsCall() {
		p.mu.Lock()
		preInit := p.initID == nil && !p.initResult
		p.mu.Unlock()
		if preInit && hasModernMeta(m.Params) {
			p.methodNotFound(m)
			return nil
		}
		p.mu.Lock()
		p.fwd[m.ID] = m.Method
		p.mu.Unlock()
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
	p.mu.Lock()
	_, owed := p.fwd[m.ID]
	delete(p.fwd, m.ID)
	p.mu.Unlock()
	if owed {
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
	if params.ProtocolVersion > MaxProtocolVersion {
		if clamped, err := setField(m.Params, "protocolVersion", MaxProtocolVersion); err == nil {
			m = &jsonrpc.Request{ID: m.ID, Method: m.Method, Params: clamped}
		}
	}
	p.mu.Lock()
	p.clientElicit = form
	if m.IsCall() {
		id := m.ID
		p.initID = &id
		p.fwd[m.ID] = m.Method
	}
	p.mu.Unlock()
	p.relay(m)
	return nil
}

// setField returns the JSON object doc with key set to value; other members
// are kept as they were.
func setField(doc json.RawMessage, key string, value any) (json.RawMessage, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(doc, &obj); err != nil {
		return nil, err
	}
	v, err := json.Marshal(value)
	if err != nil {
		return nil, err
	}
	obj[key] = v
	return json.Marshal(obj)
}

// cancelHeld handles the client's notifications/cancelled for a call the
// proxy holds (asking a human, or waiting for the pin): the call is
// withdrawn here and the upstream never hears of it. It reports whether the
// notification was consumed.
func (p *Proxy) cancelHeld(m *jsonrpc.Request) bool {
	var params struct {
		RequestID any `json:"requestId"`
	}
	if json.Unmarshal(m.Params, &params) != nil {
		return false
	}
	id, err := jsonrpc.MakeID(params.RequestID)
	if err != nil || !id.IsValid() {
		return false
	}
	p.mu.Lock()
	c, ok := p.held[id]
	p.mu.Unlock()
	if !ok {
		return false
	}
	return c.withdraw()
}

// ---- upstream → client ----

func (p *Proxy) upLoop(ctx context.Context) error {
	for {
		msg, err := p.up.Read(ctx)
		if err != nil {
			return err
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
// on it.
func (p *Proxy) record(doc json.RawMessage) {
	if len(doc) > 0 && p.cfg.Store != nil {
		p.cfg.Store.RecordJSON(doc)
	}
}

func (p *Proxy) recordResponse(m *jsonrpc.Response) {
	p.record(m.Result)
	if m.Error != nil {
		if b, err := json.Marshal(m.Error); err == nil {
			p.record(b)
		} else {
			p.cfg.Store.Record(m.Error.Error())
		}
	}
}

// parallelRecord is the result size from which recording runs alongside
// the write to the client instead of before it.
const parallelRecord = 64 << 10

// slowRecord, set only by tests, delays parallel recording so that a test
// can show no decision overtakes it.
var slowRecord func()

// settled waits until every result the client may have seen is recorded.
func (p *Proxy) settled() {
	p.recording.Lock()
	//lint:ignore SA2001 an empty critical section is the point: a barrier behind every recording in flight
	p.recording.Unlock()
}

func (p *Proxy) fromUpstreamResponse(m *jsonrpc.Response) {
	p.mu.Lock()
	trusted := p.fwdTrusted[m.ID]
	delete(p.fwdTrusted, m.ID)
	p.mu.Unlock()
	if trusted && m.Error == nil && p.cfg.Trusted != nil && !ours(m.ID) {
		// The user's own data (trusted_output): it vouches, and is not
		// recorded as untrusted.
		p.recording.RLock()
		p.cfg.Trusted.RecordJSON(m.Result)
		p.recording.RUnlock()
	} else if len(m.Result) >= parallelRecord && m.Error == nil && !ours(m.ID) {
		// The read lock is taken here, before the client can see the
		// result, so a call it sends after seeing it waits in settled()
		// until the result is recorded.
		p.recording.RLock()
		go func() {
			defer p.recording.RUnlock()
			if slowRecord != nil {
				slowRecord()
			}
			p.record(m.Result)
		}()
	} else {
		p.recordResponse(m)
	}
	if ours(m.ID) {
		p.mu.Lock()
		ch, ok := p.waitUp[m.ID]
		delete(p.waitUp, m.ID)
		p.mu.Unlock()
		if ok {
			ch <- m
		}
		return
	}
	p.mu.Lock()
	method, known := p.fwd[m.ID]
	delete(p.fwd, m.ID)
	isInit := method == "initialize" && p.initID != nil && *p.initID == m.ID
	p.mu.Unlock()
	if known {
		switch {
		case isInit:
			p.upstreamInitialized(m)
		case method == "tools/list" && m.Error == nil:
			p.observeList(m.Result, "the client's tools/list")
		}
	}
	p.writeDown(m)
}

// upstreamInitialized takes the negotiated version from the upstream's
// initialize result.
func (p *Proxy) upstreamInitialized(m *jsonrpc.Response) {
	var res struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if m.Error == nil {
		_ = json.Unmarshal(m.Result, &res)
	}
	p.mu.Lock()
	p.negotiated = res.ProtocolVersion
	p.initResult = m.Error == nil
	start := !p.pinStarted && (p.initialized || len(p.prepin) > 0 || m.Error != nil)
	if start {
		p.pinStarted = true
	}
	p.mu.Unlock()
	switch {
	case start && m.Error != nil:
		// No session, so no tool list: calls that waited are denied.
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			p.logf("the upstream refused initialize, so every tool call will be denied: %v", m.Error)
			p.decideQueued()
		}()
	case start:
		p.startPin()
	}
}

func (p *Proxy) fromUpstreamRequest(m *jsonrpc.Request) {
	p.record(m.Params)
	if m.IsCall() && ours(m.ID) {
		if err := p.writeUp(&jsonrpc.Response{ID: m.ID, Error: &jsonrpc.Error{
			Code:    jsonrpc.CodeInvalidRequest,
			Message: fmt.Sprintf("bouncer: request IDs starting with %q are reserved for the proxy", idPrefix),
		}}); err != nil {
			p.logf("%v", err)
		}
		return
	}
	if m.Method == "notifications/tools/list_changed" {
		p.relist()
	}
	p.writeDown(m)
}
