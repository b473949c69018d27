//lint:file-ignore SA1019 the relay of sampling, logging and roots is what these tests check

package proxy

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bouncer-mcp/bouncer/internal/testsupport/need"
	"github.com/bouncer-mcp/bouncer/internal/transport"
)

var (
	goEverythingOnce sync.Once
	goEverythingPath string
	goEverythingErr  error
)

// goEverything builds the go-sdk's examples/server/everything once.
func goEverything(t *testing.T) transport.Command {
	t.Helper()
	goEverythingOnce.Do(func() {
		dir, err := os.MkdirTemp("", "bouncer-everything")
		if err != nil {
			goEverythingErr = err
			return
		}
		goEverythingPath = filepath.Join(dir, "everything")
		out, err := exec.Command("go", "build", "-o", goEverythingPath,
			"github.com/modelcontextprotocol/go-sdk/examples/server/everything").CombinedOutput()
		if err != nil {
			goEverythingErr = &buildError{out: string(out), err: err}
		}
	})
	if goEverythingErr != nil {
		t.Fatalf("building the go-sdk everything server: %v", goEverythingErr)
	}
	return transport.Command{Path: goEverythingPath}
}

type buildError struct {
	out string
	err error
}

func (e *buildError) Error() string { return e.err.Error() + "\n" + e.out }

// npmServer returns the command for one of the pinned npm reference
// servers, or skips the test when they are not installed (fails under CI).
func npmServer(t *testing.T, pkg string, args ...string) transport.Command {
	t.Helper()
	script := need.NPM(t, filepath.Join("@modelcontextprotocol", pkg, "dist", "index.js"))
	node := need.Node(t)
	return transport.Command{Path: node, Args: append([]string{script}, args...)}
}

// relayClient is a go-sdk client with every client-side feature, recording
// what the upstream asked of it through the proxy.
type relayClient struct {
	mu       sync.Mutex
	sampled  []string
	elicited []string
	logs     []string
	progress []float64
	changed  int
}

func (rc *relayClient) options() *mcp.ClientOptions {
	return &mcp.ClientOptions{
		CreateMessageHandler: func(ctx context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			rc.mu.Lock()
			rc.sampled = append(rc.sampled, "asked")
			rc.mu.Unlock()
			return &mcp.CreateMessageResult{Model: "test-model", Role: "assistant", Content: &mcp.TextContent{Text: "sampled reply"}}, nil
		},
		ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			rc.mu.Lock()
			rc.elicited = append(rc.elicited, req.Params.Message)
			rc.mu.Unlock()
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"random": "xyz"}}, nil
		},
		LoggingMessageHandler: func(ctx context.Context, req *mcp.LoggingMessageRequest) {
			b, _ := json.Marshal(req.Params.Data)
			rc.mu.Lock()
			rc.logs = append(rc.logs, string(b))
			rc.mu.Unlock()
		},
		ProgressNotificationHandler: func(ctx context.Context, req *mcp.ProgressNotificationClientRequest) {
			rc.mu.Lock()
			rc.progress = append(rc.progress, req.Params.Progress)
			rc.mu.Unlock()
		},
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			rc.mu.Lock()
			rc.changed++
			rc.mu.Unlock()
		},
	}
}

func (rc *relayClient) snapshot() relayClient {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return relayClient{sampled: append([]string(nil), rc.sampled...), elicited: append([]string(nil), rc.elicited...),
		logs: append([]string(nil), rc.logs...), progress: append([]float64(nil), rc.progress...), changed: rc.changed}
}

func eventually(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Everything the go-sdk's own example server offers works through the
// proxy: tools with structured output and resource links, logging,
// sampling, elicitation and roots relayed to the client, prompts, resources,
// templates and completion.
func TestGoEverythingPassthrough(t *testing.T) {
	cmd := goEverything(t)
	h := newHarness(t, hopts{cmd: &cmd})
	rc := &relayClient{}
	c := mcp.NewClient(&mcp.Implementation{Name: "relay", Version: "1"}, rc.options())
	c.AddRoots(&mcp.Root{Name: "work", URI: "file:///work"})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, h.clientT, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if got := cs.InitializeResult().Instructions; got != "Use this server!" {
		t.Errorf("instructions = %q", got)
	}

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "greet", Arguments: map[string]any{"name": "Ana"}})
	if err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != "Hi Ana" {
		t.Fatalf("greet = %+v, %v", res, err)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "greet (structured)", Arguments: map[string]any{"name": "Ana"}})
	if err != nil || res.StructuredContent == nil {
		t.Fatalf("structured = %+v, %v", res, err)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "greet (content with ResourceLink)", Arguments: map[string]any{"name": "Ana"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := res.Content[0].(*mcp.ResourceLink); !ok {
		t.Fatalf("resource link tool returned %T", res.Content[0])
	}
	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "log", Arguments: map[string]any{}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the log message", func() bool { return len(rc.snapshot().logs) > 0 })
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "sample", Arguments: map[string]any{}})
	if err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != "sampled reply" {
		t.Fatalf("sample = %+v, %v", res, err)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "elicit (form)", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("elicit = %+v, %v", res, err)
	}
	if s := rc.snapshot(); len(s.elicited) != 1 || s.elicited[0] != "provide a random string" {
		t.Fatalf("upstream's elicitation reached the client as %q", s.elicited)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "roots", Arguments: map[string]any{}})
	if err != nil || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "file:///work") {
		t.Fatalf("roots = %+v, %v", res, err)
	}
	prompts, err := cs.ListPrompts(ctx, nil)
	if err != nil || len(prompts.Prompts) == 0 {
		t.Fatalf("prompts = %v, %v", prompts, err)
	}
	gp, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "greet", Arguments: map[string]string{"name": "Bo"}})
	if err != nil || !strings.Contains(gp.Messages[0].Content.(*mcp.TextContent).Text, "Bo") {
		t.Fatalf("get prompt = %+v, %v", gp, err)
	}
	rs, err := cs.ListResources(ctx, nil)
	if err != nil || len(rs.Resources) == 0 {
		t.Fatalf("resources = %v, %v", rs, err)
	}
	rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: rs.Resources[0].URI})
	if err != nil || len(rr.Contents) == 0 {
		t.Fatalf("read = %v, %v", rr, err)
	}
	tmpl, err := cs.ListResourceTemplates(ctx, nil)
	if err != nil || len(tmpl.ResourceTemplates) == 0 {
		t.Fatalf("templates = %v, %v", tmpl, err)
	}
	if _, err := cs.Complete(ctx, &mcp.CompleteParams{
		Ref:      &mcp.CompleteReference{Type: "ref/prompt", Name: "greet"},
		Argument: mcp.CompleteParamsArgument{Name: "name", Value: "a"},
	}); err != nil {
		t.Fatalf("complete: %v", err)
	}
	if err := cs.Ping(ctx, nil); err != nil {
		t.Fatal(err)
	}
	// Every tool call was audited and allowed.
	for _, e := range h.auditLines() {
		if e.Verdict != "allow" {
			t.Errorf("%s: %s %s", e.Tool, e.Verdict, e.Reason)
		}
	}
}

// npmEverything runs a test against the npm everything server on stdio,
// and again on its streamable HTTP transport (its own process, on a
// loopback port) as a remote upstream: the same checks hold for both.
func npmEverything(t *testing.T, test func(t *testing.T, o hopts)) {
	t.Run("stdio", func(t *testing.T) {
		cmd := npmServer(t, "server-everything", "stdio")
		test(t, hopts{cmd: &cmd})
	})
	t.Run("http", func(t *testing.T) {
		test(t, hopts{url: npmHTTPServer(t, "server-everything", "streamableHttp")})
	})
}

// npmHTTPServer starts an npm reference server on its HTTP transport, on a
// free loopback port, and returns its endpoint once it listens.
func npmHTTPServer(t *testing.T, pkg, mode string) string {
	t.Helper()
	cmd := npmServer(t, pkg, mode)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	ln.Close()
	c := exec.Command(cmd.Path, cmd.Args...)
	c.Env = append(os.Environ(), "PORT="+port)
	c.Stdout = io.Discard
	stderr, err := c.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
	listening := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		said := false
		for sc.Scan() {
			if !said && strings.Contains(sc.Text(), "listening on port") {
				said = true
				listening <- true
			}
		}
		if !said {
			listening <- false
		}
	}()
	select {
	case ok := <-listening:
		if !ok {
			t.Fatalf("%s %s did not start", pkg, mode)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("%s %s did not listen within 30s", pkg, mode)
	}
	return "http://127.0.0.1:" + port + "/mcp"
}

// A server that sends list_changed the moment the client says it is
// initialized, over HTTP, reaches the client even when its event stream
// opens late. The npm server drops a message it has no open stream for, so
// here a reverse proxy holds each GET back for half a second: the proxy
// must not send notifications/initialized before the stream is open.
func TestNPMEverythingListChangedWithLateStream(t *testing.T) {
	target, err := url.Parse(npmHTTPServer(t, "server-everything", "streamableHttp"))
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: target.Scheme, Host: target.Host})
	rp.FlushInterval = -1 // an event stream: pass each event on at once
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method == http.MethodGet {
			time.Sleep(500 * time.Millisecond)
		}
		rp.ServeHTTP(w, req)
	}))
	t.Cleanup(slow.Close)
	h := newHarness(t, hopts{url: slow.URL + target.Path})
	rc := &relayClient{}
	h.client(rc.options())
	eventually(t, "list_changed", func() bool { return rc.snapshot().changed > 0 })
}

// The npm everything server: the newer protocol features (tasks
// capability, execution.taskSupport, annotations) survive byte for byte;
// progress, logging, list_changed, prompts, resources and completion
// pass through.
func TestNPMEverythingPassthrough(t *testing.T) {
	npmEverything(t, testNPMEverythingPassthrough)
}

func testNPMEverythingPassthrough(t *testing.T, o hopts) {
	h := newHarness(t, o)
	r := h.raw()
	r.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"x-unknown":{"keep":true}},"clientInfo":{"name":"raw","version":"1"}}}`)
	init := r.response(0)
	if !strings.Contains(string(init.Result), `"tasks"`) {
		t.Fatalf("tasks capability lost: %s", init.Result)
	}
	r.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	r.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	list := r.response(1)
	if !strings.Contains(string(list.Result), `"taskSupport"`) {
		t.Fatalf("execution.taskSupport lost: %.300s", list.Result)
	}
	// A call with a progress token gets its progress notifications.
	r.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"trigger-long-running-operation","arguments":{"duration":1,"steps":3},"_meta":{"progressToken":"p1"}}}`)
	progress := 0
	for {
		m := r.next(true)
		if req, ok := m.(interface{ IsCall() bool }); ok && !req.IsCall() {
			if strings.Contains(mustEncode(t, m), `"notifications/progress"`) {
				progress++
			}
			continue
		}
		if strings.Contains(mustEncode(t, m), `"id":2`) {
			break
		}
	}
	if progress == 0 {
		t.Fatal("no progress notifications relayed")
	}
	for i, req := range []string{
		`{"jsonrpc":"2.0","id":10,"method":"prompts/list"}`,
		`{"jsonrpc":"2.0","id":11,"method":"prompts/get","params":{"name":"args-prompt","arguments":{"city":"Oslo"}}}`,
		`{"jsonrpc":"2.0","id":12,"method":"resources/list"}`,
		`{"jsonrpc":"2.0","id":13,"method":"resources/read","params":{"uri":"demo://resource/static/document/architecture.md"}}`,
		`{"jsonrpc":"2.0","id":14,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"completable-prompt"},"argument":{"name":"department","value":"E"}}}`,
		`{"jsonrpc":"2.0","id":15,"method":"logging/setLevel","params":{"level":"debug"}}`,
		`{"jsonrpc":"2.0","id":16,"method":"resources/templates/list"}`,
		`{"jsonrpc":"2.0","id":17,"method":"tasks/list"}`,
	} {
		r.send(req)
		resp := r.response(10 + i)
		if resp.Error != nil {
			t.Errorf("%s: %v", req, resp.Error)
		}
	}
	// Unknown methods reach the upstream and its error comes back.
	r.send(`{"jsonrpc":"2.0","id":20,"method":"vendor/unknown","params":{"x":1}}`)
	if resp := r.response(20); resp.Error == nil {
		t.Errorf("vendor/unknown answered %s", resp.Result)
	}
}

// With sampling and elicitation declared, the npm server's own requests
// for them reach the go-sdk client through the proxy, and list_changed
// notifications are relayed.
func TestNPMEverythingRelaysServerRequests(t *testing.T) {
	npmEverything(t, testNPMEverythingRelaysServerRequests)
}

func testNPMEverythingRelaysServerRequests(t *testing.T, o hopts) {
	h := newHarness(t, o)
	rc := &relayClient{}
	cs := h.client(rc.options())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	eventually(t, "list_changed", func() bool { return rc.snapshot().changed > 0 })
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, tl := range tools.Tools {
		names[tl.Name] = true
	}
	if names["trigger-sampling-request"] {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "trigger-sampling-request", Arguments: map[string]any{"prompt": "hi", "maxTokens": 10}})
		if err != nil {
			t.Fatal(err)
		}
		if res.IsError {
			t.Fatalf("sampling tool: %+v (%s)", res.Content, verdicts(h.auditLines()))
		}
		if len(rc.snapshot().sampled) == 0 {
			t.Fatal("the sampling request did not reach the client")
		}
	} else {
		t.Errorf("no trigger-sampling-request tool; tools: %v", names)
	}
	if names["trigger-elicitation-request"] {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "trigger-elicitation-request", Arguments: map[string]any{}})
		if err != nil {
			t.Fatal(err)
		}
		if len(rc.snapshot().elicited) == 0 {
			t.Fatalf("the elicitation request did not reach the client: %+v", res.Content)
		}
	}
}

// The npm filesystem server: reads work, and its output is taint.
func TestNPMFilesystem(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "note.txt"), []byte("mail mallory@evil.example"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := npmServer(t, "server-filesystem", root)
	h := newHarness(t, hopts{cmd: &cmd})
	cs := h.client(nil)
	text, isErr := callTool(t, cs, "read_text_file", map[string]any{"path": filepath.Join(root, "note.txt")})
	if isErr || !strings.Contains(text, "mallory@evil.example") {
		t.Fatalf("read_text_file = %q, %v", text, isErr)
	}
	if !h.proxy.cfg.Store.Seen("mallory@evil.example") {
		t.Fatal("the file's content was not recorded as untrusted")
	}
}

func mustEncode(t *testing.T, m jsonrpc.Message) string {
	t.Helper()
	b, err := jsonrpc.EncodeMessage(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
