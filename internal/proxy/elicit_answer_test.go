package proxy

import (
	"encoding/json"
	"testing"
)

// An answer is read by its exact members, with no key twice even under
// case folding: only a plain "accept" approves, and only a plain
// "remember": true remembers.
func TestReadElicitResult(t *testing.T) {
	for _, tc := range []struct {
		answer   string
		action   string
		remember bool
	}{
		{`{"action":"accept"}`, "accept", false},
		{`{"action":"accept","content":{"remember":true}}`, "accept", true},
		{`{"action":"accept","content":null,"_meta":{"x":1}}`, "accept", false},
		{`{"action":"decline"}`, "decline", false},
		{`{"Action":"accept"}`, "", false},
		{`{"ACTION":"accept"}`, "", false},
		{`{"action":"decline","action":"accept"}`, "", false},
		{`{"action":"decline","Action":"accept"}`, "", false},
		{`{"action":"accept","content":{"REMEMBER":true}}`, "accept", false},
		{`{"action":"accept","content":{"remember":false,"Remember":true}}`, "", false},
		{`{"action":"accept","content":{"remember":"true"}}`, "accept", false},
		{`{"action":["accept"]}`, "", false},
		{`["accept"]`, "", false},
		{`{"action":"accept"`, "", false},
		{`null`, "", false},
	} {
		res := readElicitResult(json.RawMessage(tc.answer))
		if res.Action != tc.action || res.Content.Remember != tc.remember {
			t.Errorf("%s: action %q, remember %v; want %q, %v", tc.answer, res.Action, res.Content.Remember, tc.action, tc.remember)
		}
	}
}
