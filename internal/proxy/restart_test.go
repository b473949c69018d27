package proxy

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bouncer-mcp/bouncer/internal/audit"
	"github.com/bouncer-mcp/bouncer/internal/transport"
)

// A remote server that restarts forgets its sessions: it answers 404 for
// the old session id. Bouncer starts a new session itself (the client's
// initialize again, then the tool list, which must be the pinned one
// exactly), so the client's next call goes through as if nothing
// happened; what may have run is never sent twice. The servers are real
// processes, killed and started again on the same address: the go-sdk
// helpdesk and the mcp-go one (stateful session ids).

// flavours are the HTTP test servers, as testserver.Main names them.
// streamChecks says the server answers the event stream's GET for a
// session it does not know with 404; mcp-go opens a stream for any id.
var flavours = []struct {
	name, server string
	streamChecks bool
}{
	{"go-sdk", "helpdesk-http", true},
	{"mcp-go", "mcpgo-http", false},
}

// restartServer stops the harness's HTTP server process (a kill, unless
// it exited by itself) and, unless opts is "", starts a new one where it
// was: the same server, address and state directory, these options
// (testserver.EnvHTTP) and bearer token. The new process knows none of
// the old one's sessions.
func (h *harness) restartServer(opts, token string) {
	h.t.Helper()
	_ = h.server.Process.Kill()
	_ = h.server.Wait()
	if opts == "" {
		return
	}
	u, err := url.Parse(h.url)
	if err != nil {
		h.t.Fatal(err)
	}
	got, cmd := startServerAt(h.t, h.name, h.dir, opts, token, u.Host)
	if got != h.url {
		h.t.Fatalf("the restarted server is at %s, not %s", got, h.url)
	}
	h.server = cmd
}

// callErr calls a tool and returns the JSON-RPC error it got, failing the
// test if it got a result.
func callErr(t *testing.T, cs *mcp.ClientSession, tool string, args any) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err == nil {
		text := ""
		if len(res.Content) > 0 {
			if tc, ok := res.Content[0].(*mcp.TextContent); ok {
				text = tc.Text
			}
		}
		t.Fatalf("call %s: a result (%q), want an error", tool, text)
	}
	return err.Error()
}

// lineWith returns the first audit line whose reason holds s.
func lineWith(t *testing.T, es []audit.Entry, s string) audit.Entry {
	t.Helper()
	for _, e := range es {
		if strings.Contains(e.Reason, s) {
			return e
		}
	}
	t.Fatalf("no audit line says %q: %s", s, verdicts(es))
	return audit.Entry{}
}

// gets returns the session ids the server's event stream GETs named
// (the getlog option), in order.
func (h *harness) gets() []string {
	b, err := os.ReadFile(filepath.Join(h.dir, "gets.txt"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		h.t.Fatal(err)
	}
	return strings.Fields(string(b))
}

// The call after a restart succeeds: it reaches the new server process
// once. The restart is found by the call itself (its post is answered
// 404, before the server runs it: so it is sent on the new session, and a
// second audit line says so) or, while the client is idle, by the event
// stream, if the server checks its id (then nothing judged before goes to
// the new session). Either way the client sees nothing of it, the event
// stream goes on for the new session, and the bearer token the server
// demands goes on as it was (no sign-in).
func TestRemoteRestart(t *testing.T) {
	type tc struct {
		name, opts, token string
		idle              bool // wait until the event stream is back, or found the restart
	}
	cases := []tc{
		{name: "found by the call", opts: "streamable,getlog"},
		{name: "idle", opts: "streamable,getlog", idle: true},
		{name: "bearer token", opts: "streamable,getlog", token: "s3cr3t-t0ken"},
	}
	for _, f := range flavours {
		cs := cases
		if f.server == "helpdesk-http" {
			cs = append(cs, tc{name: "json answers", opts: "json,getlog"})
		}
		for _, c := range cs {
			t.Run(f.name+"/"+c.name, func(t *testing.T) {
				o := hopts{http: c.opts, server: f.server, token: c.token, policy: helpdeskPolicy}
				if c.token != "" {
					o.headers = map[string][]string{"Authorization": {"Bearer " + c.token}}
				}
				h := newHarness(t, o)
				cs := h.client(nil)
				if text, _ := callTool(t, cs, "echo", map[string]any{"text": "before"}); text != "before" {
					t.Fatalf("echo before the restart = %q", text)
				}
				old := h.remote.SessionID()
				h.restartServer(c.opts, c.token)
				foundByStream := c.idle && f.streamChecks
				switch {
				case foundByStream:
					eventually(t, "the new session", func() bool {
						return strings.Contains(h.log.String(), "started a new session")
					})
				case c.idle:
					// The stream is back, on a session the new
					// server made up for the old id.
					eventually(t, "the event stream back", func() bool {
						g := h.gets()
						return len(g) > 1 && g[len(g)-1] == old
					})
				}
				if text, isErr := callTool(t, cs, "send_email", map[string]any{"to": "boss@corp.example", "subject": "after"}); text != "sent" || isErr {
					t.Fatalf("send_email after the restart = %q %v", text, isErr)
				}
				if mails := h.mails(); len(mails) != 1 || !strings.Contains(mails[0], "after") {
					t.Fatalf("mails = %q, want the one sent after the restart, once", mails)
				}
				if !foundByStream {
					// send_email's answer can come before the new
					// session has sent everything that waited; a call
					// made meanwhile waits too, and is sent on the new
					// session with a line of its own. The next call
					// is made after.
					eventually(t, "what waited sent", func() bool {
						return strings.Contains(h.log.String(), "that had not reached the server on the new session")
					})
				}
				if text, _ := callTool(t, cs, "echo", map[string]any{"text": "again"}); text != "again" {
					t.Fatalf("echo after the restart = %q", text)
				}
				lines := h.auditLines()
				want := "echo:allow/default send_email:allow/sink send_email:allow/pinning echo:allow/default"
				if foundByStream {
					want = "echo:allow/default send_email:allow/sink echo:allow/default"
				}
				if got := verdicts(lines); got != want {
					t.Fatalf("audit = %s, want %s", got, want)
				}
				if cur := h.remote.SessionID(); cur == old || cur == "" {
					t.Errorf("the session id is %q after the restart (it was %q)", cur, old)
				} else {
					eventually(t, "the event stream of the new session", func() bool {
						return slices.Contains(h.gets(), cur)
					})
				}
				if !foundByStream {
					l := lineWith(t, lines, "sent on a new session")
					if l.Tool != "send_email" || string(l.ID) != string(lines[1].ID) || !strings.Contains(l.Reason, "tool list is the one pinned") {
						t.Errorf("the line of the call sent on the new session: %+v", l)
					}
				}
				log := h.log.String()
				for _, want := range []string{"no longer knows this session", "started a new session", "its tool list is the pinned one"} {
					if !strings.Contains(log, want) {
						t.Errorf("stderr does not say %q:\n%s", want, log)
					}
				}
				if strings.Count(log, "no longer knows this session") != 1 {
					t.Errorf("more than one new session for one restart:\n%s", log)
				}
			})
		}
	}
}

// A server that comes back with another tool list (a tool defined
// otherwise, or one more): the call that found the restart was judged on
// the old pin, so it is not sent, and is refused with rule pinning; from
// then on what changed is refused as after a list_changed, and what did
// not goes on.
func TestRemoteRestartChangedTools(t *testing.T) {
	for _, c := range []struct {
		name, server, opts string
		differs            string // how the new list differs, as the refusal says
		echo               bool   // echo goes on after the restart
		refused            string // a tool refused after the restart
	}{
		{"go-sdk changed", "helpdesk-http", "streamable,changed", "definition of 'echo' differs (description)", false, "echo"},
		{"go-sdk added", "helpdesk-http", "streamable,added", "tool 'late' is new", true, "late"},
		{"mcp-go changed", "mcpgo-http", "streamable,changed", "definition of 'echo' differs (description)", false, "echo"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, hopts{http: "streamable", server: c.server, policy: helpdeskPolicy})
			cs := h.client(nil)
			callTool(t, cs, "echo", map[string]any{"text": "pinned"})
			h.restartServer(c.opts, "")
			text, isErr := callTool(t, cs, "send_email", map[string]any{"to": "boss@corp.example", "subject": "judged before"})
			if !isErr || !strings.HasPrefix(text, BlockedPrefix) || !strings.Contains(text, "differs from the one pinned") || !strings.Contains(text, c.differs) {
				t.Fatalf("the call that found the restart = %q %v", text, isErr)
			}
			if mails := h.mails(); len(mails) != 0 {
				t.Fatalf("mails = %q: a call judged on the old pin reached the new server", mails)
			}
			text, isErr = callTool(t, cs, "echo", map[string]any{"text": "after"})
			if c.echo == isErr || (!c.echo && !strings.Contains(text, "definition of 'echo' changed")) {
				t.Fatalf("echo after the restart = %q %v", text, isErr)
			}
			if text, isErr := callTool(t, cs, c.refused, map[string]any{}); !isErr || !strings.HasPrefix(text, BlockedPrefix) {
				t.Fatalf("%s after the restart = %q %v", c.refused, text, isErr)
			}
			if text, isErr := callTool(t, cs, "get_ticket", map[string]any{}); isErr || !strings.Contains(text, "4711") {
				t.Fatalf("get_ticket (unchanged) after the restart = %q %v", text, isErr)
			}
			lines := h.auditLines()
			echo := "echo:deny/pinning"
			if c.echo {
				echo = "echo:allow/default"
			}
			want := fmt.Sprintf("echo:allow/default send_email:allow/sink send_email:deny/pinning %s %s:deny/pinning get_ticket:allow/default", echo, c.refused)
			if got := verdicts(lines); got != want {
				t.Fatalf("audit = %s, want %s", got, want)
			}
			if l := lineWith(t, lines, "not sent"); string(l.ID) != string(lines[1].ID) || !strings.Contains(l.Reason, c.differs) {
				t.Errorf("the refused call's second line: %+v", l)
			}
			if log := h.log.String(); !strings.Contains(log, "differs from the pinned one") {
				t.Errorf("stderr does not say the tool list differs:\n%s", log)
			}
		})
	}
}

// A call the server had taken when it went is answered with an error that
// says it may have run, and is not sent again: here it is the call that
// crashes the server, which would crash the new one too. The event store
// makes the go-sdk try to resume the call's stream, which the new server
// answers 404.
func TestRemoteRestartInFlight(t *testing.T) {
	h := newHarness(t, hopts{http: "events", policy: helpdeskPolicy})
	cs := h.client(nil)
	callTool(t, cs, "echo", map[string]any{"text": "pinned"})
	crashed := make(chan string, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "crash", Arguments: map[string]any{}})
		switch {
		case err != nil:
			crashed <- err.Error()
		default:
			crashed <- fmt.Sprintf("a result, isError %v", res.IsError)
		}
	}()
	_ = h.server.Wait() // it exits in the call
	h.restartServer("events", "")
	select {
	case got := <-crashed:
		if !strings.Contains(got, "lost the session") || !strings.Contains(got, "may have run") {
			t.Fatalf("the call in flight = %s", got)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the call in flight got no answer")
	}
	if text, _ := callTool(t, cs, "echo", map[string]any{"text": "alive"}); text != "alive" {
		t.Fatalf("echo after the restart = %q (was crash sent again?)", text)
	}
	if got := verdicts(h.auditLines()); got != "echo:allow/default crash:allow/default echo:allow/default" {
		t.Fatalf("audit = %s", got)
	}
}

// The client's answer to a request the server sent on the old session
// (here a ping, sent while a call ran when the server went) is not sent on
// the new session, which never asked it, and whose ids start again.
func TestRemoteRestartStaleAnswer(t *testing.T) {
	h := newHarness(t, hopts{http: "streamable", policy: helpdeskPolicy})
	r := h.raw()
	r.handshake()
	rawCall(r, 1, "echo", `{"text":"pinned"}`)
	r.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"ping_client","arguments":{}}}`)
	var ping *jsonrpc.Request
	for ping == nil {
		if req, ok := r.next(false).(*jsonrpc.Request); ok && req.Method == "ping" {
			ping = req
		}
	}
	h.restartServer("streamable", "")
	if resp := r.response(2); resp.Error == nil {
		t.Fatalf("the call the server went in: %s", resp.Result)
	}
	id := ping.ID.Raw()
	r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%v,"result":{}}`, id))
	if text, _ := resultText(t, rawCall(r, 3, "echo", `{"text":"after"}`)); text != "after" {
		t.Fatalf("echo after the restart = %q", text)
	}
	eventually(t, "the answer dropped", func() bool {
		return strings.Contains(h.log.String(), fmt.Sprintf("dropped the client's answer to request %v of the remote server", id))
	})
}

// A server that does not come back, as bouncer run lives through it: the
// session ends, and the reason (not the audit log, which run closes once
// the pump is over) is what the call that found out and every later one
// get; the call that found out gets an audit line with the reason.
func TestRemoteRestartNotBack(t *testing.T) {
	for _, c := range []struct {
		name string
		opts string // the restarted server's; "": none
		want string
	}{
		{"forgets the new session", "streamable,forget", "no longer knows this session (it answers 404 Not Found for the session id: it restarted"},
		{"gone", "", "can't be reached any more"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, hopts{http: "streamable", policy: helpdeskPolicy, asRun: true})
			cs := h.client(nil)
			callTool(t, cs, "echo", map[string]any{"text": "pinned"})
			h.restartServer(c.opts, "")
			wantAudit := "echo:allow/default echo:allow/default"
			if c.opts != "" {
				if got := callErr(t, cs, "echo", map[string]any{"text": "x"}); !strings.Contains(got, c.want) || !strings.Contains(got, "could not start a new one") {
					t.Fatalf("the call that found the restart: %s", got)
				}
				wantAudit += " echo:deny/default"
			} else {
				// While the event stream still tries to reach it. The post
				// goes on a new connection, which is refused (never sent),
				// or on the kept-alive one the killed server's kernel
				// closed, when net/http had not noticed yet (its idle
				// connection's reader had not run, as under load): then it
				// was sent, got no answer, and may have run as far as
				// bouncer can know (TestRemoteFaultHangup has that case
				// alone). Either way the call is failed, once.
				got := callErr(t, cs, "echo", map[string]any{"text": "x"})
				if !strings.Contains(got, "did not reach the remote server") && !strings.Contains(got, "broke after the request was sent, before any answer") {
					t.Fatalf("a call while the server is gone: %s", got)
				}
			}
			err := h.waitExitWithin(40 * time.Second)
			var ended *transport.EndedError
			if !errors.Is(err, ErrUpstreamExited) || !errors.As(err, &ended) || !strings.Contains(ended.Why, c.want) {
				t.Fatalf("Run = %v", err)
			}
			// Run is over, and the audit log closed.
			got := callErr(t, cs, "echo", map[string]any{"text": "y"})
			if strings.Contains(got, "audit") || !strings.Contains(got, c.want) {
				t.Fatalf("a call after the session ended: %s", got)
			}
			lines := h.auditLines()
			if v := verdicts(lines); v != wantAudit {
				t.Fatalf("audit = %s, want %s", v, wantAudit)
			}
			if c.opts != "" {
				if l := lineWith(t, lines, "not sent"); !strings.Contains(l.Reason, c.want) {
					t.Errorf("the unsent call's line: %+v", l)
				}
			}
		})
	}
}

// A server that forgets the new session as soon as it is used: bouncer
// starts one new session for the restart, and no more. The call it was
// started for is not sent a third time: the session ends with the reason.
func TestRemoteRestartKeepsForgetting(t *testing.T) {
	for _, f := range flavours {
		t.Run(f.name, func(t *testing.T) {
			h := newHarness(t, hopts{http: "streamable", server: f.server, policy: helpdeskPolicy})
			cs := h.client(nil)
			callTool(t, cs, "echo", map[string]any{"text": "pinned"})
			h.restartServer("streamable,forgetcalls", "")
			if got := callErr(t, cs, "echo", map[string]any{"text": "x"}); !strings.Contains(got, "forgot the session bouncer had just started") {
				t.Fatalf("the call that found the restart: %s", got)
			}
			err := h.waitExitWithin(20 * time.Second)
			var ended *transport.EndedError
			if !errors.As(err, &ended) || !strings.Contains(ended.Why, "forgot the session bouncer had just started") {
				t.Fatalf("Run = %v", err)
			}
			if n := strings.Count(h.log.String(), "started a new session"); n != 1 {
				t.Fatalf("%d new sessions, want 1:\n%s", n, h.log.String())
			}
			if got := verdicts(h.auditLines()); got != "echo:allow/default echo:allow/default echo:allow/pinning echo:deny/default" {
				t.Fatalf("audit = %s", got)
			}
		})
	}
}

// waitExitWithin is waitExit with a longer wait, for a session that ends
// only once the server's event stream gave up.
func (h *harness) waitExitWithin(d time.Duration) error {
	h.t.Helper()
	select {
	case err := <-h.runErr:
		h.runErr <- err // for Cleanup
		return err
	case <-time.After(d):
		h.t.Fatal("proxy did not return")
		return nil
	}
}
