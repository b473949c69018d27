package proxy

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/bouncer-mcp/bouncer/internal/transport"
)

// The smallest remote session: a go-sdk client through the proxy to the
// helpdesk over streamable HTTP; an allowed call reaches it, a refused one
// never does.
func TestRemoteBasic(t *testing.T) {
	for _, mode := range []string{"streamable", "json", "sse"} {
		t.Run(mode, func(t *testing.T) {
			h := newHarness(t, hopts{http: mode, policy: helpdeskPolicy})
			cs := h.client(nil)
			if text, isErr := callTool(t, cs, "echo", map[string]any{"text": "hi"}); text != "hi" || isErr {
				t.Fatalf("echo = %q %v", text, isErr)
			}
			callTool(t, cs, "get_ticket", map[string]any{})
			text, isErr := callTool(t, cs, "send_email", map[string]any{"to": "attacker@evil.example"})
			if !isErr || !strings.HasPrefix(text, BlockedPrefix) {
				t.Fatalf("send_email = %q %v", text, isErr)
			}
			if len(h.mails()) != 0 {
				t.Fatalf("a blocked mail reached the server: %v", h.mails())
			}
			if got := h.remote.Transport(); (mode == "sse") != (got == transport.SSE) {
				t.Fatalf("transport = %q", got)
			}
		})
	}
}

// rawCall sends a tools/call on a raw client and returns its answer.
func rawCall(r *rawClient, id int, tool, args string) *jsonrpc.Response {
	r.send(`{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + args + `}}`)
	return r.response(id)
}

// A server that answers a post 503 fails that request clearly; the session
// goes on, and a denied call is still never forwarded.
func TestRemoteFault503(t *testing.T) {
	h, r := faulted(t, "streamable", "2025-06-18", "503")
	resp := rawCall(r, 3, "echo", `{"text":"x"}`)
	if resp.Error == nil || !strings.Contains(resp.Error.Error(), "did not take the request") || !strings.Contains(resp.Error.Error(), "Service Unavailable") {
		t.Fatalf("the call the server answered 503: %v %s", resp.Error, resp.Result)
	}
	if text, _ := resultText(t, rawCall(r, 4, "echo", `{"text":"again"}`)); text != "again" {
		t.Fatalf("after the 503: %q", text)
	}
	if text, isErr := resultText(t, rawCall(r, 5, "send_email", `{"to":"attacker@evil.example"}`)); !isErr || !strings.HasPrefix(text, BlockedPrefix) {
		t.Fatalf("send_email = %q", text)
	}
	if len(h.mails()) != 0 {
		t.Fatal("a denied call reached the server")
	}
}

// A server that closes the connection a call was posted on, unanswered,
// may have run it: the call is failed saying so, and not sent again; the
// session goes on.
func TestRemoteFaultHangup(t *testing.T) {
	h, r := faulted(t, "streamable", "2025-06-18", "hangup")
	resp := rawCall(r, 3, "echo", `{"text":"x"}`)
	if resp.Error == nil || !strings.Contains(resp.Error.Error(), "broke after the request was sent, before any answer") || !strings.Contains(resp.Error.Error(), "It may have run or not") {
		t.Fatalf("the call the server hung up on: %v %s", resp.Error, resp.Result)
	}
	if text, _ := resultText(t, rawCall(r, 4, "echo", `{"text":"again"}`)); text != "again" {
		t.Fatalf("after the hangup: %q", text)
	}
	if got := verdicts(h.auditLines()); got != "get_ticket:allow/default http_fault:allow/default echo:allow/default echo:allow/default" {
		t.Fatalf("audit = %s", got)
	}
}

// faulted starts a raw session on the HTTP helpdesk in mode, asking for
// protocol version, pins the tools with one call (id 1: get_ticket, whose
// output names attacker@evil.example), and then makes the server show
// fault (id 2). The next call is id 3.
func faulted(t *testing.T, mode, version, fault string) (*harness, *rawClient) {
	t.Helper()
	h := newHarness(t, hopts{http: mode, policy: helpdeskPolicy})
	r := h.raw()
	r.handshakeAt(version)
	rawCall(r, 1, "get_ticket", `{}`)
	if resp := rawCall(r, 2, "http_fault", `{"fault":"`+fault+`"}`); resp.Error != nil {
		t.Fatal(resp.Error)
	}
	return h, r
}

// An answer's event stream that ends before the answer: a server that
// keeps its events (and, from 2025-11-25, opens the stream with an id to
// resume from) has the stream re-opened with Last-Event-ID, and the call
// succeeds; one that keeps none leaves nothing to resume, and the call is
// failed with a reason that says bouncer wrote it. The session goes on.
func TestRemoteAnswerStreamCut(t *testing.T) {
	for _, c := range []struct {
		mode, version string
		wantErr       string // "": the call succeeds
	}{
		{"events", "2025-11-25", ""},
		{"streamable", "2025-06-18", "bouncer: the remote server closed the request's stream without answering it"},
	} {
		t.Run(c.mode, func(t *testing.T) {
			_, r := faulted(t, c.mode, c.version, "cut")
			resp := rawCall(r, 3, "echo", `{"text":"cut"}`)
			switch {
			case c.wantErr == "" && resp.Error != nil:
				t.Fatalf("the call whose stream was cut: %v", resp.Error)
			case c.wantErr == "":
				if text, isErr := resultText(t, resp); text != "cut" || isErr {
					t.Fatalf("the call whose stream was cut = %q %v", text, isErr)
				}
			case resp.Error == nil || !strings.Contains(resp.Error.Error(), c.wantErr):
				t.Fatalf("the call whose stream was cut: %v %s", resp.Error, resp.Result)
			}
			if text, _ := resultText(t, rawCall(r, 4, "echo", `{"text":"again"}`)); text != "again" {
				t.Fatalf("after the cut: %q", text)
			}
		})
	}
}

// A server that forgets the session (404 for its id) ends it: the call that
// found out is failed with the reason, and so is the session.
func TestRemoteSessionExpired(t *testing.T) {
	h, r := faulted(t, "streamable", "2025-06-18", "expire")
	r.send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}`)
	resp := r.response(3)
	if resp.Error == nil || !strings.Contains(resp.Error.Error(), "ended the session") {
		t.Fatalf("the call after the session expired: %v %s", resp.Error, resp.Result)
	}
	err := h.waitExit()
	var ended *transport.EndedError
	if !errors.Is(err, ErrUpstreamExited) || !errors.As(err, &ended) || !strings.Contains(ended.Why, "404") {
		t.Fatalf("Run = %v", err)
	}
}

// A server that goes away in the middle of a call: the call is failed at
// once, and the session ends with a reason once the server can't be
// reached again.
func TestRemoteServerGoneMidCall(t *testing.T) {
	h := newHarness(t, hopts{http: "streamable"})
	r := h.raw()
	r.handshake()
	rawCall(r, 1, "echo", `{"text":"pinned"}`)
	start := time.Now()
	resp := rawCall(r, 2, "crash", `{}`)
	if resp.Error == nil {
		t.Fatalf("the call the server died in: %s", resp.Result)
	}
	if time.Since(start) > 5*time.Second {
		t.Errorf("the failed call took %v", time.Since(start))
	}
	err := h.waitExit()
	var ended *transport.EndedError
	if !errors.As(err, &ended) || !strings.Contains(ended.Why, "can't be reached") {
		t.Fatalf("Run = %v", err)
	}
	// A call after that is refused, not forwarded anywhere.
	if h.remote.Write(context.Background(), &jsonrpc.Request{Method: "ping"}) == nil {
		t.Fatal("a write after the end succeeded")
	}
}

// The server's event stream drops: it is re-opened (with Last-Event-ID,
// the server keeping events), and what the server sends outside an answer
// still arrives: here list_changed, which makes the proxy re-list.
func TestRemoteEventStreamDropped(t *testing.T) {
	h := newHarness(t, hopts{http: "events"})
	rc := &relayClient{}
	cs := h.client(rc.options())
	callTool(t, cs, "echo", map[string]any{"text": "pinned"})
	if text, _ := callTool(t, cs, "http_fault", map[string]any{"fault": "drop"}); text != "ok" {
		t.Fatal(text)
	}
	time.Sleep(300 * time.Millisecond) // the stream is re-opened meanwhile
	callTool(t, cs, "change_echo", map[string]any{})
	eventually(t, "list_changed after the stream dropped", func() bool { return rc.snapshot().changed > 0 })
	text, isErr := callTool(t, cs, "echo", map[string]any{"text": "x"})
	if !isErr || !strings.Contains(text, BlockedPrefix) {
		t.Fatalf("echo after its definition changed = %q %v; want it refused (pinning)", text, isErr)
	}
}
