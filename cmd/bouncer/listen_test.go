package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bouncer-mcp/bouncer/internal/listen"
	"github.com/bouncer-mcp/bouncer/internal/session"
	"github.com/bouncer-mcp/bouncer/internal/testsupport/syncbuf"
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
	t      testing.TB
	home   string
	dir    string // the helpdesk's side effects
	l      *listen.Listener
	srv    *httptest.Server
	tokens map[string]string
	policy string // the policy file's text; empty: listenPolicy
	config string // the config file; the token files are beside it, USER.token
}

func newListenTest(t testing.TB, extra string) *listenTest {
	return newListenTestServers(t, nil, extra)
}

// newListenTestServers is newListenTest with the config's mcpServers
// given (nil: the helpdesk on stdio, as "helpdesk"); it returns once every
// server is pinned.
func newListenTestServers(t testing.TB, servers map[string]any, extra string) *listenTest {
	t.Helper()
	lt := startListenTest(t, servers, extra)
	lt.waitPinned()
	return lt
}

// waitPinned returns once every server of the listener is pinned.
func (lt *listenTest) waitPinned() {
	lt.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !lt.l.Pinned() {
		if time.Now().After(deadline) {
			lt.t.Fatal("the helpdesk's tool list was not pinned within 30s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// startListenTest is newListenTestServers without the wait for the pins.
func startListenTest(t testing.TB, servers map[string]any, extra string) *listenTest {
	t.Helper()
	return startListenTestIn(t, t.TempDir(), "off", servers, extra)
}

// startListenTestIn is startListenTest with the state directory home and
// the --sandbox mode given.
func startListenTestIn(t testing.TB, home, sandboxMode string, servers map[string]any, extra string) *listenTest {
	t.Helper()
	return startListenTestPolicy(t, home, sandboxMode, servers, extra, "")
}

// startListenTestPolicy is startListenTestIn with the policy file's text
// given.
func startListenTestPolicy(t testing.TB, home, sandboxMode string, servers map[string]any, extra, policy string) *listenTest {
	t.Helper()
	lt := &listenTest{t: t, home: home, dir: t.TempDir(), tokens: map[string]string{}, policy: policy}
	cfgFile, pol := lt.writeConfig(servers, extra)
	lt.config = cfgFile
	f := &listenFlags{home: lt.home, config: cfgFile, addr: "127.0.0.1:0", sandbox: sandboxMode}
	f.policies = multiFlag{pol}
	l, _, closeLog, err := buildListener(f)
	if err != nil {
		t.Fatal(err)
	}
	lt.l = l
	l.Start()
	lt.srv = httptest.NewUnstartedServer(nil)
	lt.srv.Config = l.HTTPServer()
	lt.srv.Start()
	t.Cleanup(func() {
		lt.srv.Close()
		l.Close()
		closeLog()
	})
	return lt
}

// writeConfig writes the listener's config file (the helpdesk on stdio
// unless servers says otherwise; token auth for alice and bob; replica r1;
// extra's members added to x-bouncer-listen) and the policy file.
func (lt *listenTest) writeConfig(servers map[string]any, extra string) (cfgFile, pol string) {
	t := lt.t
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
	if servers == nil {
		servers = map[string]any{"helpdesk": map[string]any{
			"command": exe,
			"env":     map[string]string{testserver.EnvServer: "helpdesk", testserver.EnvDir: lt.dir},
		}}
	}
	cfg := map[string]any{"mcpServers": servers}
	lobj := map[string]any{"auth": "token", "tokens": tokens, "replica": "r1"}
	if extra != "" {
		var more map[string]any
		if err := json.Unmarshal([]byte(extra), &more); err != nil {
			t.Fatal(err)
		}
		for k, v := range more {
			if v == nil {
				delete(lobj, k) // null: leave the default
			} else {
				lobj[k] = v
			}
		}
	}
	cfg[listen.ConfigKey] = lobj
	data, _ := json.MarshalIndent(cfg, "", "  ")
	cfgFile = filepath.Join(cfgDir, "mcp.json")
	if err := os.WriteFile(cfgFile, data, 0o600); err != nil {
		t.Fatal(err)
	}
	pol = filepath.Join(cfgDir, "policy.yaml")
	policy := lt.policy
	if policy == "" {
		policy = listenPolicy
	}
	if err := os.WriteFile(pol, []byte(policy), 0o600); err != nil {
		t.Fatal(err)
	}
	return cfgFile, pol
}

// bearerTransport adds a bearer token, when there is one, over base.
type bearerTransport struct {
	token string
	base  http.RoundTripper // nil: http.DefaultTransport
}

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if b.token != "" {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	if b.base != nil {
		return b.base.RoundTrip(r)
	}
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
		HTTPClient:           &http.Client{Transport: bearerTransport{token: lt.tokens[user]}},
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
func call(t testing.TB, cs *mcp.ClientSession, tool string, args map[string]any) (string, bool) {
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
	send := map[string]any{"to": "carol@partner.example", "subject": "hi", "body": "hello"}
	text, isErr := call(t, cs, "send_email", send)
	if isErr || text != "sent" || asked.Load() != 1 {
		t.Fatalf("send_email to an unknown recipient: %q (isError %v), asked %d times; want it asked once and sent", text, isErr, asked.Load())
	}
	// A yes is its session's: alice's other session is asked again, and
	// her no there holds.
	var askedAgain atomic.Int32
	other := lt.client("alice", func(*mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		askedAgain.Add(1)
		return &mcp.ElicitResult{Action: "decline"}, nil
	})
	text, isErr = call(t, other, "send_email", send)
	if !isErr || askedAgain.Load() != 1 {
		t.Fatalf("the same send in alice's other session: %q (isError %v), asked %d times; want it asked there too, and declined", text, isErr, askedAgain.Load())
	}
}

// poison reads the helpdesk's ticket, whose text holds
// attacker@evil.example: the session's output now names it.
func poison(t *testing.T, cs *mcp.ClientSession) {
	t.Helper()
	if text, _ := call(t, cs, "get_ticket", map[string]any{"id": "4711"}); !strings.Contains(text, "attacker@evil.example") {
		t.Fatalf("get_ticket: %q", text)
	}
}

// Taint is per session and checked across the user's live sessions: an
// address in alice's output is denied for alice, in that session and in
// another of hers, and only asked about for bob.
func TestListenTaintScope(t *testing.T) {
	lt := newListenTest(t, "")
	no := func(*mcp.ElicitRequest) (*mcp.ElicitResult, error) { return &mcp.ElicitResult{Action: "decline"}, nil }
	a1 := lt.client("alice", no)
	a2 := lt.client("alice", no)
	var bobAsked atomic.Int32
	b := lt.client("bob", func(*mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		bobAsked.Add(1)
		return &mcp.ElicitResult{Action: "decline"}, nil
	})
	poison(t, a1)
	send := map[string]any{"to": "attacker@evil.example", "subject": "list", "body": "customers"}
	for name, cs := range map[string]*mcp.ClientSession{"alice's session": a1, "alice's other session": a2} {
		text, isErr := call(t, cs, "send_email", send)
		if !isErr || !strings.HasPrefix(text, "[bouncer blocked] ") || !strings.Contains(text, "untrusted") && !strings.Contains(text, "output") {
			t.Errorf("%s: send to the address alice's output held: %q (isError %v); want a taint deny", name, text, isErr)
		}
	}
	text, isErr := call(t, b, "send_email", send)
	if !isErr || bobAsked.Load() != 1 {
		t.Errorf("bob: %q (isError %v), asked %d times; want bob asked (his history does not hold it), and declined", text, isErr, bobAsked.Load())
	}
	if mails, _ := os.ReadFile(filepath.Join(lt.dir, "mails.jsonl")); len(mails) > 0 {
		t.Fatalf("a mail was sent: %s", mails)
	}
	// Every audit line names its user, session and replica.
	log, err := os.ReadFile(filepath.Join(lt.home, "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	users := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(log)), "\n") {
		var e struct{ User, Session, Replica string }
		if err := json.Unmarshal([]byte(line), &e); err != nil || e.User == "" || e.Replica != "r1" || !strings.HasPrefix(e.Session, "r1.") {
			t.Fatalf("audit line without its user, session or replica: %s", line)
		}
		users[e.User] = true
	}
	if !users["alice"] || !users["bob"] {
		t.Fatalf("audit lines' users: %v", users)
	}
}

// A code is its session's and its user's: bob can't approve alice's code
// (404, as an unknown one), bob's session can't redeem it, and alice's
// approval lets alice's call through.
func TestListenCodesAreTheUsers(t *testing.T) {
	lt := newListenTest(t, "")
	a := lt.client("alice", nil) // no elicitation: codes
	b := lt.client("bob", nil)
	send := map[string]any{"to": "carol@partner.example", "subject": "hi", "body": "hello"}
	text, isErr := call(t, a, "send_email", send)
	m := codeRE.FindStringSubmatch(text)
	if !isErr || m == nil {
		t.Fatalf("alice's first send: %q; want it blocked with a code", text)
	}
	code := m[1]
	if st, _ := lt.approve("bob", code); st != http.StatusNotFound {
		t.Fatalf("bob approving alice's code: %d, want 404", st)
	}
	if st, list := lt.get("bob", "/approvals"); st != 200 || strings.Contains(list, code) {
		t.Fatalf("bob's list of codes: %d %s; want it without alice's code", st, list)
	}
	if st, body := lt.approve("alice", code); st != http.StatusOK {
		t.Fatalf("alice approving her code: %d %s", st, body)
	}
	// Bob's session is not alice's: the same call there gets a code of
	// its own; alice's approved code is not redeemed by it.
	if text, isErr := call(t, b, "send_email", send); !isErr || !codeRE.MatchString(text) || strings.Contains(text, code) {
		t.Fatalf("bob's same send: %q; want it blocked with a code of his own", text)
	}
	if text, isErr := call(t, a, "send_email", send); isErr || text != "sent" {
		t.Fatalf("alice's retry after her approval: %q (isError %v)", text, isErr)
	}
}

var codeRE = regexp.MustCompile(`bouncer approve ([A-Z0-9]{3}-[A-Z0-9]{3})`)

func (lt *listenTest) approve(user, code string) (int, string) {
	req, _ := http.NewRequest(http.MethodPost, lt.srv.URL+"/approvals/"+code, strings.NewReader(`{"approve":true}`))
	req.Header.Set("Content-Type", "application/json")
	return lt.do(user, req)
}

func (lt *listenTest) get(user, path string) (int, string) {
	req, _ := http.NewRequest(http.MethodGet, lt.srv.URL+path, nil)
	return lt.do(user, req)
}

func (lt *listenTest) do(user string, req *http.Request) (int, string) {
	lt.t.Helper()
	resp, err := (&http.Client{Transport: bearerTransport{token: lt.tokens[user]}}).Do(req)
	if err != nil {
		lt.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// Budgets count per user across sessions, in the window: five sessions of
// alice share send_email's max_calls (5), and bob's budget is his own.
func TestListenBudgetAcrossSessions(t *testing.T) {
	lt := newListenTest(t, "")
	send := map[string]any{"to": "boss@corp.example", "subject": "s", "body": "b"}
	sent := 0
	for i := range 5 {
		cs := lt.client("alice", nil)
		for range 2 {
			text, isErr := call(t, cs, "send_email", send)
			switch {
			case !isErr && text == "sent":
				sent++
			case isErr && strings.Contains(text, "budget"):
			default:
				t.Fatalf("session %d: %q (isError %v)", i, text, isErr)
			}
		}
		cs.Close()
	}
	if sent != 5 {
		t.Fatalf("alice sent %d mails over five sessions of two calls; want 5, send_email's max_calls", sent)
	}
	if text, isErr := call(t, lt.client("bob", nil), "send_email", send); isErr {
		t.Fatalf("bob's first send: %q; his budget is his own", text)
	}
}

// An upstream that crashes is started again, held to the pin, and its
// session keeps its history: the address the first process's output held
// is still denied after the second one starts.
func TestListenRespawnKeepsTaint(t *testing.T) {
	lt := newListenTest(t, "")
	cs := lt.client("alice", func(*mcp.ElicitRequest) (*mcp.ElicitResult, error) { return &mcp.ElicitResult{Action: "accept"}, nil })
	poison(t, cs)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "crash", Arguments: map[string]any{}}); err == nil {
		t.Fatal("crash answered as if the server ran it")
	}
	// The session goes on, on a new process.
	text, isErr := call(t, cs, "echo", map[string]any{"text": "still here"})
	if isErr || text != "still here" {
		t.Fatalf("echo after the crash: %q (isError %v)", text, isErr)
	}
	text, isErr = call(t, cs, "send_email", map[string]any{"to": "attacker@evil.example", "subject": "s", "body": "b"})
	if !isErr || !strings.HasPrefix(text, "[bouncer blocked] ") {
		t.Fatalf("send to the address the crashed process's output held: %q (isError %v); want it denied", text, isErr)
	}
}

// The client's credentials never reach a remote upstream: it sees only
// the config entry's own headers.
func TestListenInboundTokenNeverReachesUpstream(t *testing.T) {
	dir := t.TempDir()
	h, path := testserver.HelpdeskHandler(dir, nil, "upstream-secret")
	var seen sync.Map // header lines the upstream got
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for k, vs := range r.Header {
			for _, v := range vs {
				seen.Store(k+": "+v, true)
			}
		}
		h.ServeHTTP(w, r)
	}))
	defer up.Close()
	lt := newListenTestServers(t, map[string]any{"remote": map[string]any{
		"url": up.URL + path, "headers": map[string]string{"Authorization": "Bearer upstream-secret"},
	}}, "")
	c := mcp.NewClient(&mcp.Implementation{Name: "listen-test", Version: "1"}, nil)
	tr := &mcp.StreamableClientTransport{Endpoint: lt.srv.URL + "/mcp", MaxRetries: -1,
		HTTPClient: &http.Client{Transport: cookieTransport{lt.tokens["alice"]}}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if text, isErr := call(t, cs, "echo", map[string]any{"text": "hi"}); isErr || text != "hi" {
		t.Fatalf("echo through the remote upstream: %q", text)
	}
	n := 0
	seen.Range(func(k, _ any) bool {
		line := k.(string)
		n++
		if strings.Contains(line, lt.tokens["alice"]) || strings.HasPrefix(line, "Cookie") || strings.HasPrefix(line, "Proxy-Authorization") {
			t.Errorf("the upstream got the client's %q", line)
		}
		return true
	})
	if _, ok := seen.Load("Authorization: Bearer upstream-secret"); !ok || n == 0 {
		t.Fatalf("the upstream never got its own credential")
	}
}

// cookieTransport sends alice's token, a cookie and a proxy credential.
type cookieTransport struct{ token string }

func (c cookieTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+c.token)
	r.Header.Set("Cookie", "session=alice-cookie")
	r.Header.Set("Proxy-Authorization", "Basic YWxpY2U6c2VjcmV0")
	return http.DefaultTransport.RoundTrip(r)
}

// raw posts body to the endpoint as user with extra headers, and returns
// the status and body.
func (lt *listenTest) raw(user, method, body string, hdr map[string]string) (int, string, http.Header) {
	lt.t.Helper()
	return lt.rawAt(user, "/mcp", method, body, hdr)
}

// rawAt is raw, at the listener's path.
func (lt *listenTest) rawAt(user, path, method, body string, hdr map[string]string) (int, string, http.Header) {
	lt.t.Helper()
	req, _ := http.NewRequest(method, lt.srv.URL+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := (&http.Client{Transport: bearerTransport{token: lt.tokens[user]}}).Do(req)
	if err != nil {
		lt.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

// oversized posts a body over the limit as user (in session sid, if
// given) on a connection of its own, written whole before the answer is
// read, and returns the status. The server answers from the
// Content-Length, before it reads the body, and closes the connection;
// through net/http's client, which reads an answer while it still writes,
// an answer before the body is written races the client's own teardown of
// the connection, and on a loaded machine the client returns its write
// error instead of the 413.
func (lt *listenTest) oversized(user, body, sid string) int {
	lt.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, lt.srv.URL+"/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+lt.tokens[user])
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
	}
	c, err := net.Dial("tcp", req.URL.Host)
	if err != nil {
		lt.t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	if err := req.Write(c); err != nil {
		lt.t.Fatalf("writing an oversized body: %v", err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), req)
	if err != nil {
		lt.t.Fatalf("the answer to an oversized body: %v", err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// The HTTP edge: a later protocol's discovery falls back to initialize,
// unknown and foreign session ids are 404, a foreign Host or Origin is
// 403, no token is 401, an oversized body is 413.
func TestListenEdge(t *testing.T) {
	lt := newListenTest(t, `{"limits": {"max_body": 65536}, "origins": ["http://app.example"], "hosts": ["localhost", "127.0.0.1"]}`)
	// A 2026-07-28 client asks server/discover first; the answer makes it
	// initialize (the go-sdk client does so by default: see client()).
	st, body, _ := lt.raw("alice", "POST", `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
		map[string]string{"Mcp-Protocol-Version": "2026-07-28"})
	if st != http.StatusBadRequest || !strings.Contains(body, `"code":-32022`) || !strings.Contains(body, "2025-11-25") {
		t.Fatalf("server/discover: %d %s", st, body)
	}
	cs := lt.client("alice", nil)
	if v := cs.InitializeResult().ProtocolVersion; v != "2025-11-25" {
		t.Fatalf("a default go-sdk client negotiated %q", v)
	}
	// alice's session id, as the listener minted it.
	st, _, h := lt.raw("alice", "POST", initBody, nil)
	sid := h.Get("Mcp-Session-Id")
	if st != http.StatusOK || !regexp.MustCompile(`^r1\.[a-z2-7]{39}$`).MatchString(sid) {
		t.Fatalf("initialize: %d, session id %q; want r1. and 192 random bits", st, sid)
	}
	ping := `{"jsonrpc":"2.0","id":2,"method":"ping"}`
	if st, _, _ := lt.raw("alice", "POST", ping, map[string]string{"Mcp-Session-Id": sid}); st != http.StatusOK {
		t.Fatalf("alice's ping in her session: %d", st)
	}
	last := byte('a')
	if sid[len(sid)-1] == 'a' {
		last = 'b'
	}
	near := sid[:len(sid)-1] + string(last)
	for name, c := range map[string]struct{ user, id string }{
		"bob with alice's id":  {"bob", sid},
		"a near miss":          {"alice", near},
		"an id never minted":   {"alice", "r1.aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"},
		"another replica's id": {"alice", "r2" + sid[2:]},
	} {
		if st, _, _ := lt.raw(c.user, "POST", ping, map[string]string{"Mcp-Session-Id": c.id}); st != http.StatusNotFound {
			t.Errorf("%s: %d, want 404", name, st)
		}
	}
	for name, c := range map[string]struct {
		hdr  map[string]string
		want int
	}{
		"a foreign Host":   {map[string]string{"Host": "evil.example"}, http.StatusForbidden},
		"a foreign Origin": {map[string]string{"Origin": "http://evil.example"}, http.StatusForbidden},
		"another port":     {map[string]string{"Origin": "http://app.example:8080"}, http.StatusForbidden},
		"a listed Origin":  {map[string]string{"Origin": "http://app.example"}, http.StatusOK},
	} {
		if st, body, _ := lt.raw("alice", "POST", initBody, c.hdr); st != c.want {
			t.Errorf("%s: %d %s, want %d", name, st, body, c.want)
		}
	}
	if st, _, _ := lt.raw("nobody", "POST", initBody, nil); st != http.StatusUnauthorized {
		t.Errorf("no token: %d, want 401", st)
	}
	big := `{"jsonrpc":"2.0","id":3,"method":"ping","params":{"pad":"` + strings.Repeat("x", 70000) + `"}}`
	if st := lt.oversized("alice", big, sid); st != http.StatusRequestEntityTooLarge {
		t.Errorf("a 70 KB body over a 64 KiB limit: %d, want 413", st)
	}
	if st, _, _ := lt.raw("alice", "DELETE", "", map[string]string{"Mcp-Session-Id": sid}); st != http.StatusNoContent {
		t.Errorf("DELETE: %d", st)
	}
	if st, _, _ := lt.raw("alice", "POST", ping, map[string]string{"Mcp-Session-Id": sid}); st != http.StatusNotFound {
		t.Errorf("the deleted session: %d, want 404", st)
	}
}

// freeAddr returns a loopback address nothing listens on.
func freeAddr(t testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// SIGTERM drains the real bouncer listen process: /readyz fails at once
// (well within 1 s), a call in flight finishes and gets its answer, the
// metrics count what happened, and the process exits 0.
func TestListenSIGTERMDrains(t *testing.T) {
	lt := &listenTest{t: t, home: t.TempDir(), dir: t.TempDir(), tokens: map[string]string{}}
	cfgFile, pol := lt.writeConfig(nil, "")
	addr, maddr := freeAddr(t), freeAddr(t)
	cmd := exec.Command("bouncer", "listen", "--config", cfgFile, "--policy", pol, "--home", lt.home, "--sandbox", "off",
		"--addr", addr, "--metrics-addr", maddr)
	var stderr syncbuf.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
		}
	}()
	ready := func() int {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for deadline := time.Now().Add(30 * time.Second); ready() != 200; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("never ready:\n%s", stderr.String())
		}
	}
	lt.srv = &httptest.Server{URL: "http://" + addr}
	cs := lt.client("alice", nil)
	slow := make(chan string, 1)
	go func() {
		text, _ := call(t, cs, "slow", map[string]any{"ms": 1500})
		slow <- text
	}()
	time.Sleep(300 * time.Millisecond) // the call is in flight
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for ready() == 200 {
		if time.Since(start) > time.Second {
			t.Fatal("/readyz still 200 a second after SIGTERM")
		}
		time.Sleep(5 * time.Millisecond)
	}
	resp, err := http.Get("http://" + maddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{"\nbouncer_draining 1\n", "\nbouncer_sessions 1\n", "\nbouncer_upstream_starts_total 2\n", "\n" + `bouncer_verdicts_total{verdict="allow",rule="default"} 1` + "\n"} {
		if !strings.Contains(string(metrics), want) {
			t.Errorf("metrics lack %q:\n%s", want, metrics)
		}
	}
	if text := <-slow; text != "slept" {
		t.Fatalf("the call in flight at SIGTERM: %q; want its answer", text)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("bouncer listen after SIGTERM: %v\n%s", err, stderr.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("bouncer listen did not exit after draining:\n%s", stderr.String())
	}
}

// Random and near-miss session ids all get 404, through the whole handler
// (Host, token, lookup), while alice's own session keeps answering. The
// million ids are TestLookupMillionIDs' in internal/listen (the table
// alone: through the handler they take 40 µs each, too long for a run
// under the race detector), and that a known id of another user and an id
// never minted take the same time is BenchmarkLookup's: a timing claim is
// a benchmark's.
func TestListenSessionIDs(t *testing.T) {
	lt := newListenTest(t, "")
	st, _, h := lt.raw("alice", "POST", initBody, nil)
	sid := h.Get("Mcp-Session-Id")
	if st != 200 || sid == "" {
		t.Fatalf("initialize: %d", st)
	}
	n := 20_000
	if testing.Short() {
		n = 2_000
	}
	handler := lt.l.Handler()
	ping := []byte(`{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	alphabet := "abcdefghijklmnopqrstuvwxyz234567"
	rnd := rand.New(rand.NewPCG(1, 2))
	id := []byte(sid)
	for i := range n {
		var try string
		switch i % 4 {
		case 0: // one character of alice's id changed
			b := append([]byte(nil), id...)
			j := 3 + rnd.IntN(len(b)-3)
			b[j] = alphabet[(strings.IndexByte(alphabet, b[j])+1+rnd.IntN(31))%32]
			try = string(b)
		case 1: // alice's id, one character longer or shorter
			if i%8 == 1 {
				try = sid + "a"
			} else {
				try = sid[:len(sid)-1]
			}
		case 2: // random, in the id's form
			b := make([]byte, 39)
			for k := range b {
				b[k] = alphabet[rnd.IntN(32)]
			}
			try = "r1." + string(b)
		default: // alice's own id, sent by bob
			try = sid
		}
		user := "alice"
		if i%4 == 3 {
			user = "bob"
		}
		req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", bytes.NewReader(ping))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+lt.tokens[user])
		req.Header.Set("Mcp-Session-Id", try)
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)
		if rec.Code != http.StatusNotFound {
			t.Fatalf("id %q from %s: %d, want 404", try, user, rec.Code)
		}
	}
	if st, body, _ := lt.raw("alice", "POST", string(ping), map[string]string{"Mcp-Session-Id": sid}); st != 200 || !strings.Contains(body, `"result":{}`) {
		t.Fatalf("alice's own session after the flood: %d %s", st, body)
	}
}

// Hostile clients meanwhile: slowloris connections are dropped at the
// header timeout, a flood of initializes is held to the user's session
// limit (429), oversized bodies get 413, and bob's well-behaved session
// answers every call throughout. (How its latency holds is
// BenchmarkListen's to say; here, that it is never refused or cut.)
func TestListenHostileClients(t *testing.T) {
	lt := newListenTest(t, `{"limits": {"header_timeout": "3s", "sessions_per_user": 5, "max_body": 65536}}`)
	bob := lt.client("bob", nil)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var calls atomic.Int32
	wg.Add(1)
	go func() { // the well-behaved session
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if text, isErr := call(t, bob, "echo", map[string]any{"text": "hi"}); isErr || text != "hi" {
				t.Errorf("bob's echo during the attack: %q", text)
				return
			}
			calls.Add(1)
		}
	}()
	host := strings.TrimPrefix(lt.srv.URL, "http://")
	// Slowloris: headers dripped, never finished.
	var slow []net.Conn
	for range 20 {
		c, err := net.Dial("tcp", host)
		if err != nil {
			t.Fatal(err)
		}
		slow = append(slow, c)
		fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: %s\r\nX-Drip: ", host)
	}
	// A flood of initializes from alice: five sessions, then 429.
	var ok, limited atomic.Int32
	var fw sync.WaitGroup
	for range 40 {
		fw.Add(1)
		go func() {
			defer fw.Done()
			switch st, _, _ := lt.raw("alice", "POST", initBody, nil); st {
			case http.StatusOK:
				ok.Add(1)
			case http.StatusTooManyRequests:
				limited.Add(1)
			default:
				t.Errorf("a flooding initialize: %d", st)
			}
		}()
	}
	// Oversized bodies.
	big := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"pad":"` + strings.Repeat("x", 100000) + `"}}`
	for range 10 {
		if st := lt.oversized("alice", big, ""); st != http.StatusRequestEntityTooLarge {
			t.Errorf("an oversized body: %d", st)
		}
	}
	fw.Wait()
	if ok.Load() != 5 || limited.Load() != 35 {
		t.Errorf("the flood: %d sessions, %d refused with 429; want 5 and 35", ok.Load(), limited.Load())
	}
	// The slowloris connections are closed by the server after the header
	// timeout.
	for i, c := range slow {
		c.SetReadDeadline(time.Now().Add(15 * time.Second))
		buf := make([]byte, 512)
		for {
			_, err := c.Read(buf)
			if err == nil {
				continue // a 408 answer, then the close
			}
			if ne, isNet := err.(net.Error); isNet && ne.Timeout() {
				t.Fatalf("slowloris connection %d still open after 15 s", i)
			}
			break
		}
		c.Close()
	}
	close(stop)
	wg.Wait()
	if calls.Load() < 5 {
		t.Fatalf("bob's session made %d calls during the attack", calls.Load())
	}
}

// With a warm pool, a session starts on a process started before it came,
// and the pool is filled again; the session is judged as any other.
func TestListenWarmPool(t *testing.T) {
	lt := newListenTest(t, `{"limits": {"warm": 2}}`)
	m := func() string {
		rec := httptest.NewRecorder()
		lt.l.Metrics().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		return rec.Body.String()
	}
	waitFor := func(want string) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); !strings.Contains(m(), want); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("metrics never had %q:\n%s", want, m())
			}
		}
	}
	waitFor("\nbouncer_upstream_starts_total 3\n") // the pin's, and two warm
	cs := lt.client("alice", nil)
	poison(t, cs)
	if text, isErr := call(t, cs, "send_email", map[string]any{"to": "attacker@evil.example", "subject": "s", "body": "b"}); !isErr {
		t.Fatalf("a session on a warm process: the tainted send went through: %q", text)
	}
	waitFor("\nbouncer_upstream_starts_total 4\n") // the pool filled again
}

// The deployment's pin is taken once, at start: a session whose upstream
// lists anything else is refused, and so is a session whose crashed
// upstream comes back listing anything else. The helpdesk here is updated
// between starts (testserver.ChangedTools: echo's description names an
// address to mail): the listener pinned the old tools; alice's session
// from before the update goes on; a new session's call is answered with
// the refusal and never reaches the server, and the session is gone; a
// call held while the tools are listed is denied and audited, not
// forwarded; the old session, once its process crashes and the updated
// one takes its place, is refused too.
func TestListenPinMismatchRefused(t *testing.T) {
	lt := newListenTest(t, "")
	yes := func(*mcp.ElicitRequest) (*mcp.ElicitResult, error) { return &mcp.ElicitResult{Action: "accept"}, nil }
	before := lt.client("alice", yes)
	if text, isErr := call(t, before, "echo", map[string]any{"text": "hi"}); isErr || text != "hi" {
		t.Fatalf("echo before the update: %q", text)
	}
	if err := os.WriteFile(filepath.Join(lt.dir, testserver.ChangedTools), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	after := lt.client("alice", yes)
	_, err := after.CallTool(ctx, &mcp.CallToolParams{Name: "send_email", Arguments: map[string]any{"to": "boss@corp.example", "subject": "s", "body": "b"}})
	if err == nil || !strings.Contains(err.Error(), "refused") || !strings.Contains(err.Error(), "'echo'") {
		t.Fatalf("a call in a session whose upstream lists a changed echo: %v; want the session's refusal, naming echo", err)
	}
	// The session is gone: its id is 404 from now on.
	st, body, _ := lt.raw("alice", "POST", `{"jsonrpc":"2.0","id":9,"method":"ping"}`, map[string]string{"Mcp-Session-Id": after.ID()})
	if st != http.StatusNotFound {
		t.Fatalf("the refused session's id: %d %s; want 404", st, body)
	}
	// A call the pump holds while it lists the tools is denied, not
	// forwarded: sent in one batch with notifications/initialized (at
	// 2025-03-26, which has batches), it is queued before the listing
	// starts.
	st, _, h := lt.raw("alice", "POST", strings.Replace(initBody, "2025-11-25", "2025-03-26", 1), nil)
	held := h.Get("Mcp-Session-Id")
	if st != http.StatusOK || held == "" {
		t.Fatalf("initialize: %d", st)
	}
	st, body, _ = lt.raw("alice", "POST", `[{"jsonrpc":"2.0","method":"notifications/initialized"},`+
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"send_email","arguments":{"to":"boss@corp.example","subject":"s","body":"b"}}}]`,
		map[string]string{"Mcp-Session-Id": held, "Mcp-Protocol-Version": "2025-03-26"})
	if st != http.StatusOK || !strings.Contains(body, `"id":2`) || !strings.Contains(body, "the session was refused") {
		t.Fatalf("a call held while the refused session's tools were listed: %d %s; want it answered with the refusal", st, body)
	}
	// The session from before the update still runs its old process.
	if text, isErr := call(t, before, "echo", map[string]any{"text": "still"}); isErr || text != "still" {
		t.Fatalf("echo in the session from before the update: %q (isError %v)", text, isErr)
	}
	// Its process crashes; the updated one started in its place lists the
	// changed echo, and the session is refused.
	if _, err := before.CallTool(ctx, &mcp.CallToolParams{Name: "crash", Arguments: map[string]any{}}); err == nil {
		t.Fatal("crash answered as if the server ran it")
	}
	_, err = before.CallTool(ctx, &mcp.CallToolParams{Name: "send_email", Arguments: map[string]any{"to": "boss@corp.example", "subject": "s", "body": "b"}})
	if err == nil || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("a call after the respawn onto the updated server: %v; want the session's refusal", err)
	}
	if mails, _ := os.ReadFile(filepath.Join(lt.dir, "mails.jsonl")); len(mails) > 0 {
		t.Fatalf("a refused session's mail reached the server: %s", mails)
	}
	// Every send_email on the audit log is denied for the refusal (a call
	// that came after the session ended was refused before it reached
	// the judge), the held call's among them.
	log, err := os.ReadFile(filepath.Join(lt.home, "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	denied := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(log)), "\n") {
		var e struct{ Tool, Verdict, Rule, Reason, Session string }
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatal(err)
		}
		if e.Tool == "send_email" {
			if e.Verdict != "deny" || e.Rule != "pinning" || !strings.Contains(e.Reason, "refused") {
				t.Errorf("a refused session's send_email was audited %s/%s %q", e.Verdict, e.Rule, e.Reason)
			}
			denied[e.Session] = true
		}
	}
	if !denied[held] {
		t.Errorf("send_email denied in sessions %v; want the held call's, %s, among them", denied, held)
	}
}

// A user's scope is forgotten once their last session has ended and their
// budget window has passed, so the listener's memory does not grow with
// the number of users it has seen; what a user chose to remember is in
// their own file, and holds again in their next session.
func TestListenUserScopes(t *testing.T) {
	lt := newListenTest(t, `{"limits": {"budget_window": "1s"}}`)
	waitUsers := func(n int) {
		t.Helper()
		want := fmt.Sprintf("\nbouncer_users %d\n", n)
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			rec := httptest.NewRecorder()
			lt.l.Metrics().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
			if strings.Contains(rec.Body.String(), want) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("metrics never had %q:\n%s", want, rec.Body.String())
			}
		}
	}
	var asked atomic.Int32
	remember := func(*mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked.Add(1)
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"remember": true}}, nil
	}
	send := map[string]any{"to": "carol@partner.example", "subject": "s", "body": "b"}
	alice, bob := lt.client("alice", remember), lt.client("bob", remember)
	if text, _ := call(t, alice, "send_email", send); text != "sent" || asked.Load() != 1 {
		t.Fatalf("alice's send: %q, asked %d times", text, asked.Load())
	}
	call(t, bob, "echo", map[string]any{"text": "hi"})
	waitUsers(2)
	// Bob made no call a budget counts: his scope goes with his session.
	bob.Close()
	waitUsers(1)
	// Alice's send counted against send_email's max_calls: her scope stays
	// until her window has passed, then goes with her last session.
	time.Sleep(1100 * time.Millisecond)
	alice.Close()
	waitUsers(0)
	// Her next session remembers carol, from her own file; bob's does not.
	if text, _ := call(t, lt.client("alice", remember), "send_email", send); text != "sent" || asked.Load() != 1 {
		t.Fatalf("alice's send in a new session: %q, asked %d times; want it sent unasked", text, asked.Load())
	}
	if text, _ := call(t, lt.client("bob", remember), "send_email", send); text != "sent" || asked.Load() != 2 {
		t.Fatalf("bob's send: %q, asked %d times; want him asked", text, asked.Load())
	}
}

// A batch of requests a stdio server sends its client, one of which it
// then cancels, is answered whole, as one array: the cancelled request by
// Bouncer, the other by the client (internal/proxy's
// TestUpstreamBatchAnswered, through the listener, whose wrappers of the
// server's process must pass its book of batches on to the pump).
func TestListenUpstreamBatchAnswered(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	lt := newListenTestServers(t, map[string]any{"raw": map[string]any{"command": exe,
		"env": map[string]string{testserver.EnvServer: "raw-upbatch", testserver.EnvDir: dir}}}, "")
	st, _, h := lt.raw("alice", "POST", strings.Replace(initBody, "2025-11-25", "2025-03-26", 1), nil)
	sid := h.Get("Mcp-Session-Id")
	if st != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %d", st)
	}
	hdr := map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-03-26"}
	if st, body, _ := lt.raw("alice", "POST", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, hdr); st != http.StatusAccepted {
		t.Fatalf("initialized: %d %s", st, body)
	}
	req, _ := http.NewRequest(http.MethodPost, lt.srv.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"batch","arguments":{}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := (&http.Client{Transport: bearerTransport{token: lt.tokens["alice"]}, Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	stream, _ := io.ReadAll(resp.Body) // the call's stream: the server's batch, its cancellation, the answer
	if !strings.Contains(string(stream), `"id":42,"method":"ping"`) || !strings.Contains(string(stream), `"id":1,"result"`) {
		t.Fatalf("the call's stream: %s", stream)
	}
	if st, body, _ := lt.raw("alice", "POST", `{"jsonrpc":"2.0","id":42,"result":{}}`, hdr); st != http.StatusAccepted {
		t.Fatalf("the answer to ping 42: %d %s", st, body)
	}
	want := `[{"jsonrpc":"2.0","id":41,"error":{"code":-32800,"message":"bouncer: the request was cancelled"}},{"jsonrpc":"2.0","id":42,"result":{}}]`
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		got, _ := os.ReadFile(filepath.Join(dir, "received.jsonl"))
		if strings.Contains(string(got), want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server never got its batch answered as %s; it got:\n%s", want, got)
		}
	}
}

// The replica's session cap holds against initializes at once (503 with
// Retry-After: another replica may take the session), a user's process
// cap answers 429 and leaves other users alone, and a session's end gives
// back both its session and its process.
func TestListenLimits(t *testing.T) {
	initialize := func(lt *listenTest, user string) (int, string, http.Header) {
		return lt.raw(user, "POST", initBody, nil)
	}
	// until polls an initialize until it is answered 200: a session's
	// process is given back when it has exited, just after the DELETE.
	until := func(lt *listenTest, user string) {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for {
			st, body, _ := initialize(lt, user)
			if st == http.StatusOK {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s's initialize after a DELETE: %d %s", user, st, body)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	t.Run("replica", func(t *testing.T) {
		lt := newListenTest(t, `{"limits": {"sessions": 3}}`)
		var mu sync.Mutex
		var sids []string
		var codes []int
		var wg sync.WaitGroup
		for i := range 10 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				st, body, h := initialize(lt, []string{"alice", "bob"}[i%2])
				mu.Lock()
				defer mu.Unlock()
				codes = append(codes, st)
				switch st {
				case http.StatusOK:
					sids = append(sids, h.Get("Mcp-Session-Id"))
				case http.StatusServiceUnavailable:
					if h.Get("Retry-After") == "" || !strings.Contains(body, "3 sessions, its limit") {
						t.Errorf("a 503 without Retry-After or reason: %v %q", h, body)
					}
				}
			}()
		}
		wg.Wait()
		if len(sids) != 3 || slices.ContainsFunc(codes, func(c int) bool { return c != http.StatusOK && c != http.StatusServiceUnavailable }) {
			t.Fatalf("10 initializes at once under a cap of 3: %v; want 3 × 200, the rest 503", codes)
		}
		for _, sid := range sids {
			// Whoever owns it: the other user's DELETE is 404.
			for _, u := range []string{"alice", "bob"} {
				lt.raw(u, "DELETE", "", map[string]string{"Mcp-Session-Id": sid})
			}
		}
		until(lt, "alice")
	})
	t.Run("processes", func(t *testing.T) {
		lt := newListenTest(t, `{"limits": {"processes_per_user": 1}}`)
		st, _, h := initialize(lt, "alice")
		if st != http.StatusOK {
			t.Fatalf("alice's first session: %d", st)
		}
		sid := h.Get("Mcp-Session-Id")
		st, body, h2 := initialize(lt, "alice")
		if st != http.StatusTooManyRequests || h2.Get("Retry-After") == "" || !strings.Contains(body, "server processes on this replica, the limit") {
			t.Fatalf("alice's second process: %d %q %v; want 429 with Retry-After", st, body, h2)
		}
		if st, _, _ := initialize(lt, "bob"); st != http.StatusOK {
			t.Fatalf("bob's session while alice is at her limit: %d", st)
		}
		if st, _, _ := lt.raw("alice", "DELETE", "", map[string]string{"Mcp-Session-Id": sid}); st != http.StatusNoContent {
			t.Fatalf("DELETE: %d", st)
		}
		until(lt, "alice")
	})
}

// Readiness waits for every server's pin: while one server's tool list
// cannot be taken (its process exits at once), /readyz is 503 naming it,
// and a session of it is refused with 503 and Retry-After, never started
// on no pin; the other server, pinned, serves.
func TestListenReadyWaitsForPin(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	lt := startListenTest(t, map[string]any{
		"helpdesk": map[string]any{"command": exe, "env": map[string]string{testserver.EnvServer: "helpdesk", testserver.EnvDir: t.TempDir()}},
		"broken":   map[string]any{"command": "false"},
	}, "")
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, body := lt.get("alice", "/readyz")
		if st != http.StatusServiceUnavailable || !strings.Contains(body, `server "broken" not pinned`) {
			t.Fatalf("/readyz with a server that cannot be pinned: %d %q", st, body)
		}
		if !strings.Contains(body, `"helpdesk"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the helpdesk was not pinned within 30s: %q", body)
		}
		time.Sleep(20 * time.Millisecond)
	}
	post := func(server string) (int, string, http.Header) {
		return lt.rawAt("alice", "/servers/"+server+"/mcp", http.MethodPost, initBody, nil)
	}
	if st, body, h := post("broken"); st != http.StatusServiceUnavailable || h.Get("Retry-After") == "" || !strings.Contains(body, "not pinned yet") {
		t.Fatalf("a session of the unpinned server: %d %q %v; want 503 with Retry-After", st, body, h)
	}
	if st, body, _ := post("helpdesk"); st != http.StatusOK {
		t.Fatalf("a session of the pinned server: %d %q", st, body)
	}
}

// The operator's remembered destinations (bouncer trust add on the host:
// the state directory's remembered.json) hold for every user's sessions,
// beside each user's own; what a user ticks "remember" for goes to that
// user's file, never to the operator's, which every user shares.
func TestListenOperatorTrust(t *testing.T) {
	lt := newListenTest(t, "")
	operator := session.OpenRemembered(lt.home)
	if err := operator.Add("helpdesk", "carol@partner.example", "test", time.Now()); err != nil {
		t.Fatal(err)
	}
	var asked atomic.Int32
	remember := func(*mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked.Add(1)
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"remember": true}}, nil
	}
	alice, bob := lt.client("alice", remember), lt.client("bob", remember)
	toCarol := map[string]any{"to": "carol@partner.example", "subject": "s", "body": "b"}
	for name, cs := range map[string]*mcp.ClientSession{"alice": alice, "bob": bob} {
		if text, _ := call(t, cs, "send_email", toCarol); text != "sent" || asked.Load() != 0 {
			t.Fatalf("%s's send to the operator's destination: %q, asked %d times; want it sent unasked", name, text, asked.Load())
		}
	}
	// alice remembers dave: her file has him, the operator's does not, and
	// bob is asked.
	toDave := map[string]any{"to": "dave@partner.example", "subject": "s", "body": "b"}
	if text, _ := call(t, alice, "send_email", toDave); text != "sent" || asked.Load() != 1 {
		t.Fatalf("alice's send to dave: %q, asked %d times", text, asked.Load())
	}
	if operator.Has("helpdesk", "dave@partner.example") {
		t.Fatal("alice's remembered destination went into the operator's file")
	}
	if text, _ := call(t, bob, "send_email", toDave); text != "sent" || asked.Load() != 2 {
		t.Fatalf("bob's send to dave: %q, asked %d times; want him asked", text, asked.Load())
	}
}

// A session's server is kept off Bouncer's own files as bouncer run keeps
// its one, by the kernel: a helpdesk whose own side effects land in the
// listener's state directory (a path no argument of the call names, so
// the argument checks have nothing to judge) cannot write there, while the
// same helpdesk under --sandbox off can.
func TestListenServersOffOwnFiles(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, mode string
		kept       bool
		padding    int // bytes of environment
	}{
		{"auto", "auto", true, 0},
		{"off", "off", false, 0},
		// Too large for the spawner's one datagram: the server starts
		// without it, in the same form.
		{"auto/environment too large for the spawner", "auto", true, 200 << 10},
	} {
		t.Run(c.name, func(t *testing.T) {
			home := t.TempDir()
			inside := filepath.Join(home, "server-side")
			if err := os.Mkdir(inside, 0o700); err != nil {
				t.Fatal(err)
			}
			env := map[string]string{testserver.EnvServer: "helpdesk", testserver.EnvDir: inside}
			for i := 0; i < c.padding; i += 50 << 10 {
				// execve takes no one string over 128 KiB.
				env[fmt.Sprintf("PADDING%d", i)] = strings.Repeat("x", 50<<10)
			}
			lt := startListenTestIn(t, home, c.mode, map[string]any{"helpdesk": map[string]any{
				"command": exe,
				"env":     env,
			}}, "")
			for deadline := time.Now().Add(30 * time.Second); !lt.l.Pinned(); time.Sleep(20 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("the helpdesk was not pinned within 30s")
				}
			}
			// boss@corp.example is a trusted destination: the call is
			// allowed and forwarded, so only the kernel can stop the
			// write, and the server answers with its error.
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			res, err := lt.client("alice", nil).CallTool(ctx, &mcp.CallToolParams{Name: "send_email", Arguments: map[string]any{"to": "boss@corp.example", "subject": "s", "body": "b"}})
			failed := err != nil || res.IsError
			_, statErr := os.Stat(filepath.Join(inside, "mails.jsonl"))
			if wrote := statErr == nil; wrote == c.kept || failed != c.kept {
				t.Fatalf("--sandbox %s: the server wrote into the state directory: %v; the call failed: %v (%v)", c.mode, wrote, failed, err)
			}
			if c.kept && !strings.Contains(fmt.Sprint(err), "mails.jsonl") {
				t.Fatalf("the call failed otherwise than by the server's write: %v", err)
			}
		})
	}
}
