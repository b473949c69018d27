package transport

import (
	"bytes"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// FuzzDecodeAgreesWithGoSDK: a frame the stdio reader (and bouncer
// listen's) takes is the same kind of message, with the same method and
// id, as the go-sdk reads it, and reads so again once written as Bouncer
// writes it: a peer built on the go-sdk reads what was judged.
// decodeMessage is stricter (it refuses ids the go-sdk would rewrite, and
// an empty method), so only frames both take are compared.
func FuzzDecodeAgreesWithGoSDK(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":1,"method":""}`,
		`{"jsonrpc":"2.0","id":1,"method":null,"result":{}}`,
		`{"jsonrpc":"2.0","method":""}`,
		`{"jsonrpc":"2.0","method":"","params":{}}`,
		`{"jsonrpc":"2.0","id":"x","method":"\u0000"}`,
		`{"jsonrpc":"2.0","id":2,"result":{"a":1}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		ours, err := decodeMessage(bytes.Clone(frame))
		if err != nil {
			return
		}
		theirs, err := jsonrpc.DecodeMessage(bytes.Clone(frame))
		if err != nil {
			// The go-sdk refuses what we took: only a difference of
			// parsers (duplicate keys, invalid UTF-8) may explain it,
			// and then we must not have made it a request it never sees.
			if r, ok := ours.(*jsonrpc.Request); ok && r.Method == "" {
				t.Fatalf("%s: taken as a request without a method", frame)
			}
			return
		}
		// Written as Bouncer writes it, the go-sdk reads the same again.
		enc, err := appendMessage(nil, ours)
		if err != nil {
			t.Fatalf("%s: %v", frame, err)
		}
		if again, err := jsonrpc.DecodeMessage(enc); err != nil || !sameKind(again, theirs) {
			t.Fatalf("%s written as %s: the go-sdk read %#v (%v), first %#v", frame, enc, again, err, theirs)
		}
		switch o := ours.(type) {
		case *jsonrpc.Request:
			g, ok := theirs.(*jsonrpc.Request)
			if !ok || g.Method != o.Method || g.ID != o.ID {
				t.Fatalf("%s: we read a request %q id %v, the go-sdk %#v", frame, o.Method, o.ID, theirs)
			}
		case *jsonrpc.Response:
			g, ok := theirs.(*jsonrpc.Response)
			if !ok || g.ID != o.ID {
				t.Fatalf("%s: we read a response id %v, the go-sdk %#v", frame, o.ID, theirs)
			}
		}
	})
}

// sameKind reports whether a and b are both requests with one method and
// id, or both responses with one id.
func sameKind(a, b jsonrpc.Message) bool {
	switch a := a.(type) {
	case *jsonrpc.Request:
		b, ok := b.(*jsonrpc.Request)
		return ok && a.Method == b.Method && a.ID == b.ID
	case *jsonrpc.Response:
		b, ok := b.(*jsonrpc.Response)
		return ok && a.ID == b.ID
	}
	return false
}
