package transport

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
)

// FuzzDecodeWireAgrees: decodeWire reads every message as the go-sdk's
// parser reads it into a wireMessage (parseJSON), member for member and
// byte for byte, and refuses what it refuses. The only difference allowed
// is decodeWire's refusal of nesting deeper than maxDepth.
func FuzzDecodeWireAgrees(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"a":[1,2.5e-3,true,false,null,"s\n\u00e9"]}}}`,
		`{"jsonrpc":"2.0","id":"a","result":{"content":[{"type":"text","text":"line one\nline two \"quoted\" \\ \/ \b\f\r\t end"}]}}`,
		` {"jsonrpc" : "2.0" , "id" : 2 , "error" : {"code":-32600,"message":"no","data":{"x":1}} } `,
		`{"jsonrpc":"2.0","id":3,"error":{"code":1,"message":"a"},"error":{"code":2}}`,
		`{"jsonrpc":"2.0","id":3,"error":{"code":1,"message":"a"},"error":null}`,
		`{"jsonrpc":"2.0","id":1,"id":2,"method":"a","method":"b"}`,
		`{"jsonrp\u0063":"2.\u0030","\u0069d":1,"Method":"x","METHOD":"y"}`,
		`{"jsonrpc":null,"id":null,"params":null,"result":null}`,
		`{"jsonrpc":2,"id":1}`,
		`{"jsonrpc":"2.0","id":01}`,
		`{"jsonrpc":"2.0","id":-0.5E+10,"x":[{},[],{"":""}]}`,
		`{"jsonrpc":"2.0","id":1,"result":"\ud800"}`,
		`{"jsonrpc":"2.0","id":1,"result":"\u12G4"}`,
		`{"jsonrpc":"2.0","id":1,"result":"a` + "\x01" + `"}`,
		`{"jsonrpc":"2.0","id":1,"result":"` + "\xff\xfe" + `"}`,
		`{"jsonrpc":"2.0","id":1,"result":[1,]}`,
		`{"jsonrpc":"2.0","id":1,}`,
		`{"jsonrpc":"2.0","id":1} x`,
		`{}`, `[]`, `null`, `"x"`, `{"a"}`, `{"a":}`, `{"a":tru}`, `{"a":nul`, `{"a":1.}`, `{"a":-}`, `{"a":1e}`,
		`{"jsonrpc":"2.0","id":1,"result":"` + strings.Repeat(`0123456789abcdef\n`, 40) + `"}`,
		// Strings of several 32-byte blocks that end, or break, inside a
		// later block (jsontext.RunOf's vector form).
		`{"jsonrpc":"2.0","id":1,"result":"` + strings.Repeat("x", 70) + "\x1f" + strings.Repeat("y", 30) + `"}`,
		`{"jsonrpc":"2.0","id":1,"result":{"a":"` + strings.Repeat("x", 45) + `","b":"` + strings.Repeat("é", 40) + `"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ours, oursErr := decodeWire(bytes.Clone(data))
		var theirs wireMessage
		theirsErr := parseJSON(bytes.Clone(data), &theirs)
		if oursErr != nil && theirsErr == nil && strings.Contains(oursErr.Error(), "nesting depth") {
			return
		}
		if (oursErr == nil) != (theirsErr == nil) {
			// The parser reads a top-level null into the zero message;
			// decodeWire refuses it, and decodeMessage refuses both.
			if theirsErr == nil && reflect.DeepEqual(theirs, wireMessage{}) {
				return
			}
			t.Fatalf("%q: decodeWire says %v, the parser %v", data, oursErr, theirsErr)
		}
		if oursErr != nil {
			return
		}
		if !reflect.DeepEqual(ours, theirs) {
			t.Fatalf("%q:\ndecodeWire read %+v\nthe parser     %+v", data, ours, theirs)
		}
	})
}
