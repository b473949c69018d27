package listen

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bouncer-mcp/bouncer/internal/transport"
)

// The spike's evidence (docs/listen.md): the go-sdk's own streamable
// server transport, written to as a pump writes (a context that is not
// the go-sdk Server's own handler context), sends a server→client request
// made while a call is in flight to the GET stream, not to the call's
// POST stream. A client that opened no GET stream never gets it; Write
// says it could not deliver it.
func TestGoSDKTransportSendsPumpWritesToTheGETStream(t *testing.T) {
	st := &mcp.StreamableServerTransport{SessionID: "s1"}
	conn, err := st.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	srv := httptest.NewServer(st)
	defer srv.Close()

	// A POST carrying a call: its stream stays open until it is answered.
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"send_email","arguments":{}}}`
	req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", "s1")
	respc := make(chan *http.Response, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			respc <- resp
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := conn.Read(ctx); err != nil {
		t.Fatal(err)
	}
	// The pump's question about the held call, written as the pump writes.
	q := &jsonrpc.Request{Method: "elicitation/create", Params: []byte(`{"message":"allow?","requestedSchema":{"type":"object"}}`)}
	q.ID, _ = jsonrpc.MakeID("bouncer-1")
	werr := conn.Write(transport.WithRelated(context.Background(), q.ID), q)
	if werr == nil || !strings.Contains(werr.Error(), "undelivered") {
		t.Fatalf("the go-sdk transport's Write of a server request with no handler context: %v; want it undelivered (sent to the GET stream, which is not open)", werr)
	}
	// Answer the call; the POST's stream then carries the answer only.
	ans := &jsonrpc.Response{ID: mustID(t, 1), Result: []byte(`{"content":[]}`)}
	if err := conn.Write(context.Background(), ans); err != nil {
		t.Fatal(err)
	}
	resp := <-respc
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if bytes.Contains(got, []byte("elicitation/create")) {
		t.Fatalf("the POST stream carried the question after all: %s", got)
	}
}

func mustID(t *testing.T, v any) jsonrpc.ID {
	if n, ok := v.(int); ok {
		v = float64(n)
	}
	id, err := jsonrpc.MakeID(v)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// And conn, given the same write, puts the question on the call's POST
// stream.
func TestConnSendsRelatedWritesOnThePOSTStream(t *testing.T) {
	c := newConn("s1", time.Second)
	v, _ := c.newView(false)
	rec := newFlushRecorder()
	call := &jsonrpc.Request{ID: mustID(t, 1), Method: "tools/call", Params: []byte(`{"name":"x"}`)}
	done := make(chan error, 1)
	go func() { done <- c.post(context.Background(), rec, []jsonrpc.Message{call}, "") }()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := v.Read(ctx); err != nil {
		t.Fatal(err)
	}
	q := &jsonrpc.Request{ID: mustID(t, "bouncer-1"), Method: "elicitation/create", Params: []byte(`{}`)}
	if err := v.Write(transport.WithRelated(context.Background(), call.ID), q); err != nil {
		t.Fatal(err)
	}
	if err := v.Write(context.Background(), &jsonrpc.Response{ID: call.ID, Result: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	out := rec.String()
	if !strings.Contains(out, `"method":"elicitation/create"`) || strings.Index(out, "elicitation/create") > strings.Index(out, `"result"`) {
		t.Fatalf("the POST stream: %q; want the question, then the answer", out)
	}
	if err := v.Write(context.Background(), &jsonrpc.Response{ID: call.ID, Result: []byte(`{}`)}); err == nil {
		t.Fatal("a second answer to the same request was written")
	}
}

// flushRecorder is an httptest.ResponseRecorder safe to read while
// written.
type flushRecorder struct {
	*httptest.ResponseRecorder
	mu chan struct{}
}

func newFlushRecorder() *flushRecorder {
	return &flushRecorder{ResponseRecorder: httptest.NewRecorder(), mu: make(chan struct{}, 1)}
}

func (f *flushRecorder) Write(b []byte) (int, error) {
	f.mu <- struct{}{}
	defer func() { <-f.mu }()
	return f.ResponseRecorder.Write(b)
}

func (f *flushRecorder) String() string {
	f.mu <- struct{}{}
	defer func() { <-f.mu }()
	return f.Body.String()
}
