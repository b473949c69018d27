package transport

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// An HTTP+SSE server's endpoint event may name any URL; one on another
// origin than --url's is refused before a request is made there, so it
// never sees the session's headers or bearer token.
func TestRemoteSSEEndpointOtherOrigin(t *testing.T) {
	var mu sync.Mutex
	var got []string // what the other origin received
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Method+" "+r.URL.Path+" "+r.Header.Get("Authorization"))
		mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
	}))
	defer other.Close()
	sse := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "event: endpoint\ndata: %s/message?sessionid=1\n\n", other.URL)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	defer sse.Close()

	rem, err := DialRemote(RemoteConfig{URL: sse.URL + "/sse", Transport: SSE,
		Headers: http.Header{"Authorization": {"Bearer s3cr3t-t0ken"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer rem.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	id, _ := jsonrpc.MakeID(float64(0))
	init := &jsonrpc.Request{ID: id, Method: "initialize", Params: json.RawMessage(`{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"t","version":"1"}}`)}
	err = rem.Write(ctx, init)
	if err == nil || !strings.Contains(err.Error(), "another origin") {
		t.Fatalf("write = %v, want a refusal of the other origin", err)
	}
	if strings.Contains(err.Error(), "s3cr3t") {
		t.Errorf("the error shows the token: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 0 {
		t.Fatalf("the other origin received %q", got)
	}
}

// originOf compares as browsers do: case, a default port written or not,
// a trailing dot of the host.
func TestOriginOf(t *testing.T) {
	for _, c := range []struct {
		a, b string
		same bool
	}{
		{"http://Example.COM/mcp", "http://example.com:80/x", true},
		{"https://example.com/mcp", "https://example.com.:443/", true},
		{"https://example.com/mcp", "http://example.com/mcp", false},
		{"http://127.0.0.1:8080/mcp", "http://127.0.0.1:8081/mcp", false},
		{"http://127.0.0.1:8080/mcp", "http://localhost:8080/mcp", false},
		{"http://[::1]:80/", "http://[::1]/", true},
	} {
		a, _ := url.Parse(c.a)
		b, _ := url.Parse(c.b)
		if same := originOf(a) == originOf(b); same != c.same {
			t.Errorf("%s vs %s: same=%v (%s, %s)", c.a, c.b, same, originOf(a), originOf(b))
		}
	}
}
