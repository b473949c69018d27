package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bouncer-mcp/bouncer/internal/listen"
	"github.com/bouncer-mcp/bouncer/internal/testsupport/testserver"
)

// listenPolicy is the helpdesk's policy in these tests.
const listenPolicy = `
send_email:
  exfiltrating: true
  sink_params: [to]
  trusted_destinations: [boss@corp.example]
  max_calls: 5
`

// listenTest is a real listener, built by buildListener from a config
// file as bouncer listen builds it, serving the helpdesk (this test
// binary, re-executed: testserver) on loopback, with token auth for
// alice and bob.
type listenTest struct {
	t      *testing.T
	home   string
	dir    string // the helpdesk's side effects
	l      *listen.Listener
	srv    *httptest.Server
	tokens map[string]string
}

func newListenTest(t *testing.T, extra string) *listenTest {
	t.Helper()
	lt := &listenTest{t: t, home: t.TempDir(), dir: t.TempDir(), tokens: map[string]string{}}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cfgDir := t.TempDir()
	tokens := map[string]string{}
	for _, u := range []string{"alice", "bob"} {
		tok := u + "-" + strings.Repeat("0123456789abcdef", 2)
		lt.tokens[u] = tok
		p := filepath.Join(cfgDir, u+".token")
		if err := os.WriteFile(p, []byte(tok+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		tokens[u] = p
	}
	cfg := map[string]any{
		"mcpServers": map[string]any{"helpdesk": map[string]any{
			"command": exe,
			"env":     map[string]string{testserver.EnvServer: "helpdesk", testserver.EnvDir: lt.dir},
		}},
	}
	lobj := map[string]any{"auth": "token", "tokens": tokens, "replica": "r1"}
	if extra != "" {
		var more map[string]any
		if err := json.Unmarshal([]byte(extra), &more); err != nil {
			t.Fatal(err)
		}
		for k, v := range more {
			lobj[k] = v
		}
	}
	cfg[listen.ConfigKey] = lobj
	data, _ := json.MarshalIndent(cfg, "", "  ")
	cfgFile := filepath.Join(cfgDir, "mcp.json")
	if err := os.WriteFile(cfgFile, data, 0o600); err != nil {
		t.Fatal(err)
	}
	pol := filepath.Join(cfgDir, "policy.yaml")
	if err := os.WriteFile(pol, []byte(listenPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	f := &listenFlags{home: lt.home, config: cfgFile, addr: "127.0.0.1:0", sandbox: "off"}
	f.policies = multiFlag{pol}
	l, _, closeLog, err := buildListener(f)
	if err != nil {
		t.Fatal(err)
	}
	lt.l = l
	l.Start()
	lt.srv = httptest.NewServer(l.Handler())
	t.Cleanup(func() {
		lt.srv.Close()
		l.Close()
		closeLog()
	})
	deadline := time.Now().Add(30 * time.Second)
	for !l.Pinned() {
		if time.Now().After(deadline) {
			t.Fatal("the helpdesk's tool list was not pinned within 30s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	return lt
}

// bearerTransport adds a bearer token (and, for the tests that check it
// never reaches the upstream, a cookie).
type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// client connects user's go-sdk client. It opens no GET stream: whatever
// the listener sends it must come on the POST streams of its requests.
// elicit, if set, answers elicitation requests.
func (lt *listenTest) client(user string, elicit func(*mcp.ElicitRequest) (*mcp.ElicitResult, error)) *mcp.ClientSession {
	lt.t.Helper()
	opts := &mcp.ClientOptions{}
	if elicit != nil {
		opts.ElicitationHandler = func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) { return elicit(req) }
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "listen-test", Version: "1"}, opts)
	tr := &mcp.StreamableClientTransport{
		Endpoint:             lt.srv.URL + "/mcp",
		HTTPClient:           &http.Client{Transport: bearerTransport{lt.tokens[user]}},
		DisableStandaloneSSE: true,
		MaxRetries:           -1,
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, tr, nil)
	if err != nil {
		lt.t.Fatalf("%s connects: %v", user, err)
	}
	lt.t.Cleanup(func() { cs.Close() })
	return cs
}

// call calls a tool and returns the first text block and isError.
func call(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	text := ""
	if len(res.Content) > 0 {
		if tc, ok := res.Content[0].(*mcp.TextContent); ok {
			text = tc.Text
		}
	}
	return text, res.IsError
}

// The spike's test: Bouncer's own question about a held call reaches a
// client that never opens the GET stream, on the POST stream of the call,
// and the client's yes lets the call through.
func TestListenElicitationOnPOSTStream(t *testing.T) {
	lt := newListenTest(t, "")
	var asked atomic.Int32
	cs := lt.client("alice", func(req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked.Add(1)
		if !strings.Contains(req.Params.Message, "carol@partner.example") {
			t.Errorf("the question does not name the destination: %q", req.Params.Message)
		}
		return &mcp.ElicitResult{Action: "accept"}, nil
	})
	text, isErr := call(t, cs, "send_email", map[string]any{"to": "carol@partner.example", "subject": "hi", "body": "hello"})
	if isErr || text != "sent" || asked.Load() != 1 {
		t.Fatalf("send_email to an unknown recipient: %q (isError %v), asked %d times; want it asked once and sent", text, isErr, asked.Load())
	}
}
