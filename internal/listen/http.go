package listen

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/bouncer-mcp/bouncer/internal/transport"
)

// Edge is the HTTP edge's checks and limits.
type Edge struct {
	// Hosts are the Host header values accepted (DNS rebinding: a page
	// that resolves its own name to this address is refused). A value is
	// a host name or address, without the port; "*" accepts any (behind a
	// proxy that checks Host itself).
	Hosts []string
	// Origins are the Origin header values accepted from browsers
	// (scheme://host[:port]); a request without Origin is not a browser's
	// and is let through.
	Origins []string
	// MaxBody bounds a POST's body; beyond it, 413.
	MaxBody int64
	// WriteTimeout bounds each write of an event to a client.
	WriteTimeout time.Duration
	// ReadHeaderTimeout bounds the wait for a request's headers, and
	// ReadTimeout for a whole request (headers and body).
	ReadHeaderTimeout, ReadTimeout time.Duration
}

// Defaults of Edge.
const (
	DefaultMaxBody           = 4 << 20
	DefaultWriteTimeout      = 30 * time.Second
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultReadTimeout       = 60 * time.Second
)

func (e *Edge) defaults() {
	if e.MaxBody <= 0 {
		e.MaxBody = DefaultMaxBody
	}
	if e.WriteTimeout <= 0 {
		e.WriteTimeout = DefaultWriteTimeout
	}
	if e.ReadHeaderTimeout <= 0 {
		e.ReadHeaderTimeout = DefaultReadHeaderTimeout
	}
	if e.ReadTimeout <= 0 {
		e.ReadTimeout = DefaultReadTimeout
	}
}

// LoopbackHosts are the Host names accepted by default on a loopback
// address.
var LoopbackHosts = []string{"localhost", "127.0.0.1", "::1"}

// hostOK reports whether the request's Host is one the listener serves.
func (e *Edge) hostOK(r *http.Request) bool {
	if slices.Contains(e.Hosts, "*") {
		return true
	}
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	for _, h := range e.Hosts {
		if strings.EqualFold(strings.Trim(h, "[]"), host) {
			return true
		}
	}
	return false
}

// originOK reports whether the request's Origin, if it has one, is
// allowed: compared as scheme://host:port, exactly.
func (e *Edge) originOK(r *http.Request) bool {
	o := r.Header.Values("Origin")
	if len(o) == 0 {
		return true
	}
	if len(o) > 1 {
		return false
	}
	got, ok := canonOrigin(o[0])
	if !ok {
		return false
	}
	for _, a := range e.Origins {
		if want, ok := canonOrigin(a); ok && want == got {
			return true
		}
	}
	return false
}

// canonOrigin is an origin as scheme://host:port, the port written out.
func canonOrigin(s string) (string, bool) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" && u.Path != "/" || u.User != nil {
		return "", false
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	return u.Scheme + "://" + net.JoinHostPort(strings.ToLower(u.Hostname()), port), true
}

// Handler serves the MCP endpoints (/servers/NAME/mcp, and /mcp when there
// is one server), /livez and /readyz, the protected resource metadata when
// the authenticator has some, and the user's approval codes
// (/approvals).
func (l *Listener) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /livez", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok\n") })
	mux.HandleFunc("GET /readyz", l.serveReady)
	if md, ok := l.opts.Auth.(metadataServer); ok {
		for path, h := range md.MetadataHandlers() {
			mux.Handle(path, h)
		}
	}
	for name, b := range l.backends {
		mux.Handle("/servers/"+name+"/mcp", l.endpoint(b))
	}
	if len(l.backends) == 1 {
		for _, b := range l.backends {
			mux.Handle("/mcp", l.endpoint(b))
		}
	}
	mux.Handle("/approvals", l.guard(http.HandlerFunc(l.serveApprovals)))
	mux.Handle("/approvals/", l.guard(http.HandlerFunc(l.serveApprovals)))
	return mux
}

// metadataServer is an Authenticator that serves metadata of its own
// (OAuth's RFC 9728 document).
type metadataServer interface {
	MetadataHandlers() map[string]http.Handler
}

// serveReady answers 200 when the listener can take sessions: every
// server pinned, the audit log writable, not draining.
func (l *Listener) serveReady(w http.ResponseWriter, r *http.Request) {
	var why []string
	if l.draining.Load() {
		why = append(why, "draining")
	}
	for _, b := range l.backends {
		if !b.pin.taken() {
			why = append(why, fmt.Sprintf("server %q not pinned", b.Name))
		}
	}
	if l.opts.AuditWritable != nil {
		if err := l.opts.AuditWritable(); err != nil {
			why = append(why, "audit log: "+err.Error())
		}
	}
	if len(why) > 0 {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, strings.Join(why, "\n")+"\n")
		return
	}
	io.WriteString(w, "ok\n")
}

// statusWriter notes the status of a response, for the metrics.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// userKey is the context key of the authenticated user.
type userKey struct{}

// guard checks Host and Origin, then authenticates: every endpoint but the
// probes and the public metadata goes through it.
func (l *Listener) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w}
		defer func() { l.metrics.response(sw.status) }()
		if !l.opts.Edge.hostOK(r) {
			http.Error(sw, "Forbidden: this Host is not served here (DNS rebinding protection); the operator lists the names clients use in x-bouncer-listen.hosts", http.StatusForbidden)
			return
		}
		if !l.opts.Edge.originOK(r) {
			http.Error(sw, "Forbidden: requests from this Origin are not accepted (x-bouncer-listen.origins lists those that are)", http.StatusForbidden)
			return
		}
		user, err := l.opts.Auth.Authenticate(r)
		if err != nil {
			l.opts.Auth.Challenge(sw, r, err)
			return
		}
		next.ServeHTTP(sw, r.WithContext(context.WithValue(r.Context(), userKey{}, user)))
	})
}

// endpoint serves one server's MCP endpoint.
func (l *Listener) endpoint(b *backend) http.Handler {
	return l.guard(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user := r.Context().Value(userKey{}).(string)
		switch r.Method {
		case http.MethodPost:
			l.servePOST(w, r, user, b)
		case http.MethodGet:
			l.serveGET(w, r, user, b)
		case http.MethodDelete:
			l.serveDELETE(w, r, user, b)
		default:
			w.Header().Set("Allow", "GET, POST, DELETE")
			http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
		}
	}))
}

// supportedVersions are the protocol versions a session may be at (the
// MCP-Protocol-Version header).
var supportedVersions = []string{"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"}

// maxVersion is the newest: the last initialize-based version.
const maxVersion = "2025-11-25"

// versionOK checks the MCP-Protocol-Version header, if any.
func versionOK(w http.ResponseWriter, r *http.Request) bool {
	v := r.Header.Values("Mcp-Protocol-Version")
	if len(v) == 0 {
		return true
	}
	if len(v) == 1 && slices.Contains(supportedVersions, v[0]) {
		return true
	}
	http.Error(w, fmt.Sprintf("Bad Request: unsupported MCP-Protocol-Version; this server speaks %s", strings.Join(supportedVersions, ", ")), http.StatusBadRequest)
	return false
}

// accepts reports whether the Accept header admits every media type given.
func accepts(r *http.Request, types ...string) bool {
	have := map[string]bool{}
	for _, v := range r.Header.Values("Accept") {
		for _, part := range strings.Split(v, ",") {
			mt, _, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err == nil {
				have[mt] = true
			}
		}
	}
	if have["*/*"] {
		return true
	}
	for _, t := range types {
		if !have[t] && !have[strings.SplitN(t, "/", 2)[0]+"/*"] {
			return false
		}
	}
	return true
}

// session finds the request's session: 404 for an unknown id or another
// user's, alike.
func (l *Listener) session(w http.ResponseWriter, r *http.Request, user string, b *backend) *Session {
	ids := r.Header.Values(sessionHeader)
	if len(ids) != 1 {
		http.Error(w, "Bad Request: give the Mcp-Session-Id of your session (or initialize a new one)", http.StatusBadRequest)
		return nil
	}
	s := l.lookup(user, b.Name, ids[0])
	if s == nil {
		http.Error(w, "Not Found: no such session; initialize a new one", http.StatusNotFound)
		return nil
	}
	return s
}

func (l *Listener) servePOST(w http.ResponseWriter, r *http.Request, user string, b *backend) {
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		http.Error(w, "Unsupported Media Type: POST application/json", http.StatusUnsupportedMediaType)
		return
	}
	if !accepts(r, "application/json", "text/event-stream") {
		http.Error(w, "Not Acceptable: accept both application/json and text/event-stream", http.StatusNotAcceptable)
		return
	}
	hasSession := len(r.Header.Values(sessionHeader)) > 0
	if hasSession && !versionOK(w, r) {
		// Before a session there is no version yet: a later protocol's
		// first request is answered by initialize below.
		return
	}
	tooLarge := func() {
		// The connection is closed after the answer rather than kept by
		// reading the rest of the body: that is the sender's to pay for.
		w.Header().Set("Connection", "close")
		http.Error(w, fmt.Sprintf("Request Entity Too Large: a message may be at most %d bytes here", l.opts.Edge.MaxBody), http.StatusRequestEntityTooLarge)
	}
	if r.ContentLength > l.opts.Edge.MaxBody {
		tooLarge() // said so up front: nothing of it is read
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, l.opts.Edge.MaxBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			tooLarge()
			return
		}
		http.Error(w, "Bad Request: the body could not be read", http.StatusBadRequest)
		return
	}
	msgs, batch, refusal := decodeBody(body)
	if refusal != nil {
		refusal(w)
		return
	}
	var sess *Session
	if hasSession {
		if sess = l.session(w, r, user, b); sess == nil {
			return
		}
	} else {
		sess = l.initialize(w, r, user, b, msgs, batch)
		if sess == nil {
			return
		}
	}
	if hasSession && hasCall(msgs) && l.draining.Load() {
		// Calls in flight finish; new ones go to another replica (the
		// client initializes again there). Answers and notifications
		// (a human's yes to a held call among them) are still taken.
		http.Error(w, "Not Found: this replica is shutting down; initialize a new session", http.StatusNotFound)
		return
	}
	if batch {
		// The session's version is the one its initialize settled; the
		// header, which a client may leave out, only counts before that.
		v := sess.conn.protocolVersion()
		if v == "" {
			v = r.Header.Get("Mcp-Protocol-Version")
		}
		if v >= "2025-06-18" {
			http.Error(w, "Bad Request: JSON-RPC batches are not part of MCP after 2025-03-26", http.StatusBadRequest)
			return
		}
	}
	sess.conn.enter()
	defer sess.conn.leave()
	start := time.Now()
	sid := ""
	if !hasSession {
		sid = sess.id
	}
	err = sess.conn.post(r.Context(), w, msgs, sid)
	var dup errInFlight
	switch {
	case errors.As(err, &dup):
		jsonrpcError(w, http.StatusBadRequest, dup.id, jsonrpc.CodeInvalidRequest, "bouncer: invalid request: "+dup.Error())
	case errors.Is(err, errTooMuchHeld), errors.Is(err, errTooManyInFlight):
		w.Header().Set("Retry-After", "1")
		http.Error(w, "Too Many Requests: "+err.Error()+"; send again in a moment", http.StatusTooManyRequests)
	case errors.Is(err, errSessionGone):
		why := "Not Found: the session has ended; initialize a new one"
		if p := sess.refused.Load(); p != nil {
			why += " (it was refused: " + *p + ")"
		}
		http.Error(w, why, http.StatusNotFound)
	case err != nil:
		http.Error(w, err.Error(), http.StatusInternalServerError)
	case !hasCall(msgs):
		w.WriteHeader(http.StatusAccepted)
	default:
		l.metrics.observe(time.Since(start))
	}
}

func hasCall(msgs []jsonrpc.Message) bool {
	for _, m := range msgs {
		if r, ok := m.(*jsonrpc.Request); ok && r.IsCall() {
			return true
		}
	}
	return false
}

// decodeBody decodes a POST's body: one message, or a batch. A body that
// is not JSON-RPC, or holds a message whose id can't be carried exactly,
// is refused whole with a 400 (refusal writes it).
func decodeBody(body []byte) (msgs []jsonrpc.Message, batch bool, refusal func(http.ResponseWriter)) {
	bad := func(status int, code int64, msg string) func(http.ResponseWriter) {
		return func(w http.ResponseWriter) { jsonrpcError(w, status, jsonrpc.ID{}, code, msg) }
	}
	body = bytes.TrimSpace(body)
	var raws []json.RawMessage
	if len(body) > 0 && body[0] == '[' {
		batch = true
		if err := json.Unmarshal(body, &raws); err != nil {
			return nil, true, bad(http.StatusBadRequest, jsonrpc.CodeParseError, "bouncer: parse error: "+err.Error())
		}
		if len(raws) == 0 {
			return nil, true, bad(http.StatusBadRequest, jsonrpc.CodeInvalidRequest, "bouncer: invalid request: the batch is empty")
		}
	} else {
		raws = []json.RawMessage{body}
	}
	ids := map[jsonrpc.ID]bool{}
	for _, raw := range raws {
		m, request, err := transport.DecodeMessage(raw)
		var refused *transport.RefusedError
		switch {
		case errors.As(err, &refused) && !request:
			continue // an answer to nothing that was passed on
		case errors.As(err, &refused):
			return nil, batch, bad(http.StatusBadRequest, jsonrpc.CodeInvalidRequest, "bouncer: invalid request: "+refused.Reason)
		case err != nil:
			return nil, batch, bad(http.StatusBadRequest, jsonrpc.CodeParseError, "bouncer: parse error: "+err.Error())
		}
		if r, ok := m.(*jsonrpc.Request); ok && r.IsCall() {
			if ids[r.ID] {
				return nil, batch, bad(http.StatusBadRequest, jsonrpc.CodeInvalidRequest, fmt.Sprintf("bouncer: invalid request: request id %s appears twice in the batch", transport.IDText(r.ID)))
			}
			ids[r.ID] = true
		}
		msgs = append(msgs, m)
	}
	return msgs, batch, nil
}

// initialize starts a session for a POST that carries no session id: it
// must be one initialize request. A request of a later, stateless protocol
// (server/discover, or a request whose _meta names a version) is answered
// with -32022 and the versions spoken here, so that the client falls back
// to initialize, as bouncer run answers it.
func (l *Listener) initialize(w http.ResponseWriter, r *http.Request, user string, b *backend, msgs []jsonrpc.Message, batch bool) *Session {
	var req *jsonrpc.Request
	if len(msgs) == 1 && !batch {
		req, _ = msgs[0].(*jsonrpc.Request)
	}
	if req != nil && req.IsCall() && (req.Method == "server/discover" || modernMeta(req.Params)) {
		data, _ := json.Marshal(map[string]any{"supported": supportedVersions, "requested": r.Header.Get("Mcp-Protocol-Version")})
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": req.ID.Raw(), "error": map[string]any{
			"code": codeUnsupportedProtocolVersion, "message": "bouncer: this server speaks MCP up to " + maxVersion + "; initialize a session", "data": json.RawMessage(data),
		}})
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		w.Write(body)
		return nil
	}
	if req == nil || !req.IsCall() || req.Method != "initialize" {
		http.Error(w, "Bad Request: no Mcp-Session-Id; start a session with an initialize request (alone, not in a batch)", http.StatusBadRequest)
		return nil
	}
	s, err := l.open(user, b)
	if err != nil {
		var lim *errLimit
		if errors.As(err, &lim) {
			l.metrics.refused.Add(1)
			if lim.retry > 0 {
				w.Header().Set("Retry-After", strconv.Itoa(int(max(1, lim.retry.Round(time.Second)/time.Second))))
			}
			http.Error(w, lim.msg, lim.status)
			return nil
		}
		l.log("could not start a session of server %q for %s: %v", b.Name, user, err)
		http.Error(w, "Service Unavailable: the server could not be started (the listener's log says why)", http.StatusServiceUnavailable)
		return nil
	}
	return s
}

// codeUnsupportedProtocolVersion is MCP's -32022 (SEP-2575).
const codeUnsupportedProtocolVersion = -32022

// modernMeta reports whether params carry the stateless era's
// _meta["io.modelcontextprotocol/protocolVersion"].
func modernMeta(params json.RawMessage) bool {
	if !bytes.Contains(params, []byte("io.modelcontextprotocol/protocolVersion")) {
		return false
	}
	var v struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if json.Unmarshal(params, &v) != nil {
		return false
	}
	_, ok := v.Meta["io.modelcontextprotocol/protocolVersion"]
	return ok
}

func (l *Listener) serveGET(w http.ResponseWriter, r *http.Request, user string, b *backend) {
	if !accepts(r, "text/event-stream") {
		http.Error(w, "Not Acceptable: accept text/event-stream", http.StatusNotAcceptable)
		return
	}
	if !versionOK(w, r) {
		return
	}
	if len(r.Header.Values("Last-Event-ID")) > 0 {
		http.Error(w, "Bad Request: streams are not resumable here", http.StatusBadRequest)
		return
	}
	s := l.session(w, r, user, b)
	if s == nil {
		return
	}
	s.conn.enter()
	defer s.conn.leave()
	switch err := s.conn.getStream(r.Context(), w); {
	case errors.Is(err, errStreamOpen):
		http.Error(w, "Conflict: "+err.Error(), http.StatusConflict)
	case errors.Is(err, errSessionGone):
		http.Error(w, "Not Found: the session has ended", http.StatusNotFound)
	}
}

func (l *Listener) serveDELETE(w http.ResponseWriter, r *http.Request, user string, b *backend) {
	s := l.session(w, r, user, b)
	if s == nil {
		return
	}
	s.conn.close()
	w.WriteHeader(http.StatusNoContent)
}

// HTTPServer is the HTTP server for the listener's handler, with the
// edge's timeouts: headers must come within Edge.ReadHeaderTimeout
// (slowloris), a whole request within Edge.ReadTimeout, an idle keep-alive
// connection is closed after 2 minutes, and headers are bounded to 64 KiB.
// There is no write timeout for a whole response (a stream lasts as long
// as its session); each event's write has its own (Edge.WriteTimeout).
func (l *Listener) HTTPServer() *http.Server {
	return &http.Server{
		Handler:           l.Handler(),
		ReadHeaderTimeout: l.opts.Edge.ReadHeaderTimeout,
		ReadTimeout:       l.opts.Edge.ReadTimeout,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
	}
}
