package proxy

import (
	"encoding/json"
	"testing"
)

func TestParseCall(t *testing.T) {
	cases := []struct {
		params string
		tool   string
		ok     bool
	}{
		{`{"name":"send","arguments":{"to":"a@b.example"}}`, "send", true},
		{`{"name":"send"}`, "send", true},
		{`{"name":"send","arguments":null}`, "send", true},
		{`{"name":"send","arguments":{"to":"a","to":"b"}}`, "send", false},       // duplicate argument
		{`{"name":"send","name":"other","arguments":{}}`, "other", false},        // duplicate name
		{`{"name":"send","arguments":{"r":[{"e":"a","e":"b"}]}}`, "send", false}, // duplicate deep down
		{`{"name":"send","arguments":{"a":{"x":1},"b":{"x":2}}}`, "send", true},  // same key in sibling objects
		{`{"name":"send","arguments":["a"]}`, "send", false},                     // not an object
		{`{"name":"send","arguments":"x"}`, "send", false},
		{`{"arguments":{}}`, "", false}, // no name
		{`{"name":5}`, "", false},
		{`null`, "", false},
		{"{\"name\":\"send\",\"arguments\":{\"to\":\"a\xffb\"}}", "send", false}, // invalid UTF-8
		{`[1]`, "", false},
	}
	for _, c := range cases {
		tool, _, err := parseCall(json.RawMessage(c.params))
		if (err == nil) != c.ok || tool != c.tool {
			t.Errorf("parseCall(%s) = %q, %v; want %q, ok=%v", c.params, tool, err, c.tool, c.ok)
		}
	}
}

// FuzzParseCall: parsing client params never panics, and whatever it
// accepts has object-or-absent arguments and no duplicate keys.
func FuzzParseCall(f *testing.F) {
	for _, s := range []string{`{"name":"a","arguments":{"to":"x"}}`, `{"name":"a","arguments":{"to":"x","to":"y"}}`, `{"name":"a","arguments":[{}]}`, `{}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		_, args, err := parseCall(b)
		if err != nil {
			return
		}
		if len(args) > 0 && string(args) != "null" {
			var m map[string]json.RawMessage
			if json.Unmarshal(args, &m) != nil {
				t.Fatalf("accepted arguments that are not an object: %s", args)
			}
		}
	})
}
