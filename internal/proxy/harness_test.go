package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
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
	"github.com/bouncer-mcp/bouncer/internal/taint"
	"github.com/bouncer-mcp/bouncer/internal/testserver"
)

func TestMain(m *testing.M) {
	testserver.Main()
	os.Exit(m.Run())
}

// syncBuffer is a bytes.Buffer safe for the proxy's and the test's
// goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// harness is one proxy session: a real upstream subprocess, the real
// engine, audit log and approval store, and the client end of the pipes.
type harness struct {
	t       *testing.T
	dir     string // the helpdesk's side effects
	home    string // the state directory
	proc    *Process
	proxy   *Proxy
	clientT *mcp.IOTransport // the client's end
	clientW *io.PipeWriter   // the proxy's stdin, for a half close
	runErr  chan error
	log     *syncBuffer
	cancel  context.CancelFunc
}

// options for a harness
type hopts struct {
	policy        string // YAML; empty means packs only
	elicitTimeout time.Duration
	cmd           *Command // default: the helpdesk
	// session judges with a client session (in memory) whose remembered
	// destinations live in the harness's home, and offers "remember".
	session bool
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
func selfServer(t testing.TB, name, dir string) Command {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return Command{Path: exe, Env: append(os.Environ(),
		testserver.EnvServer+"="+name, testserver.EnvDir+"="+dir)}
}

func newHarness(t *testing.T, o hopts) *harness {
	t.Helper()
	h := &harness{t: t, dir: t.TempDir(), home: t.TempDir(), log: &syncBuffer{}, runErr: make(chan error, 1)}
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
	cmd := selfServer(t, "helpdesk", h.dir)
	if o.cmd != nil {
		cmd = *o.cmd
	}
	cmd.Dir = h.dir
	h.proc, err = Start(cmd, h.log)
	if err != nil {
		t.Fatal(err)
	}
	store := taint.NewStore()
	opts := engine.Options{Resolve: fsresolve.Existing, WorkDir: h.dir}
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
		Approvals:     approval.Open(filepath.Join(h.home, "pending.json"), nil),
		Session:       "test",
		ElicitTimeout: o.elicitTimeout,
		DrainTimeout:  2 * time.Second,
		Log:           h.log,
	})
	// Two pipes with no frame limit on either end, so huge messages pass.
	c2pR, c2pW := io.Pipe()
	p2cR, p2cW := io.Pipe()
	down, _ := (&mcp.IOTransport{Reader: c2pR, Writer: p2cW, MaxLineLength: -1}).Connect(context.Background())
	h.clientW = c2pW
	h.clientT = &mcp.IOTransport{Reader: p2cR, Writer: c2pW, MaxLineLength: -1}
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	go func() { h.runErr <- h.proxy.Run(ctx, down, h.proc) }()
	t.Cleanup(func() {
		cancel()
		_ = h.proc.Stop(time.Second)
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
}

func (r *rawClient) send(line string) {
	r.t.Helper()
	m, err := jsonrpc.DecodeMessage([]byte(line))
	if err != nil {
		r.t.Fatalf("bad test message %s: %v", line, err)
	}
	if err := r.conn.Write(context.Background(), m); err != nil {
		r.t.Fatal(err)
	}
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
func (r *rawClient) handshake() {
	r.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
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

// groupGone reports whether no process is left in the process group pgid.
func groupGone(pgid int) bool {
	for i := 0; i < 100; i++ {
		if syscall.Kill(-pgid, 0) != nil {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}
