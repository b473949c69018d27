package listen

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/bouncer-mcp/bouncer/internal/transport"
)

// A POST's answer comes as the POST's JSON response when it is all there
// is to send, and as an event stream when something about the call (the
// pump's question about it) comes first; either way the answer is there
// once, whole.
func TestConnAnswerShape(t *testing.T) {
	for _, tc := range []struct {
		name     string
		question bool
		wantType string
	}{
		{"answer alone", false, "application/json"},
		{"question first", true, "text/event-stream"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newConn("s1", 5*time.Second)
			defer c.close()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				msgs, _, refusal := decodeBody(body)
				if refusal != nil {
					refusal(w)
					return
				}
				if err := c.post(r.Context(), w, msgs, ""); err != nil {
					http.Error(w, err.Error(), http.StatusInternalServerError)
				}
			}))
			defer srv.Close()

			v, err := c.newView(false)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			go func() {
				m, err := v.Read(ctx)
				if err != nil {
					return
				}
				call := m.(*jsonrpc.Request)
				if tc.question {
					q := &jsonrpc.Request{Method: "elicitation/create", Params: []byte(`{"message":"allow?"}`)}
					q.ID, _ = jsonrpc.MakeID("bouncer-1")
					_ = v.Write(transport.WithRelated(ctx, call.ID), q)
				}
				_ = v.Write(ctx, &jsonrpc.Response{ID: call.ID, Result: []byte(`{"content":[]}`)})
			}()

			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo"}}`))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			got, _ := io.ReadAll(resp.Body)
			if ct := resp.Header.Get("Content-Type"); ct != tc.wantType {
				t.Fatalf("Content-Type %q, want %q; body:\n%s", ct, tc.wantType, got)
			}
			answer := `{"jsonrpc":"2.0","id":7,"result":{"content":[]}}`
			if tc.wantType == "application/json" {
				if resp.ContentLength != int64(len(answer)) || len(resp.TransferEncoding) > 0 {
					t.Fatalf("Content-Length %d, Transfer-Encoding %v; want the length, not chunked", resp.ContentLength, resp.TransferEncoding)
				}
				if string(got) != answer {
					t.Fatalf("body %s, want %s", got, answer)
				}
				return
			}
			want := "event: message\ndata: " + `{"jsonrpc":"2.0","id":"bouncer-1","method":"elicitation/create","params":{"message":"allow?"}}` + "\n\n" +
				"event: message\ndata: " + answer + "\n\n"
			if string(got) != want {
				t.Fatalf("stream:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}
