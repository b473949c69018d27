package proxy

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bouncer-mcp/bouncer/internal/approval"
	"github.com/bouncer-mcp/bouncer/internal/audit"
	"github.com/bouncer-mcp/bouncer/internal/engine"
	"github.com/bouncer-mcp/bouncer/internal/fsresolve"
	"github.com/bouncer-mcp/bouncer/internal/policy"
	"github.com/bouncer-mcp/bouncer/internal/session"
	"github.com/bouncer-mcp/bouncer/internal/setup"
	"github.com/bouncer-mcp/bouncer/internal/taint"
	"github.com/bouncer-mcp/bouncer/internal/testsupport/syncbuf"
	"github.com/bouncer-mcp/bouncer/internal/testsupport/testserver"
	"github.com/bouncer-mcp/bouncer/internal/transport"
)

func TestMain(m *testing.M) {
	testserver.Main()
	runPumpIfAsked()
	runStdioPumpIfAsked()
	os.Exit(m.Run())
}

// harness is one proxy session: a real upstream subprocess, the real
// engine, audit log and approval store, and the client end of the pipes.
type harness struct {
	t       *testing.T
	dir     string             // the helpdesk's side effects
	home    string             // the state directory
	proc    *transport.Process // the stdio upstream, or nil
	remote  *transport.Remote  // the HTTP upstream, or nil
	server  *exec.Cmd          // the HTTP upstream's server process
	name    string             // its name (testserver.Main's)
	url     string             // its URL
	proxy   *Proxy
	clientT *mcp.IOTransport // the client's end
	clientW *io.PipeWriter   // the proxy's stdin, for a half close
	clientR *io.PipeReader   // the proxy's stdout, for a client reading lines
	runErr  chan error
	log     *syncbuf.Buffer
	cancel  context.CancelFunc
}

// options for a harness
type hopts struct {
	policy        string // YAML; empty means packs only
	elicitTimeout time.Duration
	cmd           *transport.Command // default: the helpdesk
	// session judges with a client session (in memory) whose remembered
	// destinations live in the harness's home, and offers "remember".
	session bool
	// http serves the helpdesk over HTTP in a process of its own, with
	// these options (testserver.EnvHTTP; "streamable" for none), and
	// proxies it as a remote upstream.
	http      string
	server    string      // the HTTP server, as Main names it (default "helpdesk-http")
	transport string      // transport.RemoteConfig.Transport
	token     string      // the server demands this bearer token
	headers   http.Header // transport.RemoteConfig.Headers
	// url proxies the remote server there (one the test started).
	url string
	// home is the state directory (default: a new one); the policy file
	// and the audit log live there, as with bouncer run.
	home string
	// tape records the session (bouncer run --record).
	tape Tape
	// asRun ends the session as bouncer run does: Run leaves the client's
	// pipes open (Stdio's Close can't stop a read of stdin, and leaves
	// stdout open), and the audit log is closed once Run returns.
	asRun bool
	// approvalsNow is the approval store's clock (default: time.Now).
	approvalsNow func() time.Time
}

const helpdeskPolicy = `
send_email:
  exfiltrating: true
  sink_params: [to]
  trusted_destinations: [boss@corp.example]
write_file:
  write_params: [path]
  allowed_path_prefixes: [OUT]
`

// selfServer is the test binary re-executed as a test server.
func selfServer(t testing.TB, name, dir string) transport.Command {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return transport.Command{Path: exe, Env: append(os.Environ(),
		testserver.EnvServer+"="+name, testserver.EnvDir+"="+dir)}
}

func newHarness(t *testing.T, o hopts) *harness {
	t.Helper()
	h := &harness{t: t, dir: t.TempDir(), home: o.home, log: &syncbuf.Buffer{}, runErr: make(chan error, 1)}
	if h.home == "" {
		h.home = t.TempDir()
	}
	if err := os.Mkdir(filepath.Join(h.dir, "out"), 0o700); err != nil {
		t.Fatal(err)
	}
	var files []string
	if o.policy != "" {
		f := filepath.Join(h.home, "bouncer.yaml")
		text := strings.ReplaceAll(o.policy, "OUT", filepath.Join(h.dir, "out"))
		if err := os.WriteFile(f, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	pol, err := policy.Load(files...)
	if err != nil {
		t.Fatalf("policy: %v", err)
	}
	log, err := audit.Open(filepath.Join(h.home, "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { log.Close() })
	var up transport.Upstream
	if o.http != "" || o.url != "" {
		if o.url != "" {
			h.url = o.url
		} else {
			h.name = o.server
			if h.name == "" {
				h.name = "helpdesk-http"
			}
			h.url, h.server = startServerAt(t, h.name, h.dir, o.http, o.token, "")
		}
		h.remote, err = transport.DialRemote(transport.RemoteConfig{URL: h.url, Transport: o.transport, Headers: o.headers, Log: h.log})
		if err != nil {
			t.Fatal(err)
		}
		up = h.remote
	} else {
		cmd := selfServer(t, "helpdesk", h.dir)
		if o.cmd != nil {
			cmd = *o.cmd
		}
		cmd.Dir = h.dir
		h.proc, err = transport.Start(cmd, h.log)
		if err != nil {
			t.Fatal(err)
		}
		up = h.proc
	}
	store := taint.NewStore()
	// Bouncer's own state is protected as bouncer run protects it.
	home, _ := os.UserHomeDir()
	opts := engine.Options{Resolve: fsresolve.Existing, WorkDir: h.dir, Own: engine.OwnList(setup.OwnPaths(setup.OwnSources{StateDir: h.home, InForce: files})), Home: home}
	var remember func(string) error
	if o.session {
		sess := session.New()
		rem := session.OpenRemembered(h.home)
		sess.SetRemembered(rem)
		store = sess.Output("helpdesk")
		opts.Session, opts.Server = sess, "helpdesk"
		remember = func(dest string) error { return rem.Add("helpdesk", dest, "client", time.Now()) }
	}
	h.proxy = New(Config{
		Server:        "helpdesk",
		Engine:        engine.New(pol, store, opts),
		Store:         store,
		Remember:      remember,
		Audit:         log,
		Approvals:     approval.Open(filepath.Join(h.home, "pending.json"), o.approvalsNow),
		Session:       "test",
		Tape:          o.tape,
		ElicitTimeout: o.elicitTimeout,
		DrainTimeout:  2 * time.Second,
		Log:           h.log,
	})
	// Two pipes with no frame limit on either end, so huge messages pass.
	// The proxy's end is the Conn `bouncer run` uses on its stdio.
	c2pR, c2pW := io.Pipe()
	p2cR, p2cW := io.Pipe()
	down := transport.NewConn(c2pR, p2cW)
	if o.asRun {
		down = transport.NewConn(struct{ io.Reader }{c2pR}, struct{ io.Writer }{p2cW})
	}
	h.clientW, h.clientR = c2pW, p2cR
	h.clientT = &mcp.IOTransport{Reader: p2cR, Writer: c2pW, MaxLineLength: -1}
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	go func() {
		err := h.proxy.Run(ctx, down, up)
		if o.asRun {
			log.Close()
		}
		h.runErr <- err
	}()
	t.Cleanup(func() {
		cancel()
		if h.proc != nil {
			_ = h.proc.Stop(time.Second)
		} else {
			_ = h.remote.Close()
		}
		select {
		case <-h.runErr:
		case <-time.After(10 * time.Second):
			t.Error("proxy did not stop")
		}
		if t.Failed() {
			t.Logf("proxy log:\n%s", h.log.String())
		}
	})
	return h
}

// startHTTPServer runs the test binary as the helpdesk over HTTP (options
// as in testserver.EnvHTTP, "streamable" for none; token, if set, is the
// bearer token it demands) and returns its URL. The server is killed when
// the test ends.
func startHTTPServer(t testing.TB, dir, opts, token string) (string, *exec.Cmd) {
	return startServerAt(t, "helpdesk-http", dir, opts, token, "")
}

// startServerAt is startHTTPServer for the HTTP test server name (as
// testserver.Main names it), listening on addr (host:port; "" for a free
// port).
func startServerAt(t testing.TB, name, dir, opts, token, addr string) (string, *exec.Cmd) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), testserver.EnvServer+"="+name, testserver.EnvDir+"="+dir,
		testserver.EnvHTTP+"="+opts, testserver.EnvToken+"="+token, testserver.EnvAddr+"="+addr)
	cmd.Dir = dir
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("the HTTP test server %s did not say its URL: %v", name, err)
	}
	return strings.TrimSpace(line), cmd
}

// client connects a go-sdk client through the proxy.
func (h *harness) client(opts *mcp.ClientOptions) *mcp.ClientSession {
	h.t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, h.clientT, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		h.t.Fatalf("connect: %v\n%s", err, h.log.String())
	}
	h.t.Cleanup(func() { cs.Close() })
	return cs
}

// raw connects a bare JSON-RPC connection as the client.
func (h *harness) raw() *rawClient {
	conn, err := h.clientT.Connect(context.Background())
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { conn.Close() })
	return &rawClient{t: h.t, conn: conn}
}

// callTool calls a tool and returns the result's first text and isError.
func callTool(t *testing.T, cs *mcp.ClientSession, tool string, args any) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: %v", tool, err)
	}
	text := ""
	if len(res.Content) > 0 {
		if tc, ok := res.Content[0].(*mcp.TextContent); ok {
			text = tc.Text
		}
	}
	return text, res.IsError
}

// mails returns the lines the helpdesk appended to mails.jsonl.
func (h *harness) mails() []string {
	b, err := os.ReadFile(filepath.Join(h.dir, "mails.jsonl"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		h.t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

// auditLines returns verdict/rule pairs of the audit log, in order.
func (h *harness) auditLines() []audit.Entry {
	h.t.Helper()
	es, err := audit.ReadFile(filepath.Join(h.home, "audit.jsonl"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		h.t.Fatal(err)
	}
	return es
}

func verdicts(es []audit.Entry) string {
	var parts []string
	for _, e := range es {
		parts = append(parts, e.Tool+":"+e.Verdict+"/"+e.Rule)
	}
	return strings.Join(parts, " ")
}

// waitExit waits for Run to return.
func (h *harness) waitExit() error {
	h.t.Helper()
	select {
	case err := <-h.runErr:
		h.runErr <- err // for Cleanup
		return err
	case <-time.After(15 * time.Second):
		h.t.Fatal("proxy did not return")
		return nil
	}
}

// rawClient speaks JSON lines.
type rawClient struct {
	t       *testing.T
	conn    mcp.Connection
	timeout time.Duration // per read; default 30s
	// queue, once the client is pipelined, holds what send was given, for
	// the sending goroutine to write in order.
	queue chan jsonrpc.Message
}

// send writes line to the proxy: at once, or, if the client is
// pipelined, from the sending goroutine after what was sent before it.
func (r *rawClient) send(line string) {
	r.t.Helper()
	m, err := jsonrpc.DecodeMessage([]byte(line))
	if err != nil {
		r.t.Fatalf("bad test message %s: %v", line, err)
	}
	if r.queue != nil {
		select {
		case r.queue <- m:
		default:
			r.t.Fatalf("more than %d messages wait to be sent", cap(r.queue))
		}
		return
	}
	if err := r.conn.Write(context.Background(), m); err != nil {
		r.t.Fatal(err)
	}
}

// pipelined makes the client's writes independent of its reads, as a real
// client's are (a reader of its own, and the kernel's pipe buffers): send
// returns at once, and a goroutine writes the messages in order. The
// harness's io.Pipes buffer nothing, so a test that sends while the proxy
// has more for it than it has read (answers in flight, and a denial the
// proxy's read loop writes on reading the call before) would otherwise
// block in send, with the proxy's read loop blocked writing to it: each
// waits for the other. A write that fails fails the test.
func (r *rawClient) pipelined() {
	r.queue = make(chan jsonrpc.Message, 1024)
	done := make(chan struct{})
	var quiet atomic.Bool // the test is over, or a write failed already
	go func() {
		defer close(done)
		for m := range r.queue {
			if err := r.conn.Write(context.Background(), m); err != nil && !quiet.Swap(true) {
				r.t.Errorf("send: %v", err)
			}
		}
	}()
	r.t.Cleanup(func() {
		quiet.Store(true)
		r.conn.Close() // a write still blocked returns
		close(r.queue)
		<-done
	})
}

// next reads the next message, skipping notifications unless keep says so.
func (r *rawClient) next(keepNotifications bool) jsonrpc.Message {
	r.t.Helper()
	for {
		timeout := r.timeout
		if timeout == 0 {
			timeout = 30 * time.Second
		}
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		m, err := r.conn.Read(ctx)
		cancel()
		if err != nil {
			r.t.Fatalf("read: %v", err)
		}
		if req, ok := m.(*jsonrpc.Request); ok && !req.IsCall() && !keepNotifications {
			continue
		}
		return m
	}
}

// response reads until the response with the given id.
func (r *rawClient) response(id any) *jsonrpc.Response {
	r.t.Helper()
	if i, ok := id.(int); ok {
		id = float64(i)
	}
	want, err := jsonrpc.MakeID(id)
	if err != nil {
		r.t.Fatal(err)
	}
	for {
		m := r.next(false)
		if resp, ok := m.(*jsonrpc.Response); ok && resp.ID == want {
			return resp
		}
	}
}

// handshake initializes the session as a 2025-06-18 client without
// elicitation.
func (r *rawClient) handshake() { r.handshakeAt("2025-06-18") }

// handshakeAt is handshake asking for protocol version v.
func (r *rawClient) handshakeAt(v string) {
	r.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"` + v + `","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if resp := r.response(0); resp.Error != nil {
		r.t.Fatalf("initialize: %v", resp.Error)
	}
	r.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

// resultText returns the first text block of a tools/call response.
func resultText(t *testing.T, resp *jsonrpc.Response) (string, bool) {
	t.Helper()
	if resp.Error != nil {
		t.Fatalf("error response: %v", resp.Error)
	}
	var r struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	}
	if err := json.Unmarshal(resp.Result, &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Content) == 0 {
		return "", r.IsError
	}
	return r.Content[0].Text, r.IsError
}

// wireClient speaks raw lines, for what a go-sdk connection would not send
// or would not read as it came: batches, ids such as 1.5, answers with id
// null. Every read has a deadline, so an answer the proxy withholds fails
// the test instead of hanging it.
type wireClient struct {
	t     *testing.T
	w     io.Writer
	lines chan string
}

// wire connects a line-level client; use it instead of client or raw.
func (h *harness) wire() *wireClient {
	w := &wireClient{t: h.t, w: h.clientW, lines: make(chan string, 64)}
	go func() {
		defer close(w.lines)
		br := bufio.NewReaderSize(h.clientR, 1<<20)
		for {
			line, err := br.ReadString('\n')
			if line = strings.TrimSpace(line); line != "" {
				w.lines <- line
			}
			if err != nil {
				return
			}
		}
	}()
	h.t.Cleanup(func() { h.clientR.Close() })
	return w
}

func (w *wireClient) send(line string) {
	w.t.Helper()
	if _, err := io.WriteString(w.w, line+"\n"); err != nil {
		w.t.Fatalf("send: %v", err)
	}
}

// nextWithin returns the next line the proxy writes, or "" when none comes
// within d.
func (w *wireClient) nextWithin(d time.Duration) string {
	select {
	case line, ok := <-w.lines:
		if !ok {
			return ""
		}
		return line
	case <-time.After(d):
		return ""
	}
}

// next returns the next line, failing the test when none comes in time.
func (w *wireClient) next(why string) string {
	w.t.Helper()
	line := w.nextWithin(10 * time.Second)
	if line == "" {
		w.t.Fatalf("no line from the proxy within 10s, waiting for %s", why)
	}
	return line
}

// until reads lines until one that match accepts, and returns it with the
// lines read before it.
func (w *wireClient) until(why string, match func(line string) bool) (string, []string) {
	w.t.Helper()
	var before []string
	for {
		line := w.next(why)
		if match(line) {
			return line, before
		}
		before = append(before, line)
	}
}

// isAnswer matches a line holding an answer, or a batch's answers.
func isAnswer(line string) bool {
	return strings.HasPrefix(line, "[") || !strings.Contains(line, `"method"`)
}

// answer reads lines until an answer (or a batch's answers) and returns it.
func (w *wireClient) answer(why string) string {
	w.t.Helper()
	line, _ := w.until(why, isAnswer)
	return line
}

// request reads lines until a request for method from the proxy, and
// returns its id as written.
func (w *wireClient) request(method string) string {
	w.t.Helper()
	line, _ := w.until(method, func(line string) bool {
		return strings.Contains(line, `"method":"`+method+`"`) && strings.Contains(line, `"id"`)
	})
	var m struct {
		ID json.RawMessage `json:"id"`
	}
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		w.t.Fatal(err)
	}
	return string(m.ID)
}

// handshake initializes with the given protocol version (batches are
// 2025-03-26's; elicitation needs 2025-06-18 or later, and the proxy's Conn
// takes batches whatever the version), declaring elicitation or not.
func (w *wireClient) handshake(version string, elicit bool) {
	w.t.Helper()
	caps := `{}`
	if elicit {
		caps = `{"elicitation":{}}`
	}
	w.send(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"` + version + `","capabilities":` + caps + `,"clientInfo":{"name":"wire","version":"1"}}}`)
	if a := w.answer("initialize"); !strings.Contains(a, `"id":"init","result"`) {
		w.t.Fatalf("initialize: %s", a)
	}
	w.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

// pinned waits until the pin is taken, with a call of echo (which every
// test server has), and returns its answer.
func (w *wireClient) pinned() wireAnswer {
	w.t.Helper()
	w.send(`{"jsonrpc":"2.0","id":"pinned","method":"tools/call","params":{"name":"echo","arguments":{"text":"pinned"}}}`)
	a, _ := answers(w.t, w.answer("the first call"))
	return a[`"pinned"`]
}

// answers decodes one line holding a batch's answers (an array) or one
// answer, and returns them by id as JSON text (null for id null).
func answers(t *testing.T, line string) (map[string]wireAnswer, []string) {
	t.Helper()
	var raws []json.RawMessage
	if strings.HasPrefix(line, "[") {
		if err := json.Unmarshal([]byte(line), &raws); err != nil {
			t.Fatalf("%s: %v", line, err)
		}
	} else {
		raws = []json.RawMessage{json.RawMessage(line)}
	}
	byID := map[string]wireAnswer{}
	var order []string
	for _, raw := range raws {
		var a wireAnswer
		if err := json.Unmarshal(raw, &a); err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		id := string(a.ID)
		if id == "" {
			id = "(none)"
		}
		if _, dup := byID[id]; dup && id != "null" {
			t.Fatalf("two answers for id %s in %s", id, line)
		}
		byID[id] = a
		order = append(order, id)
	}
	return byID, order
}

// wireAnswer is one JSON-RPC answer as written.
type wireAnswer struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result *struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	} `json:"result"`
	Error *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// text is the first text block of a tool result, or "".
func (a wireAnswer) text() string {
	if a.Result == nil || len(a.Result.Content) == 0 {
		return ""
	}
	return a.Result.Content[0].Text
}
