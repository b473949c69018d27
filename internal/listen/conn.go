package listen

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/bouncer-mcp/bouncer/internal/transport"
)

// conn is the client side of one MCP session over streamable HTTP: what
// the client POSTs is read by the pump, and what the pump writes goes on
// an HTTP response that is open. It is bouncer listen's own server
// transport rather than the go-sdk's StreamableServerTransport, whose
// Write sends a server→client message on the POST stream of the request
// it is about only when the context carries an unexported key that only
// the go-sdk's own Server sets; written by a pump, every such message
// would go to the GET stream, which some clients never open, and a
// question about a held call would never be seen (docs/listen.md, "The
// spike"). conn routes each message it is given:
//
//   - an answer goes on the stream of the POST that carried its request,
//     and only there (as that POST's JSON response when it is all there
//     is to send: see stream.send); an answer nothing awaits is dropped
//     (a request is answered exactly once);
//   - a message about a request (transport.WithRelated: the pump's
//     question about a call it holds) goes on that request's stream, and a
//     notifications/progress on the stream of the request that set its
//     progressToken;
//   - anything else (the upstream's sampling, elicitation, logs, list
//     changes) goes on the stream of the one request in flight when there
//     is one (the upstream's request is then about it: a server asks in
//     the course of a call), else on the GET stream when the client opened
//     one, else on the oldest POST stream still open, else it waits, in a
//     bounded backlog, for the next stream the client opens.
//
// A POST stream ends once every request it carried is answered (or
// cancelled by the client). Streams are not resumable (no event ids): a
// client that loses one loses what was on it, as over stdio.
//
// The pump reads and writes through a view (see view): a session outlives
// the upstream it started with, and each upstream gets a pump of its own
// on the same conn.
type conn struct {
	id string
	// writeTimeout bounds each write to a stream: a client that stops
	// reading loses that stream, not the session's other streams.
	writeTimeout time.Duration

	mu    sync.Mutex
	queue []jsonrpc.Message // read from POSTs, not yet read by the pump
	// held is what the listener holds of what the client posted, in
	// weight's bytes: the messages in queue, and the requests read from it
	// still owed an answer (owed: each one's weight). It is bounded by
	// maxHeldBytes (see post).
	held   int
	owed   map[jsonrpc.ID]int
	wake   chan struct{} // signalled (cap 1) when queue grows or a view closes
	closed bool
	done   chan struct{} // closed by close
	// init is the client's initialize request, replayed to an upstream
	// started in place of one that crashed (see view).
	init *jsonrpc.Request
	// version is the protocol version the answer to init settled ("" until
	// it is answered).
	version string
	// streams is the POST stream each request in flight came on.
	streams map[jsonrpc.ID]*stream
	// open lists the POST streams with requests in flight, oldest first.
	open []*stream
	// get is the client's GET stream, if it opened one.
	get *stream
	// tokens maps a progressToken (as JSON) to the request that set it.
	tokens map[string]jsonrpc.ID
	// backlog holds messages no stream could take, for the next one.
	backlog     [][]byte
	backlogSize int
	// active counts the HTTP requests being served; lastActive is when
	// the last one ended (see idle).
	active     int
	lastActive time.Time
	// reader is the view the pump reads through; earlier views read EOF.
	reader *view
}

// Backlog bounds: what waits for a stream the client has yet to open.
const (
	maxBacklog      = 256
	maxBacklogBytes = 8 << 20
)

// maxHeldBytes bounds what the listener holds of what a session's client
// posted: the messages its pump has yet to read, and the requests still
// owed an answer (each holds its body, in the pump and in its POST,
// until it is answered). A notification is answered 202 once queued, and
// a call the upstream never answers (a slow tool, a question nobody
// answers) holds its POST, so without it a client could make the listener
// hold as much as it can send. Past it, a POST is refused (errTooMuchHeld)
// unless nothing is held: one body, however large the limit on bodies,
// always gets through.
const maxHeldBytes = 32 << 20

// MaxInFlight bounds a session's requests awaiting answers. Each costs
// more than its bytes: a call held for a human keeps a question, a
// goroutine and a timer for as long as the question waits, and a small
// body can carry many (a batch). A POST that would pass it is refused
// whole (errTooManyInFlight).
const MaxInFlight = 128

// weight is what a message holds in the listener: its payload and the
// message itself (so that a batch of tiny notifications counts too).
func weight(m jsonrpc.Message) int {
	switch m := m.(type) {
	case *jsonrpc.Request:
		return 128 + len(m.Method) + len(m.Params)
	case *jsonrpc.Response:
		return 128 + len(m.Result)
	}
	return 128
}

func newConn(id string, writeTimeout time.Duration) *conn {
	return &conn{
		id:           id,
		writeTimeout: writeTimeout,
		wake:         make(chan struct{}, 1),
		done:         make(chan struct{}),
		streams:      map[jsonrpc.ID]*stream{},
		tokens:       map[string]jsonrpc.ID{},
		owed:         map[jsonrpc.ID]int{},
		lastActive:   time.Now(),
	}
}

// stream is one open HTTP response carrying server-sent events: a POST's
// (its requests' answers and what is about them) or the GET stream.
type stream struct {
	mu       sync.Mutex
	w        http.ResponseWriter
	rc       *http.ResponseController
	started  bool          // headers written
	pending  int           // requests on it still owed an answer (POST)
	finished chan struct{} // closed when pending reaches 0
	dead     bool          // the request ended or a write failed: nothing more is written
	timeout  time.Duration
	// sessionID is set as Mcp-Session-Id on the stream of the
	// initialize.
	sessionID string
}

func newStream(w http.ResponseWriter, pending int, timeout time.Duration) *stream {
	return &stream{w: w, rc: http.NewResponseController(w), pending: pending, finished: make(chan struct{}), timeout: timeout}
}

// start writes the headers of an event stream. s.mu is held.
func (s *stream) startLocked() {
	if s.started {
		return
	}
	s.started = true
	h := s.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache, no-transform")
	h.Set("X-Accel-Buffering", "no") // nginx: pass events as they come
	if s.sessionID != "" {
		h.Set(sessionHeader, s.sessionID)
	}
	s.w.WriteHeader(http.StatusOK)
}

// send writes one message; answer says it answers one of the stream's
// requests. It reports whether the message was written.
//
// The answer to a POST's only request, when nothing came before it, is
// the whole response, as application/json (the transport lets a server
// answer a POST either way): no event framing, one write of a body whose
// length is known, where a stream takes a flush per event and another
// write to end it. Anything sent before the answer (a question about the
// call, progress) makes the response an event stream.
func (s *stream) send(answer bool, data ...[]byte) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ok bool
	if answer && s.pending == 1 && !s.started && !s.dead {
		ok = s.writeJSONLocked(data...)
	} else {
		ok = s.writeLocked(data...)
	}
	if answer && s.pending > 0 {
		s.pending--
		if s.pending == 0 {
			close(s.finished)
		}
	}
	return ok
}

// writeLocked writes one event, whose data is the parts of data joined.
// s.mu is held.
func (s *stream) writeLocked(data ...[]byte) bool {
	if s.dead {
		return false
	}
	s.startLocked()
	_ = s.rc.SetWriteDeadline(time.Now().Add(s.timeout))
	buf := make([]byte, 0, partsLen(data)+32)
	buf = append(buf, "event: message\ndata: "...)
	for _, d := range data {
		buf = append(buf, d...)
	}
	buf = append(buf, '\n', '\n')
	if _, err := s.w.Write(buf); err != nil {
		s.dead = true
		return false
	}
	if err := s.rc.Flush(); err != nil {
		s.dead = true
		return false
	}
	return true
}

// writeJSONLocked writes data's parts as the whole response, as JSON;
// nothing more can go on the stream. It is not flushed: the handler
// returns once the answer is written, and net/http sends it whole (a
// large part straight from where it is). s.mu is held.
func (s *stream) writeJSONLocked(data ...[]byte) bool {
	s.started, s.dead = true, true
	h := s.w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(partsLen(data))) // not chunked, however long
	if s.sessionID != "" {
		h.Set(sessionHeader, s.sessionID)
	}
	_ = s.rc.SetWriteDeadline(time.Now().Add(s.timeout))
	s.w.WriteHeader(http.StatusOK)
	for _, d := range data {
		if _, err := s.w.Write(d); err != nil {
			return false
		}
	}
	return true
}

// partsLen is the length of data's parts joined.
func partsLen(data [][]byte) int {
	n := 0
	for _, d := range data {
		n += len(d)
	}
	return n
}

// release is called when a request's answer will never come (the client
// cancelled it).
func (s *stream) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pending > 0 {
		s.pending--
		if s.pending == 0 {
			close(s.finished)
		}
	}
}

// end marks the stream over: its HTTP handler is returning, and the
// response writer must not be touched again.
func (s *stream) end() {
	s.mu.Lock()
	s.dead = true
	s.mu.Unlock()
}

// ---- the pump's side ----

// view is the mcp.Connection one pump reads and writes the session
// through. A session outlives its upstream: when the upstream crashes, the
// pump over it ends (closing its view) and a new pump, over a new
// upstream, gets a new view, which first replays the client's initialize
// (under an id of its own, whose answer it keeps) and
// notifications/initialized, so that the new upstream is initialized as
// the first was and the new pump takes its pin, before the client's next
// message.
type view struct {
	c      *conn
	closed bool // guarded by c.mu
	// upGone is set (guarded by c.mu) once the upstream under this view's
	// pump has ended: the client's messages from then on are left for the
	// next view, over the upstream started in its place, instead of
	// reaching a pump that can only answer that its upstream is gone.
	upGone bool
	replay []jsonrpc.Message
	// initID is the id of the replayed initialize; its answer goes to
	// reinit, not to the client.
	initID jsonrpc.ID
	reinit chan *jsonrpc.Response
}

var _ interface {
	Read(context.Context) (jsonrpc.Message, error)
	Write(context.Context, jsonrpc.Message) error
	Close() error
	SessionID() string
} = (*view)(nil)

// newView makes the view of the session's next pump. A replaying view
// (after a crash) starts with the client's initialize again.
func (c *conn) newView(replay bool) (*view, error) {
	v := &view{c: c}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.reader != nil {
		c.reader.closed = true
	}
	c.reader = v
	c.signalLocked()
	if replay {
		if c.init == nil {
			return nil, errors.New("the client has not initialized the session")
		}
		id, _ := jsonrpc.MakeID("listen-reinit-" + randomText(16))
		v.initID, v.reinit = id, make(chan *jsonrpc.Response, 1)
		v.replay = []jsonrpc.Message{
			&jsonrpc.Request{ID: id, Method: c.init.Method, Params: c.init.Params},
			&jsonrpc.Request{Method: "notifications/initialized"},
		}
	}
	return v, nil
}

func (c *conn) signalLocked() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// Read returns the client's next message. It returns io.EOF once the
// session is closed, or this view is replaced.
func (v *view) Read(ctx context.Context) (jsonrpc.Message, error) {
	c := v.c
	for {
		c.mu.Lock()
		switch {
		case v.closed:
			c.mu.Unlock()
			return nil, io.EOF
		case len(v.replay) > 0:
			m := v.replay[0]
			v.replay = v.replay[1:]
			c.mu.Unlock()
			return m, nil
		case c.closed:
			// What the pump has not read when the session ends was never
			// judged, and its requests are answered that the session
			// ended (see end): it is dropped, not judged and forwarded
			// after the client was told it was not.
			c.mu.Unlock()
			return nil, io.EOF
		case v.upGone:
			// Nothing more for this pump: it ends as its upstream did
			// (its context is cancelled then).
			c.mu.Unlock()
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-c.done:
				return nil, io.EOF
			}
		case len(c.queue) > 0:
			m := c.queue[0]
			c.queue[0] = nil
			c.queue = c.queue[1:]
			if r, ok := m.(*jsonrpc.Request); !ok || !r.IsCall() {
				c.held -= weight(m) // a request is held until answered
			}
			c.mu.Unlock()
			return m, nil
		}
		c.mu.Unlock()
		select {
		case <-c.wake:
			// Pass the wake on: another view may be waiting too.
			c.mu.Lock()
			if len(c.queue) > 0 || c.closed {
				c.signalLocked()
			}
			c.mu.Unlock()
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// Write sends a message to the client (see conn for where it goes).
func (v *view) Write(ctx context.Context, m jsonrpc.Message) error {
	if r, ok := m.(*jsonrpc.Response); ok && v.reinit != nil && r.ID == v.initID {
		select {
		case v.reinit <- r:
		default:
		}
		return nil
	}
	return v.c.write(ctx, m)
}

// upstreamEnded says the upstream under this view's pump has ended (see
// upGone).
func (v *view) upstreamEnded() {
	v.c.mu.Lock()
	v.upGone = true
	v.c.mu.Unlock()
}

// Close ends this view (the pump over it is done); the session goes on.
func (v *view) Close() error {
	v.c.mu.Lock()
	v.closed = true
	v.c.signalLocked()
	v.c.mu.Unlock()
	return nil
}

// SessionID is the MCP session's id.
func (v *view) SessionID() string { return v.c.id }

// InBatch implements the pump's answer book: every request gets its answer
// as an event of its own, so none waits for another's.
func (v *view) InBatch(jsonrpc.ID) bool { return false }

// Release takes a request the client cancelled off its stream: it will get
// no answer, and its stream ends if nothing else is owed on it.
func (v *view) Release(id jsonrpc.ID) bool {
	c := v.c
	c.mu.Lock()
	s := c.streams[id]
	c.forgetLocked(id)
	c.mu.Unlock()
	if s != nil {
		s.release()
	}
	return false
}

// forgetLocked drops request id from the routing tables. c.mu is held.
func (c *conn) forgetLocked(id jsonrpc.ID) {
	delete(c.streams, id)
	if w, ok := c.owed[id]; ok {
		c.held -= w
		delete(c.owed, id)
	}
	for tok, rid := range c.tokens {
		if rid == id {
			delete(c.tokens, tok)
		}
	}
}

func (c *conn) write(ctx context.Context, m jsonrpc.Message) error {
	if r, ok := m.(*jsonrpc.Response); ok {
		// An answer is written in parts: a large result as it was read.
		parts, err := transport.EncodeResponse(r)
		if err != nil {
			return fmt.Errorf("encoding a message for the client: %w", err)
		}
		c.mu.Lock()
		s := c.streams[r.ID]
		c.forgetLocked(r.ID)
		if s != nil && c.init != nil && r.ID == c.init.ID && c.version == "" {
			c.version = settledVersion(r)
		}
		c.mu.Unlock()
		if s == nil {
			return fmt.Errorf("no request with id %s is awaiting an answer, so this answer was dropped", transport.IDText(r.ID))
		}
		if !s.send(true, parts...) {
			return fmt.Errorf("the answer to %s was lost: the client closed the POST it came on", transport.IDText(r.ID))
		}
		return nil
	}
	data, err := transport.EncodeMessage(m)
	if err != nil {
		return fmt.Errorf("encoding a message for the client: %w", err)
	}
	req := m.(*jsonrpc.Request)
	for {
		c.mu.Lock()
		s := c.routeLocked(ctx, req)
		if s == nil {
			if c.closed {
				c.mu.Unlock()
				return errors.New("the session is closed")
			}
			if len(c.backlog) >= maxBacklog || c.backlogSize+len(data) > maxBacklogBytes {
				c.mu.Unlock()
				return fmt.Errorf("%s dropped: the client has no stream open and %d messages already wait for one", req.Method, len(c.backlog))
			}
			c.backlog = append(c.backlog, data)
			c.backlogSize += len(data)
			c.mu.Unlock()
			return nil
		}
		c.mu.Unlock()
		if s.send(false, data) {
			return nil
		}
		// That stream ended under us: route again.
		c.mu.Lock()
		c.dropStreamLocked(s)
		c.mu.Unlock()
	}
}

// routeLocked picks the stream for a request or notification (see conn).
// c.mu is held.
func (c *conn) routeLocked(ctx context.Context, m *jsonrpc.Request) *stream {
	if id, ok := transport.Related(ctx); ok {
		if s := c.streams[id]; s != nil && !s.isDead() {
			return s
		}
	}
	if m.Method == "notifications/progress" {
		if tok := progressToken(m.Params); tok != "" {
			if id, ok := c.tokens[tok]; ok {
				if s := c.streams[id]; s != nil && !s.isDead() {
					return s
				}
			}
		}
	}
	live := c.open[:0:0]
	for _, s := range c.open {
		if !s.isDead() {
			live = append(live, s)
		}
	}
	switch {
	case len(live) == 1:
		return live[0]
	case c.get != nil && !c.get.isDead():
		return c.get
	case len(live) > 0:
		return live[0]
	}
	return nil
}

func (s *stream) isDead() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dead
}

// dropStreamLocked forgets a stream that ended. c.mu is held.
func (c *conn) dropStreamLocked(s *stream) {
	for i, o := range c.open {
		if o == s {
			c.open = append(c.open[:i:i], c.open[i+1:]...)
			break
		}
	}
	if c.get == s {
		c.get = nil
	}
}

// progressToken returns params._meta.progressToken as JSON, or "".
func progressToken(params json.RawMessage) string {
	if !bytes.Contains(params, []byte(`"progressToken"`)) {
		return ""
	}
	var p struct {
		Meta struct {
			Token json.RawMessage `json:"progressToken"`
		} `json:"_meta"`
	}
	if json.Unmarshal(params, &p) != nil {
		return ""
	}
	return string(bytes.TrimSpace(p.Meta.Token))
}

// close ends the session (see end).
func (c *conn) close() { c.end("the session has ended") }

// end ends the session, saying why: every request still owed an answer
// gets a JSON-RPC error naming why on its stream, rather than a stream cut
// short (the pump's own answers come too late: its streams end with the
// session), then the pump reads EOF, without what it had yet to read, and
// every open stream's handler returns. The answers are written in the background: a client that stopped
// reading holds them up for the write timeout, not the caller.
func (c *conn) end(why string) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	clear(c.queue) // never read by the pump: see view.Read
	c.queue, c.held, c.owed = nil, 0, map[jsonrpc.ID]int{}
	owed := c.streams
	c.streams, c.tokens = map[jsonrpc.ID]*stream{}, map[string]jsonrpc.ID{}
	c.signalLocked()
	c.mu.Unlock()
	if len(owed) == 0 {
		close(c.done)
		return
	}
	go func() {
		defer close(c.done)
		for id, s := range owed {
			data, err := transport.EncodeMessage(&jsonrpc.Response{ID: id, Error: &jsonrpc.Error{
				Code: jsonrpc.CodeInternalError, Message: "bouncer: " + why + "; initialize a new session"}})
			if err == nil {
				s.send(true, data)
			}
		}
	}()
}

// settledVersion is the protocolVersion of an answer to initialize, or ""
// for an error or an answer without one.
func settledVersion(r *jsonrpc.Response) string {
	var res struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if r.Error != nil || json.Unmarshal(r.Result, &res) != nil {
		return ""
	}
	return res.ProtocolVersion
}

// protocolVersion is the version the session's initialize settled, or ""
// before it is answered.
func (c *conn) protocolVersion() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.version
}

// isClosed reports whether the session is closed (or closing: see end).
func (c *conn) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// ---- the client's side ----

// enter and leave bracket each HTTP request the session serves, for the
// idle timeout.
func (c *conn) enter() {
	c.mu.Lock()
	c.active++
	c.mu.Unlock()
}

func (c *conn) leave() {
	c.mu.Lock()
	c.active--
	c.lastActive = time.Now()
	c.mu.Unlock()
}

// idleSince reports whether the session has served no request since t.
func (c *conn) idleSince(t time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.active == 0 && c.lastActive.Before(t)
}

// errInFlight is post's refusal of a request whose id is in flight.
type errInFlight struct{ id jsonrpc.ID }

func (e errInFlight) Error() string {
	return fmt.Sprintf("request id %s is still awaiting its answer; an id can't be used again until then", transport.IDText(e.id))
}

// post takes the messages of one POST (already decoded and checked). With
// no request among them it returns at once (the caller answers 202);
// otherwise it streams their answers, and what is about them, on w until
// every request is answered, the client goes, or the session ends.
// sessionID, when set, is sent as Mcp-Session-Id (the initialize's POST).
func (c *conn) post(ctx context.Context, w http.ResponseWriter, msgs []jsonrpc.Message, sessionID string) error {
	var calls []jsonrpc.ID
	for _, m := range msgs {
		if r, ok := m.(*jsonrpc.Request); ok && r.IsCall() {
			calls = append(calls, r.ID)
		}
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return errSessionGone
	}
	for _, id := range calls {
		if _, dup := c.streams[id]; dup {
			c.mu.Unlock()
			return errInFlight{id}
		}
	}
	if len(c.streams)+len(calls) > MaxInFlight {
		c.mu.Unlock()
		return errTooManyInFlight
	}
	total := 0
	for _, m := range msgs {
		total += weight(m)
	}
	if c.held > 0 && c.held+total > maxHeldBytes {
		c.mu.Unlock()
		return errTooMuchHeld
	}
	c.held += total
	var s *stream
	if len(calls) > 0 {
		s = newStream(w, len(calls), c.writeTimeout)
		s.sessionID = sessionID
		for _, id := range calls {
			c.streams[id] = s
		}
		c.open = append(c.open, s)
	}
	for _, m := range msgs {
		if r, ok := m.(*jsonrpc.Request); ok {
			if r.IsCall() {
				c.owed[r.ID] = weight(r)
				if tok := progressToken(r.Params); tok != "" {
					c.tokens[tok] = r.ID
				}
			}
			if r.Method == "initialize" && r.IsCall() {
				c.init = r
			}
		}
		c.queue = append(c.queue, m)
	}
	backlog := c.takeBacklogLocked(s)
	c.signalLocked()
	c.mu.Unlock()
	if s == nil {
		return nil
	}
	s.mu.Lock()
	for _, data := range backlog {
		s.writeLocked(data)
	}
	s.mu.Unlock()
	select {
	case <-s.finished:
	case <-ctx.Done():
	case <-c.done:
	}
	s.end()
	c.mu.Lock()
	c.dropStreamLocked(s)
	c.mu.Unlock()
	return nil
}

// takeBacklogLocked hands the backlog to a stream that opens. c.mu is
// held.
func (c *conn) takeBacklogLocked(s *stream) [][]byte {
	if s == nil || len(c.backlog) == 0 {
		return nil
	}
	b := c.backlog
	c.backlog, c.backlogSize = nil, 0
	return b
}

// errSessionGone is post's and listen's answer for a closed session.
var errSessionGone = errors.New("the session has ended")

// errTooManyInFlight is post's refusal when the session's requests
// awaiting answers would pass MaxInFlight.
var errTooManyInFlight = fmt.Errorf("this session already has requests awaiting answers, and at most %d may be", MaxInFlight)

// errTooMuchHeld is post's refusal when the listener holds maxHeldBytes
// of what the session's client posted before.
var errTooMuchHeld = fmt.Errorf("this session already has %d MiB of messages not yet taken by its server or requests not yet answered", maxHeldBytes>>20)

// getStream serves the client's GET stream until the client goes or the
// session ends. A second GET while one is open is refused (409).
func (c *conn) getStream(ctx context.Context, w http.ResponseWriter) error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return errSessionGone
	}
	if c.get != nil && !c.get.isDead() {
		c.mu.Unlock()
		return errStreamOpen
	}
	s := newStream(w, 0, c.writeTimeout)
	c.get = s
	backlog := c.takeBacklogLocked(s)
	c.mu.Unlock()
	s.mu.Lock()
	s.startLocked()
	// A comment line, so that headers reach a client behind a proxy that
	// holds them until the first bytes (the go-sdk does the same).
	_, _ = io.WriteString(w, ": ok\n\n")
	_ = s.rc.Flush()
	for _, data := range backlog {
		s.writeLocked(data)
	}
	s.mu.Unlock()
	select {
	case <-ctx.Done():
	case <-c.done:
	}
	s.end()
	c.mu.Lock()
	c.dropStreamLocked(s)
	c.mu.Unlock()
	return nil
}

var errStreamOpen = errors.New("a GET stream is already open for this session")
