package transport

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// A server's answers on streamable HTTP, as they reach the pump: an answer
// as JSON or at the end of an event stream (after what the server sends
// about the call, and split over data lines), read whole; an answer whose
// id can't pass unchanged (2.0 for 2) is dropped, and its call, whose
// stream has no event ids to resume from, is answered with an error that
// says bouncer wrote it. The session id goes with every post after
// initialize. (The go-sdk's server never writes such streams; the
// failures it can show, 404, 503, a stream cut and resumed, are in
// internal/proxy's TestRemote tests.)
func TestRemoteStreamableAnswers(t *testing.T) {
	var mu sync.Mutex
	var sessions []string // the Mcp-Session-Id of each post
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed) // no event stream outside answers
			return
		}
		mu.Lock()
		sessions = append(sessions, r.Header.Get("Mcp-Session-Id"))
		mu.Unlock()
		body, _ := io.ReadAll(r.Body)
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name string `json:"name"`
			} `json:"params"`
		}
		if err := json.Unmarshal(body, &m); err != nil {
			t.Errorf("the post: %v", err)
		}
		switch {
		case m.Method == "initialize":
			w.Header().Set("Mcp-Session-Id", "s-1")
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"t","version":"1"}}}`, m.ID)
		case m.ID == nil:
			w.WriteHeader(http.StatusAccepted)
		case m.Params.Name == "json":
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"as json"}]}}`, m.ID)
		case m.Params.Name == "split":
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":1,\"progress\":1}}\n\n")
			fmt.Fprintf(w, ": a comment\r\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\r\ndata: \"result\":{\"content\":[{\"type\":\"text\",\"text\":\"%s\"}]}}\r\n\r\n", m.ID, strings.Repeat("x", 100<<10))
		case m.Params.Name == "inexact-json":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s.0,"result":{"content":[]}}`, m.ID)
		case m.Params.Name == "inexact":
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":%s.0,\"result\":{\"content\":[]}}\n\n", m.ID)
		}
	}))
	defer srv.Close()

	var log strings.Builder
	rem, err := DialRemote(RemoteConfig{URL: srv.URL + "/mcp", Transport: Streamable, Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	defer rem.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	call := func(id int64, tool string) jsonrpc.Message {
		t.Helper()
		rid, _ := jsonrpc.MakeID(float64(id))
		if err := rem.Write(ctx, &jsonrpc.Request{ID: rid, Method: "tools/call", Params: json.RawMessage(`{"name":"` + tool + `","arguments":{}}`)}); err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		m, err := rem.Read(ctx)
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		return m
	}
	id0, _ := jsonrpc.MakeID(float64(0))
	if err := rem.Write(ctx, &jsonrpc.Request{ID: id0, Method: "initialize", Params: json.RawMessage(`{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}`)}); err != nil {
		t.Fatal(err)
	}
	if m, err := rem.Read(ctx); err != nil || m.(*jsonrpc.Response).Error != nil {
		t.Fatalf("initialize: %v %v", m, err)
	}
	if err := rem.Write(ctx, &jsonrpc.Request{Method: "notifications/initialized"}); err != nil {
		t.Fatal(err)
	}

	if r, ok := call(1, "json").(*jsonrpc.Response); !ok || r.ID.Raw() != int64(1) || !strings.Contains(string(r.Result), "as json") {
		t.Fatalf("the answer as JSON: %+v", r)
	}
	if n, ok := call(2, "split").(*jsonrpc.Request); !ok || n.Method != "notifications/progress" {
		t.Fatalf("before the split answer: %+v", n)
	}
	m, err := rem.Read(ctx)
	if r, ok := m.(*jsonrpc.Response); err != nil || !ok || r.ID.Raw() != int64(2) || !strings.Contains(string(r.Result), strings.Repeat("x", 100<<10)) {
		t.Fatalf("the answer split over two data lines: %v %v", m, err)
	}
	r, ok := call(3, "inexact").(*jsonrpc.Response)
	if !ok || r.ID.Raw() != int64(3) || r.Error == nil || !strings.Contains(r.Error.Error(), "bouncer: the remote server closed the request's stream without answering it") {
		t.Fatalf("the answer with id 3.0: %+v", r)
	}
	if !strings.Contains(log.String(), "dropped a message on the event stream of a post") {
		t.Errorf("the log does not say the answer with id 3.0 was dropped:\n%s", log.String())
	}
	r, ok = call(4, "inexact-json").(*jsonrpc.Response)
	if !ok || r.ID.Raw() != int64(4) || r.Error == nil || !strings.Contains(r.Error.Error(), "its answer was dropped") {
		t.Fatalf("the answer as JSON with id 4.0: %+v", r)
	}
	if !strings.Contains(log.String(), "dropped a message the remote server answered a post with") {
		t.Errorf("the log does not say the answer with id 4.0 was dropped:\n%s", log.String())
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(sessions, " ") != " s-1 s-1 s-1 s-1 s-1" {
		t.Errorf("the posts' session ids: %q", sessions)
	}
}
