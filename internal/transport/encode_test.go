package transport

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// appendMessage must write what jsonrpc.EncodeMessage writes, save for
// whitespace, and never a line end (it would end the message on stdio).
func checkEncode(t *testing.T, m jsonrpc.Message, inline int) {
	t.Helper()
	want, wantErr := jsonrpc.EncodeMessage(m)
	got, err := appendFrom([]byte("before"), m, inline)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("appendFrom error %v, jsonrpc.EncodeMessage error %v", err, wantErr)
	}
	if err != nil {
		return
	}
	got, ok := bytes.CutPrefix(got, []byte("before"))
	if !ok {
		t.Fatalf("appendFrom wrote over what was in its buffer: %q", got)
	}
	if inline > len(got) && !bytes.Equal(got, want) {
		// Below inline, appendFrom compacts as jsonrpc.EncodeMessage does:
		// the same bytes.
		t.Fatalf("appendFrom wrote\n%s\njsonrpc.EncodeMessage wrote\n%s", got, want)
	}
	if bytes.ContainsAny(got, "\r\n") {
		t.Fatalf("a line end in the encoded message: %q", got)
	}
	if r, ok := m.(*jsonrpc.Response); ok && inline == rawInline {
		// An answer's parts are the same bytes.
		parts, err := EncodeResponse(r)
		if err != nil || !bytes.Equal(bytes.Join(parts, nil), got) {
			t.Fatalf("EncodeResponse wrote %q (%v), appendMessage %q", bytes.Join(parts, nil), err, got)
		}
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, got); err != nil {
		t.Fatalf("appendFrom wrote invalid JSON %q: %v", got, err)
	}
	if !bytes.Equal(compact.Bytes(), want) {
		t.Fatalf("appendFrom wrote\n%s\njsonrpc.EncodeMessage wrote\n%s", got, want)
	}
}

func TestEncodeMessage(t *testing.T) {
	big := strings.Repeat("lorem <ipsum> & \u2028 dolor ", 400)
	bigJSON, _ := json.Marshal(map[string]any{"content": []any{map[string]any{"type": "text", "text": big}}})
	for _, frame := range []string{
		`{"jsonrpc":"2.0","id":1,"result":{}}`,
		`{"jsonrpc":"2.0","id":"a","result":{"content":[{"type":"text","text":"x"}]}}`,
		`{"jsonrpc":"2.0","id":2,"result":` + string(bigJSON) + `}`,
		"{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\r\n  \"a\": [1,\n 2],\n\t\"b\": \"c\\nd\"\n}}",
		`{"jsonrpc":"2.0","id":4,"error":{"code":-32600,"message":"no"}}`,
		`{"jsonrpc":"2.0","id":5,"result":{"a":1},"error":{"code":1,"message":"both"}}`,
		`{"jsonrpc":"2.0","id":6}`,
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":` + string(bigJSON) + `}`,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":8,"method":"m","params":{"x":"\u00e9\ud83d\ude00"}}`,
		`{"jsonrpc":"2.0","id":9,"method":"m","params":[1, 2 ,3]}`,
		`{"jsonrpc":"2.0","id":"x \" y\u2028","method":"m\"<>","params":{ "a b" : "c \\\" d\\" , "e":[ ] }}`,
		`{"jsonrpc":"2.0","id":-12,"error":{"code":-32000,"message":"m\u0000<","data":{ "k" : [ 1 , "two" ] }}}`,
		`{"jsonrpc":"2.0","id":10,"result":"\\"}`,
	} {
		m, err := decodeMessage([]byte(frame))
		if err != nil {
			t.Fatalf("%s: %v", frame, err)
		}
		for _, inline := range []int{0, rawInline, 1 << 30} {
			checkEncode(t, m, inline)
		}
	}
}

// FuzzEncodeMessage compares appendMessage with jsonrpc.EncodeMessage on
// every message the stdio reader accepts, splicing every raw value
// whatever its size.
func FuzzEncodeMessage(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"x"}]}}`))
	f.Add([]byte("{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\r\n \"a\" : [ 1 ,\n2 ] } }"))
	f.Add([]byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"a","arguments":{"k":"<&>"}}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","method":"n","params":"\u2028"}`))
	f.Fuzz(func(t *testing.T, frame []byte) {
		m, err := decodeMessage(bytes.Clone(frame))
		if err != nil {
			return
		}
		checkEncode(t, m, 0)
		checkEncode(t, m, rawInline)
		checkEncode(t, m, 1<<30)
	})
}
