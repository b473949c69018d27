package listen

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/bouncer-mcp/bouncer/internal/transport"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// FuzzDecodeBody feeds a client's POST body, untrusted, to decodeBody:
// it never panics; what it refuses is answered 400; what it takes is
// what goes on (judged, then forwarded), so every message must encode as
// the stdio side encodes it and decode back to the same bytes with the
// same id, and no request id may come twice in one body.
func FuzzDecodeBody(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"f","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":"1","method":"ping"}]`,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":1,"method":"ping"}]`,
		`{"jsonrpc":"2.0","id":1.0,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":1e3,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":-0,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":7,"result":{}}`,
		`{"jsonrpc":"2.0","id":7.5,"result":{}}`,
		`{"jsonrpc":"2.0","id":"a\ud800","method":"tools/call","params":{"name":"x","arguments":{"to":"a@b.example","to":"c@d.example"}}}`,
		`[]`, ``, `[`, `null`, ` [ {"jsonrpc":"2.0","id":2,"method":"tools/list"} ] `,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		msgs, _, refusal := decodeBody(body)
		if refusal != nil {
			if msgs != nil {
				t.Fatalf("refused, yet %d messages taken", len(msgs))
			}
			rec := httptest.NewRecorder()
			refusal(rec)
			if rec.Code != http.StatusBadRequest {
				t.Fatalf("a refusal answered %d", rec.Code)
			}
			return
		}
		ids := map[jsonrpc.ID]bool{}
		for _, m := range msgs {
			enc, err := transport.EncodeMessage(m)
			if err != nil {
				t.Fatalf("a message taken does not encode: %v", err)
			}
			back, _, err := transport.DecodeMessage(enc)
			if err != nil {
				t.Fatalf("%s does not decode again: %v", enc, err)
			}
			again, err := transport.EncodeMessage(back)
			if err != nil || !bytes.Equal(enc, again) {
				t.Fatalf("encoded %s, then %s (%v)", enc, again, err)
			}
			if r, ok := m.(*jsonrpc.Request); ok && r.IsCall() {
				if ids[r.ID] {
					t.Fatalf("request id %v taken twice", r.ID)
				}
				ids[r.ID] = true
				if back.(*jsonrpc.Request).ID != r.ID {
					t.Fatalf("id %v came back as %v", r.ID, back.(*jsonrpc.Request).ID)
				}
			}
		}
	})
}
