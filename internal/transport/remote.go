package transport

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bouncer-mcp/bouncer/internal/redirect"
	"github.com/bouncer-mcp/bouncer/internal/secret"
)

// Transports a remote upstream can use (--transport).
const (
	Auto       = "auto"
	Streamable = "streamable"
	SSE        = "sse"
)

// RemoteConfig says how to reach a remote MCP server.
type RemoteConfig struct {
	// URL is the server's MCP endpoint (http or https).
	URL string
	// Headers go with every request (--header, a config entry's headers).
	// Their values are taken for secrets: Remote never puts them in an
	// error, a log line or a message to the client.
	Headers http.Header
	// Transport is Auto (the default), Streamable or SSE. Auto posts
	// initialize as streamable HTTP and falls back to the older HTTP+SSE
	// transport when the server answers that with a 4xx other than 401 and
	// 403, as the MCP spec's backwards-compatibility section says a client
	// should.
	Transport string
	// Auth, when set, authorizes every request: its TokenSource gives the
	// bearer token, and a 401 or 403 calls Authorize once and retries, as
	// the go-sdk's transports use an auth.OAuthHandler. It is applied to
	// every request Remote makes (posts, the event stream, the final
	// DELETE), on either transport. Nil: a 401 ends the session with an
	// error that says the server asks for authorization.
	Auth auth.OAuthHandler
	// Dial connects to the server. Nil dials with a plain net.Dialer;
	// bouncer run passes Pins.Dial, which reaches only the addresses the
	// server's name resolved to before the sandbox was applied.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// RootCAs verifies an https server; nil takes the system's pool now,
	// while its files can still be read.
	RootCAs *x509.CertPool
	// Pool, when set, is the pool of connections to the server that this
	// session shares with others (bouncer listen: one per wrapped server,
	// from NewRemotePool), and Dial and RootCAs are not used. Nil: the
	// session has a pool of its own.
	Pool *http.Transport
	// Log receives diagnostics, one line each, prefixed "bouncer: ".
	Log io.Writer
}

// Remote is a session with a remote MCP server over HTTP: streamable
// HTTP (a connection of Remote's own, postConn, for the posts and their
// answers), or the go-sdk's HTTP+SSE client transport for older servers.
//
// The go-sdk's streamable client is built for its own Client, which does
// things through it that a pump must do itself, or must not have done,
// and it reads an answer through several copies (see postConn):
//
//   - It opens the server's event stream (the GET that carries
//     notifications unrelated to a request, list_changed among them) and
//     sends Mcp-Protocol-Version only when its Client tells it the session
//     was initialized, through an unexported hook. Remote learns the
//     negotiated version from the initialize answer it relays, sets the
//     header itself, and keeps the event stream open itself, resuming it
//     with Last-Event-ID when it drops.
//   - Its Write waits for the server's response headers, which for a call
//     answered on an event stream may take as long as the call. Remote's
//     Write returns once the request is on the wire (the rest is read
//     asynchronously), so one slow call never holds up the pump.
//   - A call whose stream the server closed is answered with an error of
//     the connection's making; Remote says in it that bouncer wrote it,
//     and why.
//
// On streamable HTTP ids are read exactly, as Conn reads them; on HTTP+SSE
// as the go-sdk decodes them (jsonrpc.DecodeMessage).
type Remote struct {
	cfg     RemoteConfig
	client  *http.Client
	secrets []string
	origin  string // scheme://host:port of cfg.URL, the one place requests go

	ctx    context.Context // the session's life; Close cancels it
	cancel context.CancelFunc
	in     chan jsonrpc.Message

	endOnce sync.Once
	ended   chan struct{}
	endErr  error

	startMu sync.Mutex // held while the first write picks the transport

	mu        sync.Mutex
	conn      mcp.Connection // nil until the first write
	kind      string         // Streamable or SSE, once chosen
	initID    *jsonrpc.ID    // the latest initialize sent, to learn the version from its answer
	version   string         // the negotiated protocol version
	listening bool           // the event stream was started
	// streamUp is closed once the event stream's first GET is answered
	// (or can't be): notifications/initialized waits for it, see Write.
	streamUp     chan struct{}
	streamUpOnce sync.Once
	probe        int // the status of the first post, for auto's fallback
	closed       bool

	// A session the server forgot is replaced by a new one (see resume).
	repin      Repinner          // the pump's side; nil: no new session is started
	initParams json.RawMessage   // the client's initialize params, for a new session
	gen        int               // the session's number, from 1; each new one counts up
	dead       int               // the sessions up to this number are gone
	resuming   chan struct{}     // non-nil while a new session is started and what waited is sent; closed once that is over
	held       []jsonrpc.Message // written while a new session is started, for it
	retry      []jsonrpc.Message // never processed by the server (refused with 404, or never sent): for the new session
	flights    map[jsonrpc.ID]*flight
	asks       map[jsonrpc.ID]int // the server's requests to the client not yet answered, and the session each came on
	renewedAt  time.Time          // when bouncer started this session in place of a lost one (zero: it did not)
	served     bool               // the server has answered something on this session
	changes    []string           // how the new session's tool list differs from the pin
	ownIDs     int                // counts the ids of Remote's own requests
	writing    int                // writes to the server in progress (see abandon)
	abandoning bool               // the session is being ended for a loss (see abandon)
	// streamCancel ends the event stream's GET in progress.
	streamCancel context.CancelFunc
}

// flight is a request sent to the server and not answered yet.
type flight struct {
	gen      int  // the session it was sent on
	accepted bool // the server took it (it may have run)
}

// DialRemote prepares a session with the server at cfg.URL. Nothing is
// sent until the first Write, which is the client's initialize: that is
// when the transport is chosen (see RemoteConfig.Transport).
func DialRemote(cfg RemoteConfig) (*Remote, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("--url %q: give the server's MCP endpoint as an http:// or https:// URL", redactURL(cfg.URL))
	}
	switch cfg.Transport {
	case "":
		cfg.Transport = Auto
	case Auto, Streamable, SSE:
	default:
		return nil, fmt.Errorf("--transport %q: must be auto, streamable or sse", cfg.Transport)
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	base := cfg.Pool
	if base == nil {
		if base, err = NewRemotePool(cfg.URL, cfg.Dial, cfg.RootCAs); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &Remote{
		cfg:     cfg,
		origin:  originOf(u),
		secrets: secretsOf(cfg),
		ctx:     ctx,
		cancel:  cancel,
		in:      make(chan jsonrpc.Message, 64),
		ended:   make(chan struct{}),
		flights: map[jsonrpc.ID]*flight{},
		asks:    map[jsonrpc.ID]int{},
		gen:     1, // dead is 0: no session is gone yet
	}
	r.client = &http.Client{
		Transport: &remoteTransport{r: r, base: base},
		// A redirect may stay on the server's origin; elsewhere is a host
		// the sandbox does not let the proxy reach.
		CheckRedirect: redirect.SameOrigin(u, func(to *url.URL) error {
			return fmt.Errorf("the server redirects to %s://%s, another origin than --url's; give that URL instead", to.Scheme, to.Host)
		}),
	}
	return r, nil
}

// NewRemotePool returns a pool of connections to the remote server at
// rawURL, as a session dials them (RemoteConfig.Pool): through dial (nil:
// a plain net.Dialer), verifying https with roots (nil: the system's
// pool, loaded now, while its files can still be read).
func NewRemotePool(rawURL string, dial func(ctx context.Context, network, addr string) (net.Conn, error), roots *x509.CertPool) (*http.Transport, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("--url %q: give the server's MCP endpoint as an http:// or https:// URL", redactURL(rawURL))
	}
	if roots == nil && u.Scheme == "https" {
		// Loaded now: once the proxy is sandboxed, the certificate files
		// can't be read.
		if roots, err = x509.SystemCertPool(); err != nil {
			return nil, fmt.Errorf("loading the system's certificates for %s: %w", u.Host, err)
		}
	}
	if dial == nil {
		d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
		d.SetMultipathTCP(false)
		dial = d.DialContext
	}
	return &http.Transport{
		// No proxy from the environment: the sandbox lets the proxy reach
		// the server's port and nothing else.
		Proxy:                 nil,
		DialContext:           dial,
		TLSClientConfig:       &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          64,
		MaxIdleConnsPerHost:   64,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   15 * time.Second,
		ExpectContinueTimeout: time.Second,
	}, nil
}

func (r *Remote) logf(format string, a ...any) {
	fmt.Fprintf(r.cfg.Log, "bouncer: %s\n", r.redact(fmt.Sprintf(format, a...)))
}

// Transport is the transport in use: streamable or sse ("" before the
// first write).
func (r *Remote) Transport() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.kind
}

// SessionID is the server's Mcp-Session-Id, if it gave one.
func (r *Remote) SessionID() string {
	r.mu.Lock()
	conn := r.conn
	r.mu.Unlock()
	if conn == nil {
		return ""
	}
	return conn.SessionID()
}

// Read returns the next message from the server.
func (r *Remote) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case m := <-r.in:
		return m, nil
	case <-r.ended:
		// What came before the end is delivered first.
		select {
		case m := <-r.in:
			return m, nil
		default:
		}
		return nil, r.endErr
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// end records why the session is over (the first reason wins) and wakes
// Read.
func (r *Remote) end(err error) {
	r.endOnce.Do(func() {
		r.endErr = err
		close(r.ended)
	})
}

// deliver queues a message from the server for Read.
func (r *Remote) deliver(m jsonrpc.Message) bool {
	select {
	case r.in <- m:
		return true
	case <-r.ctx.Done():
		return false
	}
}

// Write sends one message to the server. The first one (the client's
// initialize) picks the transport and is sent before Write returns; later
// ones return as soon as the request is on the wire. A request the server
// then refuses (a 5xx, say) is answered with an error that says so, as if
// the server had; a failure the session can't survive (its id expired, the
// server went away) ends Read with the reason.
func (r *Remote) Write(ctx context.Context, m jsonrpc.Message) error {
	select {
	case <-r.ended:
		return r.endErr
	default:
	}
	r.noteInit(m)
	r.mu.Lock()
	if r.resuming != nil {
		// Sent on the new session once it is up (see resume); if none
		// comes up, the session ends, and the pump fails what it waits
		// for with the reason.
		r.held = append(r.held, m)
		r.mu.Unlock()
		return nil
	}
	conn, gen := r.conn, r.gen
	stale := !r.answerableLocked(m, gen)
	r.mu.Unlock()
	if stale {
		r.dropStale(m)
		return nil
	}
	if conn == nil {
		return r.start(ctx, m)
	}
	if isInitialized(m) {
		r.awaitStream(ctx)
	}
	return r.send(conn, gen, m)
}

// streamWait bounds how long notifications/initialized waits for the
// event stream's GET to be answered, for a server that holds back its
// headers until it has something to send.
const streamWait = 2 * time.Second

// awaitStream waits until the server's event stream is open, or can't be.
// Servers commonly send list_changed (or a roots/list request) the moment
// the client says it is initialized, on that stream; a server that has no
// open stream to send it on drops it (the TypeScript SDK does), and the
// client would never learn of the tools the server added.
func (r *Remote) awaitStream(ctx context.Context) {
	r.mu.Lock()
	ch := r.streamUp
	r.mu.Unlock()
	if ch == nil {
		return // not streamable HTTP, or the initialize failed
	}
	t := time.NewTimer(streamWait)
	defer t.Stop()
	select {
	case <-ch:
	case <-t.C:
	case <-ctx.Done():
	case <-r.ended:
	}
}

// streamOpened marks the event stream's first GET as answered.
func (r *Remote) streamOpened() {
	r.mu.Lock()
	ch := r.streamUp
	r.mu.Unlock()
	if ch != nil {
		r.streamUpOnce.Do(func() { close(ch) })
	}
}

func isInitialized(m jsonrpc.Message) bool {
	req, ok := m.(*jsonrpc.Request)
	return ok && !req.IsCall() && req.Method == "notifications/initialized"
}

// noteInit remembers an initialize request, whose answer carries the
// protocol version, and whose params start a new session if the server
// forgets this one.
func (r *Remote) noteInit(m jsonrpc.Message) {
	if req, ok := m.(*jsonrpc.Request); ok && req.Method == "initialize" && req.IsCall() {
		id := req.ID
		r.mu.Lock()
		r.initID = &id
		r.initParams = req.Params
		r.mu.Unlock()
	}
}

// start sends the first message on the transport cfg.Transport names, or,
// for auto, on streamable HTTP, falling back to HTTP+SSE when the server
// refuses the post as an older server does.
func (r *Remote) start(ctx context.Context, m jsonrpc.Message) error {
	r.startMu.Lock()
	defer r.startMu.Unlock()
	r.mu.Lock()
	conn, gen := r.conn, r.gen
	r.mu.Unlock()
	if conn != nil {
		return r.send(conn, gen, m) // another write started it meanwhile
	}
	isInit := false
	if req, ok := m.(*jsonrpc.Request); ok {
		isInit = req.Method == "initialize"
	}
	kind := r.cfg.Transport
	if kind == Auto || kind == Streamable {
		c, err := r.streamable(ctx)
		if err == nil {
			r.mu.Lock()
			r.probe = 0
			r.mu.Unlock()
			err = c.Write(r.ctx, m)
			if err == nil {
				r.begin(c, Streamable)
				return nil
			}
			_ = c.Close()
		}
		select {
		case <-r.ended:
			return r.endErr // a 401 with nobody to authorize
		default:
		}
		r.mu.Lock()
		status := r.probe
		r.mu.Unlock()
		old := status >= 400 && status < 500 && status != http.StatusUnauthorized && status != http.StatusForbidden
		if kind == Streamable || !isInit || !old {
			return fmt.Errorf("the remote server at %s: %s", redactURL(r.cfg.URL), r.redact(err.Error()))
		}
		r.logf("the server at %s answered %d to a streamable HTTP initialize; trying the older HTTP+SSE transport", redactURL(r.cfg.URL), status)
		sseErr := r.startSSE(ctx, m)
		if sseErr == nil {
			return nil
		}
		return fmt.Errorf("the remote server at %s answered %d to a streamable HTTP post, and the older HTTP+SSE transport failed too (%s); check --url", redactURL(r.cfg.URL), status, r.redact(sseErr.Error()))
	}
	if err := r.startSSE(ctx, m); err != nil {
		return fmt.Errorf("the remote server at %s (HTTP+SSE): %s", redactURL(r.cfg.URL), r.redact(err.Error()))
	}
	return nil
}

// streamable is a new connection on streamable HTTP (postConn: the
// event stream unrelated to requests is Remote's own, see listen). As on
// stdio, a message has no size limit.
func (r *Remote) streamable(context.Context) (mcp.Connection, error) {
	return newPostConn(r.cfg.URL, r.client, r.logf), nil
}

func (r *Remote) startSSE(ctx context.Context, m jsonrpc.Message) error {
	t := &mcp.SSEClientTransport{Endpoint: r.cfg.URL, HTTPClient: r.client, MaxEventSize: -1}
	// The event stream's GET lives as long as the session, so it is made
	// under the session's context; only the wait for its first event is
	// bounded.
	cctx, cancel := context.WithCancel(r.ctx)
	timer := time.AfterFunc(60*time.Second, cancel)
	c, err := t.Connect(cctx)
	if !timer.Stop() && err != nil {
		err = fmt.Errorf("no endpoint event within 60s: %w", err)
	}
	if err != nil {
		cancel()
		return err
	}
	if err := c.Write(r.ctx, m); err != nil {
		_ = c.Close()
		return err
	}
	r.begin(c, SSE)
	return nil
}

// begin makes c the session's connection and starts reading it.
func (r *Remote) begin(c mcp.Connection, kind string) {
	r.mu.Lock()
	r.conn, r.kind = c, kind
	gen := r.gen
	r.mu.Unlock()
	go r.readConn(c, gen)
}

// readConn passes what the go-sdk connection of session gen reads to Read,
// until it fails. A session the server forgot is replaced (see lost); the
// end of one that was replaced is no one's business.
func (r *Remote) readConn(c mcp.Connection, gen int) {
	for {
		m, err := c.Read(r.ctx)
		if err != nil {
			if errors.Is(err, mcp.ErrSessionMissing) {
				r.lost(gen, nil)
				return
			}
			r.mu.Lock()
			replaced := gen <= r.dead
			r.mu.Unlock()
			if !replaced {
				r.end(r.why(err))
			}
			return
		}
		if resp, ok := m.(*jsonrpc.Response); ok {
			r.answered(resp)
			r.mu.Lock()
			r.served = r.served || gen == r.gen
			r.mu.Unlock()
		}
		if !r.fromServer(gen, m) {
			return
		}
	}
}

// fromServer delivers m, read on session gen, to Read. It keeps the books
// a new session needs: an answer ends its request's flight, and a request
// of the server's is noted with its session, so that the client's answer
// to it never goes to another session (see answerableLocked).
func (r *Remote) fromServer(gen int, m jsonrpc.Message) bool {
	r.mu.Lock()
	switch m := m.(type) {
	case *jsonrpc.Response:
		delete(r.flights, m.ID)
	case *jsonrpc.Request:
		if m.IsCall() {
			r.asks[m.ID] = gen
		}
	}
	r.mu.Unlock()
	return r.deliver(m)
}

// answerableLocked reports whether m may go to session gen: anything but
// the client's answer to a request the server sent on another session (a
// session it forgot). Ids are the server's own, and a new session counts
// them from the start again: there, the answer could be taken for the
// answer to another request. r.mu is held.
func (r *Remote) answerableLocked(m jsonrpc.Message, gen int) bool {
	resp, ok := m.(*jsonrpc.Response)
	if !ok {
		return true
	}
	g, ok := r.asks[resp.ID]
	return !ok || g == gen
}

// dropStale drops the client's answer to a request of a session the
// server forgot.
func (r *Remote) dropStale(m jsonrpc.Message) {
	resp := m.(*jsonrpc.Response)
	r.mu.Lock()
	delete(r.asks, resp.ID)
	r.mu.Unlock()
	r.logf("dropped the client's answer to request %s of the remote server: the server asked it on a session it has since forgotten, and the new session did not ask it", IDText(resp.ID))
}

// answered looks at an answer from the server before it is relayed: the
// initialize result gives the protocol version (and, on streamable HTTP,
// starts the event stream), and an error the connection made up for a stream
// the server closed says so.
func (r *Remote) answered(resp *jsonrpc.Response) {
	if resp.Error != nil {
		var we *jsonrpc.Error
		if !errors.As(resp.Error, &we) {
			resp.Error = &jsonrpc.Error{
				Code:    jsonrpc.CodeInternalError,
				Message: "bouncer: the remote server closed the request's stream without answering it (" + r.redact(resp.Error.Error()) + ")",
			}
		}
	}
	r.mu.Lock()
	isInit := r.initID != nil && *r.initID == resp.ID
	if isInit {
		r.initID = nil
	}
	r.mu.Unlock()
	if !isInit || resp.Error != nil {
		return
	}
	var res struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	_ = json.Unmarshal(resp.Result, &res)
	r.mu.Lock()
	r.version = res.ProtocolVersion
	listen := r.kind == Streamable && !r.listening
	r.listening = r.listening || listen
	if listen {
		r.streamUp = make(chan struct{})
	}
	r.mu.Unlock()
	if listen {
		go r.listen()
	}
}

// send writes m on c, the connection of session gen, and returns once the
// request is on the wire.
func (r *Remote) send(c mcp.Connection, gen int, m jsonrpc.Message) error {
	var wrote atomic.Bool
	onWire := make(chan struct{})
	var once sync.Once
	trace := &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) {
		wrote.Store(true)
		once.Do(func() { close(onWire) })
	}}
	// The session's context, not the caller's: the go-sdk reads the
	// answer's stream under it, long after Write returned.
	ctx := httptrace.WithClientTrace(r.ctx, trace)
	req, _ := m.(*jsonrpc.Request)
	call := req != nil && req.IsCall()
	if call {
		r.mu.Lock()
		r.flights[req.ID] = &flight{gen: gen}
		r.mu.Unlock()
	}
	var handed atomic.Bool // to lost: the new session takes it
	done := make(chan error, 1)
	r.mu.Lock()
	r.writing++
	r.mu.Unlock()
	go func() {
		defer func() {
			r.mu.Lock()
			r.writing--
			r.mu.Unlock()
		}()
		err := c.Write(ctx, m)
		switch {
		case err == nil && call:
			r.accepted(gen, req)
		case err == nil:
			if resp, ok := m.(*jsonrpc.Response); ok {
				r.mu.Lock()
				delete(r.asks, resp.ID)
				r.mu.Unlock()
			}
		case errors.Is(err, mcp.ErrSessionMissing) || (!wrote.Load() && r.isDead(gen)):
			// The server did not process it: it answered 404 for the
			// session id, which it does before it runs anything (or
			// the connection already knew the session was gone), or
			// it was never sent on a session found gone meanwhile.
			handed.Store(true)
			r.lost(gen, m)
		case wrote.Load():
			r.refused(m, err)
		case call:
			// Never sent: Write returns the error, and the pump answers.
			r.mu.Lock()
			delete(r.flights, req.ID)
			r.mu.Unlock()
		}
		done <- err
	}()
	// A request returns once it is on the wire, so a slow call does not
	// hold up the pump. A notification or an answer waits for the server
	// to take it (the 202 comes at once): it must reach the server before
	// whatever the client sends next (notifications/initialized before the
	// first call, a cancellation after the call it cancels), and separate
	// POSTs on separate connections would not keep that order.
	if !call {
		if err := <-done; err != nil && !wrote.Load() && !handed.Load() {
			return r.unsentError(err)
		}
		return nil
	}
	select {
	case <-onWire:
		return nil
	case err := <-done:
		if err == nil || wrote.Load() || handed.Load() {
			return nil // refused or lost (above) answer it
		}
		return r.unsentError(err)
	}
}

// isDead reports whether session gen is known to be gone.
func (r *Remote) isDead(gen int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return gen <= r.dead
}

// unsentError says why a message never reached the server: the session
// goes on (the server may be back for the next one), so it is not the
// session's end.
func (r *Remote) unsentError(err error) error {
	return fmt.Errorf("the message did not reach the remote server at %s (%s); check that it is up and reachable", redactURL(r.cfg.URL), r.redact(err.Error()))
}

// refused handles a message the server did not take once it was sent
// (one refused because the server does not know the session goes to lost
// instead): a request is answered with the reason (unless the session is
// over: then the pump fails it with the session's reason), anything else
// is logged.
func (r *Remote) refused(m jsonrpc.Message, err error) {
	select {
	case <-r.ended:
		return
	default:
	}
	why := r.redact(err.Error())
	req, ok := m.(*jsonrpc.Request)
	if !ok || !req.IsCall() {
		r.logf("the remote server did not take a message: %s", why)
		return
	}
	r.mu.Lock()
	delete(r.flights, req.ID)
	r.mu.Unlock()
	msg := "bouncer: the remote server did not take the request: " + why
	if brokeUnanswered(err) {
		msg = fmt.Sprintf("bouncer: the connection to the remote server at %s broke after the request was sent, before any answer (%s). It may have run or not, and bouncer did not send it again; check that the server is up and reachable, and whether the request took effect before retrying", redactURL(r.cfg.URL), why)
	}
	r.deliver(&jsonrpc.Response{ID: req.ID, Error: &jsonrpc.Error{
		Code:    jsonrpc.CodeInternalError,
		Message: msg,
	}})
}

// brokeUnanswered reports whether err, from writing a request that was
// on the wire, is the HTTP client's (no response came back: the
// connection closed or reset) rather than the server's answer (a status
// it refused the request with). The first happens when a server that
// went away had closed a kept-alive connection and the HTTP client had not
// noticed yet: net/http does not send a POST again once it was written,
// since the server may have read it.
func brokeUnanswered(err error) bool {
	var ue *url.Error
	return errors.As(err, &ue)
}

// accepted notes that the server took req, sent on session gen: from now
// on it may have run. If that session was lost meanwhile, req gets the
// error of a call in flight (see resume).
func (r *Remote) accepted(gen int, req *jsonrpc.Request) {
	r.mu.Lock()
	f := r.flights[req.ID]
	switch {
	case f == nil || f.gen != gen:
		f = nil // answered already, or its id was used again
	case gen <= r.dead:
		delete(r.flights, req.ID)
	default:
		f.accepted = true
		f = nil
	}
	r.mu.Unlock()
	if f != nil {
		r.deliver(r.inFlightError(req.ID))
	}
}

// why turns the error a connection ended with into the reason told to the
// client and the user.
func (r *Remote) why(err error) error {
	var ended *EndedError
	switch {
	case errors.As(err, &ended):
		return err
	case errors.Is(err, io.EOF) || errors.Is(err, context.Canceled):
		r.mu.Lock()
		closed := r.closed
		kind := r.kind
		r.mu.Unlock()
		if closed {
			return io.EOF
		}
		if kind == SSE {
			return &EndedError{Why: fmt.Sprintf("the remote server at %s closed its event stream, which ends an HTTP+SSE session; restart the MCP client (or reconnect this server in it) to start a new one", redactURL(r.cfg.URL)), Err: err}
		}
		return io.EOF
	case errors.Is(err, mcp.ErrSessionMissing):
		return &EndedError{Why: r.forgotten(), Err: err}
	case strings.Contains(err.Error(), "failed to decode"):
		// The connections' words (postConn's, the go-sdk's) for a body or event that is not JSON-RPC.
		return r.notMCP(err)
	}
	return &EndedError{Why: fmt.Sprintf("the connection to the remote server at %s failed: %s; check that the server is up and reachable, then restart the session", redactURL(r.cfg.URL), r.redact(err.Error())), Err: err}
}

// forgotten is why a session ends that the server forgot and that is not
// replaced. It takes no lock: lost says it holding r.mu.
func (r *Remote) forgotten() string {
	return fmt.Sprintf("the remote server at %s no longer knows this session (it answers 404 Not Found for the session id: it restarted, or ended the session); restart the MCP client (or reconnect this server in it) to start a new one", redactURL(r.cfg.URL))
}

// notMCP is the end of a session whose server sent something that is not
// an MCP message: the stream can't be trusted to be in step any more.
func (r *Remote) notMCP(err error) error {
	return &EndedError{
		Why: fmt.Sprintf("the remote server at %s sent something that is not an MCP message (%s), so the session was closed; check that --url is the server's MCP endpoint", redactURL(r.cfg.URL), r.redact(err.Error())),
		Err: fmt.Errorf("%w: %w", ErrUpstreamOutput, err),
	}
}

// CloseWrite ends the session once the client is done: an HTTP server has
// no input to close, and the pump calls this only when the answers owed
// are in (or the drain deadline passed).
func (r *Remote) CloseWrite() error { return r.Close() }

// Close ends the session: the go-sdk's streamable connection sends the
// server a DELETE for its session id, then every stream is closed. Read
// returns io.EOF.
func (r *Remote) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	conn := r.conn
	r.mu.Unlock()
	var err error
	if conn != nil {
		err = conn.Close()
	}
	r.cancel()
	r.end(io.EOF)
	if err != nil {
		return errors.New(r.redact(err.Error()))
	}
	return nil
}

// ---- a session the server forgot ----

// A streamable HTTP server that no longer knows a session answers 404 to
// every request that names it, and the MCP spec has the client start a new
// session with a new initialize. A server that restarted does that. The
// client can't (it does not see the HTTP), so Remote does it for the
// client, once per lost session:
//
//   - it initializes a new session with the client's initialize params at
//     the version negotiated before (the server must agree to it again),
//     and says it is initialized;
//   - it reads the new session's whole tool list and hands it to the pump
//     (Repinner.Repin), which compares it with the pin. Nothing the client
//     sent goes to the new session before that;
//   - what the server provably did not process goes to the new session, in
//     the order it came: a message the server refused with the 404 (it
//     answers that before running anything), one never sent, and what the
//     client sent while the new session was started. A tools/call among
//     them was judged on the old session, so the pump judges it again
//     (Repinner.Carry): it goes only if the new tool list is the pinned
//     one exactly, with an audit line that says so; otherwise it is
//     refused with rule pinning, and what changed is refused from then
//     on, as after a list_changed. A client's answer to a request the
//     server sent on the old session does not go: the new session never
//     asked it;
//   - a request the server had taken on the old session is not sent again:
//     it may have run, and a second run may repeat its effect (a mail sent
//     twice). It is answered with an error that says so;
//   - the event stream is opened again for the new session (a server that
//     does not check the id of a GET would keep the old one open).
//
// The bearer token, if any, goes on as it was: a restart does not revoke
// it, and a 401 goes through the authorizer as on any request. If the new
// session can't be started, or the server forgets it too before it
// proved itself (within renewedGrace, before answering anything, or
// before what waited for it was sent), the session ends with the reason,
// and every request still waiting (and every later call) gets it: one new
// session per loss, never a loop. The HTTP+SSE transport has no session
// ids to lose: there the end of the event stream ends the session.

// renewTimeout bounds the start of a new session: initialize and every
// page of the tool list.
const renewTimeout = 60 * time.Second

// renewedGrace is how long a session bouncer started must last, or answer
// something, for its loss to be met with another new session.
const renewedGrace = 10 * time.Second

// SetRepinner implements Resumer.
func (r *Remote) SetRepinner(p Repinner) {
	r.mu.Lock()
	r.repin = p
	r.mu.Unlock()
}

// lost handles a 404 for session gen: m, if set, is a message the server
// did not process, for the new session (lost is then called from send).
// The first loss of a session starts a new one (see resume), unless none
// can or may be started: then the session ends. It returns a channel
// closed once the session is replaced, or is over.
func (r *Remote) lost(gen int, m jsonrpc.Message) <-chan struct{} {
	done := make(chan struct{})
	r.mu.Lock()
	select {
	case <-r.ended:
		// Over already: the pump answers what waits.
		r.mu.Unlock()
		if m != nil {
			r.unsent([]jsonrpc.Message{m})
		}
		close(done)
		return done
	default:
	}
	switch {
	case r.abandoning:
		// Being ended for a loss (see abandon): m goes with what
		// waited, and its line says it was not sent.
		if m != nil {
			r.retry = append(r.retry, m)
		}
		r.mu.Unlock()
		close(done)
		return done
	case r.resuming != nil && gen <= r.dead:
		// Being replaced: the new session takes m.
		if m != nil {
			r.retry = append(r.retry, m)
		}
		ch := r.resuming
		r.mu.Unlock()
		return ch
	case gen < r.gen:
		// Replaced already (m's 404 came late): m goes to the new one.
		conn, cur, changes := r.conn, r.gen, r.changes
		r.mu.Unlock()
		if m != nil {
			if _, answer := r.resend(conn, cur, m, changes); answer != nil {
				answer()
			}
		}
		close(done)
		return done
	}
	if m != nil {
		r.retry = append(r.retry, m)
	}
	where := redactURL(r.cfg.URL)
	var why string
	switch {
	case r.closed:
		why = "the session was closed"
	case r.repin == nil || r.kind != Streamable || r.version == "" || r.initParams == nil:
		// Nothing to start a new session with (no pump, or the session
		// was never initialized).
		why = r.forgotten()
	case r.resuming != nil, !r.renewedAt.IsZero() && !r.served && time.Since(r.renewedAt) < renewedGrace:
		// A server that forgets every session would have bouncer start
		// one after another, for ever.
		why = fmt.Sprintf("the remote server at %s forgot the session bouncer had just started in place of one it forgot (404 Not Found for the session id), before it proved itself; check the server, then restart the MCP client (or reconnect this server in it)", where)
	default:
		r.resuming = done
		r.dead = gen
		r.mu.Unlock()
		go r.resume(gen, done)
		return done
	}
	r.mu.Unlock()
	self := 0
	if m != nil {
		self = 1
	}
	r.abandon(why, self)
	close(done)
	return done
}

// settleWait bounds how long abandon waits for the writes in progress.
const settleWait = 2 * time.Second

// abandon ends the session for why, a loss it can't survive (unless it is
// over already: the reason it ended for stays). What waited for a new
// session is not sent, and a tools/call among it gets an audit line that
// says so, before the pump answers it with the reason. The writes still
// in progress (self of them are the caller's) are waited for first, at
// most settleWait: the go-sdk connection reports a 404 to its reader
// before the write it came on returns, and that write's message is among
// what was not sent.
func (r *Remote) abandon(why string, self int) {
	r.mu.Lock()
	r.abandoning = true
	r.mu.Unlock()
	deadline := time.Now().Add(settleWait)
	for {
		r.mu.Lock()
		n := r.writing
		r.mu.Unlock()
		if n <= self || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	r.mu.Lock()
	msgs := append(r.retry, r.held...)
	r.retry, r.held = nil, nil
	r.mu.Unlock()
	r.unsentFor(msgs, why)
	r.end(&EndedError{Why: why, Err: mcp.ErrSessionMissing})
}

// unsent records that msgs, which waited for a new session, are not sent
// now that the session is over.
func (r *Remote) unsent(msgs []jsonrpc.Message) {
	reason := "the session was closed"
	var ended *EndedError
	if errors.As(r.endErr, &ended) {
		reason = ended.Why
	}
	r.unsentFor(msgs, reason)
}

// unsentFor gives each tools/call among msgs an audit line saying it was
// not sent, for why.
func (r *Remote) unsentFor(msgs []jsonrpc.Message, why string) {
	r.mu.Lock()
	p := r.repin
	r.mu.Unlock()
	if p == nil {
		return
	}
	for _, m := range msgs {
		if req, ok := m.(*jsonrpc.Request); ok && req.IsCall() && req.Method == "tools/call" {
			p.Unsent(req, why)
		}
	}
}

// resume replaces session gen, which the server forgot, with a new one;
// see the comment above renewTimeout. done is closed once it is over.
//
// The answers bouncer gives meanwhile (to a request that may have run, to
// a call refused for the new tool list) go out once it is over: a client
// that waits for one before its next call sends that call to the new
// session as any other, judged on the new list (not held, then refused
// for having been judged on the old one).
func (r *Remote) resume(gen int, done chan struct{}) {
	defer close(done)
	where := redactURL(r.cfg.URL)
	r.logf("the remote server at %s no longer knows this session (it answers 404 Not Found for the session id: it restarted?); starting a new one with the client's initialize, and checking its tool list against the pin", where)
	r.mu.Lock()
	old := r.conn
	var answers []func()
	for id, f := range r.flights {
		if f.gen <= gen && f.accepted {
			delete(r.flights, id)
			answers = append(answers, func() { r.deliver(r.inFlightError(id)) })
		}
	}
	r.mu.Unlock()
	// In the background: a connection whose failure was not the 404
	// (that came on the event stream) sends a DELETE for the old id.
	go old.Close()
	if len(answers) > 0 {
		r.logf("%d request(s) the server had taken on the lost session get an error: they may have run, so bouncer does not send them again", len(answers))
	}
	// fail ends the session for why (see abandon; "": it is over
	// already), once the answers are given.
	fail := func(why string) {
		for _, answer := range answers {
			answer()
		}
		if why != "" {
			r.abandon(why, 0)
		} else {
			r.mu.Lock()
			msgs := append(r.retry, r.held...)
			r.retry, r.held = nil, nil
			r.mu.Unlock()
			r.unsent(msgs)
		}
		r.mu.Lock()
		r.resuming = nil
		r.mu.Unlock()
	}
	next := gen + 1
	c, tools, err := r.renew(next)
	if err == nil {
		r.mu.Lock()
		if r.closed {
			err = errors.New("the session was closed")
		}
		r.mu.Unlock()
		if err != nil {
			_ = c.Close()
		}
	}
	if err != nil {
		fail(fmt.Sprintf("the remote server at %s no longer knows this session (it answers 404 Not Found for the session id: it restarted, or ended the session), and bouncer could not start a new one: %s; check the server, then restart the MCP client (or reconnect this server in it)", where, err))
		return
	}
	changes := r.repin.Repin(tools)
	r.mu.Lock()
	r.conn = c
	r.gen = next
	r.changes, r.renewedAt, r.served = changes, time.Now(), false
	stream := r.streamCancel
	r.mu.Unlock()
	go r.readConn(c, next)
	if stream != nil {
		// The event stream still names the old session (a server that
		// does not check the id of a GET keeps it open): it is opened
		// again for the new one.
		stream()
	}
	if len(changes) == 0 {
		r.logf("started a new session with the remote server at %s; its tool list is the pinned one", where)
	} else {
		r.logf("started a new session with the remote server at %s; its tool list differs from the pinned one (%s): calls judged before are not sent, and what changed is refused from now on", where, strings.Join(changes, "; "))
	}
	// What waited goes out in the order it came (the refused ones were
	// sent first); only then are writes sent as they come.
	sent := 0
	for {
		r.mu.Lock()
		msgs := append(r.retry, r.held...)
		r.retry, r.held = nil, nil
		if len(msgs) == 0 {
			r.resuming = nil
			r.mu.Unlock()
			break
		}
		r.mu.Unlock()
		for i, m := range msgs {
			select {
			case <-r.ended:
				// The new session was lost too (see lost): what is
				// left is not sent.
				r.mu.Lock()
				r.retry = append(msgs[i:], r.retry...)
				r.mu.Unlock()
				fail("")
				return
			default:
			}
			ok, answer := r.resend(c, next, m, changes)
			if ok {
				sent++
			}
			if answer != nil {
				answers = append(answers, answer)
			}
		}
	}
	if sent > 0 {
		r.logf("sent %d message(s) that had not reached the server on the new session", sent)
	}
	for _, answer := range answers {
		answer()
	}
}

// resend sends m on the new session c (number gen), as the comment above
// renewTimeout says: a tools/call only if the pump lets it go (it does
// not if the tool list differs, changes), a client's answer only to a
// request of this session. It reports whether m was sent, and returns the
// answer to a call refused instead, for the caller to give.
func (r *Remote) resend(c mcp.Connection, gen int, m jsonrpc.Message, changes []string) (bool, func()) {
	r.mu.Lock()
	stale := !r.answerableLocked(m, gen)
	p := r.repin
	r.mu.Unlock()
	if stale {
		r.dropStale(m)
		return false, nil
	}
	req, ok := m.(*jsonrpc.Request)
	if ok && req.IsCall() && req.Method == "tools/call" && p != nil {
		if reason := p.Carry(req, redactURL(r.cfg.URL), changes); reason != "" {
			r.mu.Lock()
			delete(r.flights, req.ID)
			r.mu.Unlock()
			return false, func() { p.RefuseCarried(req, reason) }
		}
	}
	if err := r.send(c, gen, m); err != nil {
		if ok && req.IsCall() {
			return false, func() {
				r.deliver(&jsonrpc.Response{ID: req.ID, Error: &jsonrpc.Error{
					Code:    jsonrpc.CodeInternalError,
					Message: "bouncer: " + err.Error(),
				}})
			}
		}
		r.logf("the remote server did not take a message on the new session: %v", err)
		return false, nil
	}
	return true, nil
}

// inFlightError answers a request the server had taken on a session it
// then lost.
func (r *Remote) inFlightError(id jsonrpc.ID) *jsonrpc.Response {
	return &jsonrpc.Response{ID: id, Error: &jsonrpc.Error{
		Code:    jsonrpc.CodeInternalError,
		Message: fmt.Sprintf("bouncer: the remote server at %s lost the session (it restarted?) while this request was in flight. It may have run, so bouncer did not send it again (a second run may repeat its effect); check whether it took effect before retrying", redactURL(r.cfg.URL)),
	}}
}

// renew starts a new session, which will be number gen: initialize with
// the client's params at the negotiated version, notifications/initialized,
// and the whole tool list, which it returns. Nothing else is sent on it
// yet.
func (r *Remote) renew(gen int) (mcp.Connection, []json.RawMessage, error) {
	ctx, cancel := context.WithTimeout(r.ctx, renewTimeout)
	defer cancel()
	r.mu.Lock()
	params, version := r.initParams, r.version
	r.mu.Unlock()
	params, err := SetField(params, "protocolVersion", version)
	if err != nil {
		return nil, nil, fmt.Errorf("the client's initialize params: %v", err)
	}
	c, err := r.streamable(ctx)
	if err != nil {
		return nil, nil, r.renewError(err)
	}
	fail := func(err error) (mcp.Connection, []json.RawMessage, error) {
		_ = c.Close()
		return nil, nil, err
	}
	res, err := r.ask(ctx, c, gen, "initialize", params)
	if err != nil {
		return fail(err)
	}
	var ir struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	_ = json.Unmarshal(res, &ir)
	if ir.ProtocolVersion != version {
		return fail(fmt.Errorf("the server answered the new initialize at protocol version %q, and the client's session is at %q", ir.ProtocolVersion, version))
	}
	if err := c.Write(ctx, &jsonrpc.Request{Method: "notifications/initialized"}); err != nil {
		return fail(r.renewError(err))
	}
	var tools []json.RawMessage
	seen := map[string]bool{}
	params = json.RawMessage(`{}`)
	for page := 0; ; page++ {
		if page == MaxListPages {
			return fail(fmt.Errorf("tools/list has more than %d pages", MaxListPages))
		}
		res, err := r.ask(ctx, c, gen, "tools/list", params)
		if err != nil {
			return fail(err)
		}
		var l struct {
			Tools      []json.RawMessage `json:"tools"`
			NextCursor string            `json:"nextCursor"`
		}
		if err := json.Unmarshal(res, &l); err != nil || l.Tools == nil {
			return fail(errors.New("the new session's tools/list result has no tools array"))
		}
		tools = append(tools, l.Tools...)
		if l.NextCursor == "" {
			return c, tools, nil
		}
		if seen[l.NextCursor] {
			return fail(fmt.Errorf("tools/list returned the cursor %q twice", l.NextCursor))
		}
		seen[l.NextCursor] = true
		params, _ = json.Marshal(map[string]string{"cursor": l.NextCursor})
	}
}

// ask sends a request of Remote's own on c, the connection of the new
// session gen, and reads c until its answer. What else the server sends
// meanwhile (a log message, a request of its own) is relayed.
func (r *Remote) ask(ctx context.Context, c mcp.Connection, gen int, method string, params json.RawMessage) (json.RawMessage, error) {
	r.mu.Lock()
	r.ownIDs++
	id, _ := jsonrpc.MakeID(fmt.Sprintf("%sresume-%d", IDPrefix, r.ownIDs))
	r.mu.Unlock()
	if err := c.Write(ctx, &jsonrpc.Request{ID: id, Method: method, Params: params}); err != nil {
		return nil, r.renewError(err)
	}
	for {
		m, err := c.Read(ctx)
		if err != nil {
			return nil, r.renewError(err)
		}
		resp, ok := m.(*jsonrpc.Response)
		switch {
		case !ok:
			r.fromServer(gen, m)
		case resp.ID != id:
			r.logf("dropped an answer to id %s on the new session, which bouncer did not send there", IDText(resp.ID))
		case resp.Error != nil:
			return nil, fmt.Errorf("the server refused %s on the new session: %s", method, r.redact(resp.Error.Error()))
		default:
			return resp.Result, nil
		}
	}
}

// renewError says why a request starting a new session failed, without
// the session id the go-sdk puts in some of its errors.
func (r *Remote) renewError(err error) error {
	switch {
	case errors.Is(err, mcp.ErrSessionMissing):
		return errors.New("the server forgot the new session at once (404 Not Found for its id)")
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("no answer within %v", renewTimeout)
	}
	return errors.New(r.redact(err.Error()))
}

// ---- the server's event stream (streamable HTTP) ----

// listenRetries bounds how often the event stream is re-opened without the
// server sending anything in between.
const listenRetries = 5

// listen keeps the server's event stream open: the GET that carries what
// the server sends outside an answer (list_changed, progress of nothing,
// requests of its own). When it drops it is re-opened, with Last-Event-ID
// when the server numbers its events, so that a server that keeps them
// sends what was missed. A server that offers no such stream (405, or
// another 4xx) is left at that; one that ended the session (404) ends it
// here too.
func (r *Remote) listen() {
	defer r.streamOpened()
	lastID := ""
	failures := 0
	delay := time.Duration(0)
	streamGen := 0 // the session lastID is of
	cancel := context.CancelFunc(func() {})
	defer func() { cancel() }()
	for {
		if delay > 0 {
			select {
			case <-time.After(delay):
			case <-r.ctx.Done():
				return
			}
		}
		// The GET's own context: a new session in place of a lost one
		// ends it (see resume).
		cancel()
		gctx, gcancel := context.WithCancel(r.ctx)
		cancel = gcancel
		req, err := http.NewRequestWithContext(gctx, http.MethodGet, r.cfg.URL, nil)
		if err != nil {
			r.logf("the server's event stream: %v", err)
			return
		}
		req.Header.Set("Accept", "text/event-stream")
		r.mu.Lock()
		gen, sid := r.gen, ""
		if r.conn != nil {
			sid = r.conn.SessionID()
		}
		r.streamCancel = cancel
		r.mu.Unlock()
		if gen != streamGen {
			// A new session's events are numbered anew.
			streamGen, lastID = gen, ""
		}
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
		}
		if lastID != "" {
			req.Header.Set("Last-Event-ID", lastID)
		}
		resp, err := r.client.Do(req)
		r.streamOpened()
		if err != nil {
			if r.ctx.Err() != nil {
				return
			}
			if gctx.Err() != nil {
				delay = 0 // ended for a new session: no failure
				continue
			}
			failures++
			if failures > listenRetries {
				r.end(&EndedError{Why: fmt.Sprintf("the remote server at %s can't be reached any more (its event stream failed %d times: %s); check that it is up, then restart the session", redactURL(r.cfg.URL), failures, r.redact(err.Error())), Err: err})
				return
			}
			delay = backoff(failures)
			continue
		}
		switch {
		case resp.StatusCode == http.StatusNotFound && sid != "":
			// The server forgot the session: the stream goes on with
			// the new one, if one is started.
			resp.Body.Close()
			select {
			case <-r.lost(gen, nil):
			case <-r.ctx.Done():
				return
			}
			select {
			case <-r.ended:
				return
			default:
			}
			lastID, failures, delay = "", 0, 0
			continue
		case resp.StatusCode >= 400 && resp.StatusCode < 500:
			// 405 is how a server says it has no such stream; other 4xx
			// are what some servers say instead.
			resp.Body.Close()
			if resp.StatusCode != http.StatusMethodNotAllowed {
				r.logf("the server at %s answered %d to the event stream's GET; notifications it sends outside an answer (list_changed among them) will not arrive", redactURL(r.cfg.URL), resp.StatusCode)
			}
			return
		case resp.StatusCode < 200 || resp.StatusCode >= 300 || !isEventStream(resp.Header.Get("Content-Type")):
			resp.Body.Close()
			failures++
			if failures > listenRetries {
				r.end(&EndedError{Why: fmt.Sprintf("the remote server at %s answered %s to its event stream %d times; check the server, then restart the session", redactURL(r.cfg.URL), resp.Status, failures)})
				return
			}
			delay = backoff(failures)
			continue
		}
		got, retry, err := r.readEvents(resp.Body, gen, &lastID)
		resp.Body.Close()
		if r.ctx.Err() != nil {
			return
		}
		if gctx.Err() != nil {
			delay = 0 // ended for a new session: no failure
			continue
		}
		if err != nil {
			r.end(err)
			return
		}
		if got {
			failures = 0
		} else {
			failures++
		}
		if failures > listenRetries {
			r.end(&EndedError{Why: fmt.Sprintf("the remote server at %s keeps closing its event stream without sending anything; check the server, then restart the session", redactURL(r.cfg.URL))})
			return
		}
		delay = backoff(max(failures, 1))
		if retry > 0 {
			delay = retry
		}
	}
}

// isEventStream reports whether a Content-Type is an event stream.
func isEventStream(ct string) bool { return mediaType(ct) == "text/event-stream" }

// backoff is the delay before the n-th retry: 0.25s doubling, at most 8s,
// so a server that is gone ends the session within about 8 seconds.
func backoff(n int) time.Duration {
	return min(250*time.Millisecond<<min(n-1, 5), 8*time.Second)
}

// readEvents reads server-sent events of session gen until the stream
// ends, delivering each message. It reports whether any event came, the retry delay the
// server asked for, and an error that ends the session (a message that is
// not JSON-RPC).
func (r *Remote) readEvents(body io.Reader, gen int, lastID *string) (got bool, retry time.Duration, err error) {
	pos := streamPos{lastID: *lastID}
	err = newEventScanner(body).messages(&pos,
		func(why string) { r.logf("dropped a message on the server's event stream: %s", why) },
		func(m jsonrpc.Message) bool { return r.fromServer(gen, m) })
	*lastID = pos.lastID
	if err != nil {
		return pos.got, pos.retry, r.notMCP(err)
	}
	return pos.got, pos.retry, nil
}

// ---- HTTP ----

// remoteTransport adds to every request what the session needs: the
// configured headers, the protocol version once negotiated, and the
// authorization; it turns a 401 nobody can answer into the end of the
// session, with a reason that says what to do.
type remoteTransport struct {
	r    *Remote
	base http.RoundTripper
}

// reservedHeaders are set by the transport; a --header can't replace them.
var reservedHeaders = map[string]bool{
	"Content-Type": true, "Accept": true, "Mcp-Session-Id": true, "Mcp-Protocol-Version": true,
	"Last-Event-Id": true, "Content-Length": true, "Host": true,
}

func (t *remoteTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	r := t.r
	if o := originOf(req.URL); o != r.origin {
		// The headers and the bearer token are for the server at --url.
		// Another origin is refused before anything is added or sent: an
		// HTTP+SSE server's endpoint event names the URL messages are
		// posted to, and a hostile one may name any host.
		return nil, fmt.Errorf("refused to send to %s: it is another origin than --url's (%s), and the session's credentials go to that one only; an HTTP+SSE server whose endpoint event names another host is not supported", o, r.origin)
	}
	req = req.Clone(req.Context())
	for k, vs := range r.cfg.Headers {
		if !reservedHeaders[http.CanonicalHeaderKey(k)] {
			req.Header[http.CanonicalHeaderKey(k)] = vs
		}
	}
	r.mu.Lock()
	version := r.version
	r.mu.Unlock()
	if version != "" && req.Header.Get("Mcp-Protocol-Version") == "" {
		req.Header.Set("Mcp-Protocol-Version", version)
	}
	resp, err := t.authorized(req, false)
	if err != nil {
		return nil, err
	}
	if req.Method == http.MethodPost {
		r.mu.Lock()
		if r.probe == 0 {
			r.probe = resp.StatusCode
		}
		r.mu.Unlock()
	}
	if resp.StatusCode == http.StatusUnauthorized {
		why := r.unauthorized(resp)
		resp.Body.Close()
		r.end(&EndedError{Why: why})
		return nil, errors.New(why)
	}
	return resp, nil
}

// authorized sends req with the authorizer's token, and on a 401 or 403
// asks it to authorize and sends req once more.
func (t *remoteTransport) authorized(req *http.Request, retry bool) (*http.Response, error) {
	h := t.r.cfg.Auth
	if h != nil {
		ts, err := h.TokenSource(req.Context())
		if err != nil {
			return nil, fmt.Errorf("authorization: %w", err)
		}
		if ts != nil {
			if tok, err := ts.Token(); err == nil && tok != nil && tok.AccessToken != "" {
				req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
			}
		}
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil || h == nil || retry {
		return resp, err
	}
	if resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden {
		return resp, nil
	}
	if err := h.Authorize(req.Context(), req, resp); err != nil {
		return nil, fmt.Errorf("the remote server asks for authorization, and it failed: %w", err)
	}
	again := req.Clone(req.Context())
	if req.Body != nil && req.GetBody != nil {
		if again.Body, err = req.GetBody(); err != nil {
			return nil, err
		}
	}
	return t.authorized(again, true)
}

// unauthorized says why a 401 ends the session, and what the user can do.
func (r *Remote) unauthorized(resp *http.Response) string {
	where := redactURL(r.cfg.URL)
	if r.cfg.Auth != nil {
		return fmt.Sprintf("the remote server at %s refused the authorization bouncer obtained for it (401 Unauthorized); authorize again", where)
	}
	if len(r.cfg.Headers.Values("Authorization")) > 0 {
		return fmt.Sprintf("the remote server at %s refused the credentials given in the Authorization header (401 Unauthorized); check the token (and that its ${VAR} is set where the client starts bouncer)", where)
	}
	challenge := resp.Header.Get("WWW-Authenticate")
	if strings.HasPrefix(strings.ToLower(challenge), "bearer") {
		return fmt.Sprintf("the remote server at %s asks for OAuth (401 Unauthorized, WWW-Authenticate: %s), and bouncer could not sign in to it (bouncer's stderr says why); give a token with --header-file FILE (a line \"Authorization: Bearer TOKEN\", mode 0600), with --header 'Authorization: Bearer ${TOKEN}' (bouncer expands it), or in the entry's headers", where, r.redact(challenge))
	}
	return fmt.Sprintf("the remote server at %s asks for credentials (401 Unauthorized); give them with --header-file FILE (mode 0600), --header 'Name: ${VAR}' (bouncer expands it), or in the entry's headers", where)
}

// originOf is u's origin as a browser compares it: scheme and host in
// lower case, the port always written (the scheme's default if none).
func originOf(u *url.URL) string {
	if u == nil {
		return ""
	}
	scheme := strings.ToLower(u.Scheme)
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[scheme]
	}
	return scheme + "://" + net.JoinHostPort(strings.ToLower(strings.TrimSuffix(u.Hostname(), ".")), port)
}

// ---- secrets ----

// secretsOf lists what must never be shown: every header value (and each
// word of it, so "Bearer TOKEN" hides TOKEN wherever it appears alone),
// and the URL's password and query values.
func secretsOf(cfg RemoteConfig) []string {
	seen := map[string]bool{}
	var out []string
	add := func(s string) {
		s = strings.TrimSpace(s)
		if len(s) >= 4 && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	for _, vs := range cfg.Headers {
		for _, v := range vs {
			for _, p := range secret.HeaderParts(v) {
				add(p)
			}
		}
	}
	if u, err := url.Parse(cfg.URL); err == nil {
		if p, ok := u.User.Password(); ok {
			add(p)
		}
		for _, vs := range u.Query() {
			for _, v := range vs {
				add(v)
			}
		}
	}
	// Longest first, so a value is hidden whole before a part of it.
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}

// redact hides every secret in s.
func (r *Remote) redact(s string) string {
	for _, sec := range r.secrets {
		s = strings.ReplaceAll(s, sec, "[redacted]")
	}
	return s
}

// redactURL is a URL without its user information and query, for
// messages: either may hold a token.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(the URL given)"
	}
	out := u.Scheme + "://" + u.Host + u.EscapedPath()
	if u.RawQuery != "" {
		out += "?…"
	}
	return out
}
