package session

import "testing"

// anchor_records: text_json reads records from a text block only when the
// whole block is one strict JSON object or array with no key twice; true
// reads structuredContent alone. A record the prompt names anchors a send
// to the whole set of its people.
func TestAnchorTextJSON(t *testing.T) {
	const people = `"participants":["a@corp.example","b@corp.example"]`
	want := []string{"a@corp.example", "b@corp.example"}
	for _, tc := range []struct {
		name   string
		text   bool
		result string
		anchor bool
	}{
		{"structured, true", false, `{"structuredContent":{"title":"Board sync",` + people + `}}`, true},
		{"text JSON, true", false, `{"content":[{"type":"text","text":"{\"title\":\"Board sync\",` + esc(people) + `}"}]}`, false},
		{"text JSON, text_json", true, `{"content":[{"type":"text","text":"{\"title\":\"Board sync\",` + esc(people) + `}"}]}`, true},
		{"text JSON list, text_json", true, `{"content":[{"type":"text","text":" [{\"title\":\"Board sync\",` + esc(people) + `}]\n"}]}`, true},
		{"prose around JSON", true, `{"content":[{"type":"text","text":"Events: {\"title\":\"Board sync\",` + esc(people) + `}"}]}`, false},
		{"a key twice", true, `{"content":[{"type":"text","text":"{\"title\":\"Board sync\",\"participants\":[\"x@evil.example\"],` + esc(people) + `}"}]}`, false},
		{"a comment", true, `{"content":[{"type":"text","text":"{/* c */\"title\":\"Board sync\",` + esc(people) + `}"}]}`, false},
		{"not a text block", true, `{"content":[{"type":"resource","text":"{\"title\":\"Board sync\",` + esc(people) + `}"}]}`, false},
		{"structured wins over text", true, `{"structuredContent":{"title":"Other"},"content":[{"type":"text","text":"{\"title\":\"Board sync\",` + esc(people) + `}"}]}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := New()
			s.Anchors(tc.text).RecordJSON([]byte(tc.result))
			s.RecordPrompt("invite everyone from the 'Board sync' event")
			if got := s.Anchored(want); got != tc.anchor {
				t.Fatalf("Anchored = %v, want %v", got, tc.anchor)
			}
		})
	}
}

// esc writes s as it stands inside a JSON string.
func esc(s string) string {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '"' || s[i] == '\\' {
			out = append(out, '\\')
		}
		out = append(out, s[i])
	}
	return string(out)
}

// A record is named only by a whole title, subject or file name of its own
// that is distinctive: an attacker's event titled "notes", or a payment
// whose amount is a year the prompt says, is named by no prompt.
func TestAnchorNamesAreDistinctive(t *testing.T) {
	const people = `"participants":["eve@evil.example"]`
	for _, tc := range []struct {
		name, record, prompt string
		anchor               bool
	}{
		{"one common word", `{"title":"notes",` + people + `}`, "summarise my notes and send them to everyone", false},
		{"an amount", `{"amount":2024,"sender":"eve@evil.example"}`, "refund what I was overcharged in 2024", false},
		{"a name field", `{"name":"Quarterly planning",` + people + `}`, "invite everyone from Quarterly planning", false},
		{"a whole distinctive title", `{"title":"Quarterly planning",` + people + `}`, "invite everyone from Quarterly planning", true},
		{"a part of a title", `{"title":"Quarterly planning review",` + people + `}`, "invite everyone from Quarterly planning", false},
		{"a subject", `{"subject":"Hiking Trip","sender":"eve@evil.example"}`, "reply to the Hiking Trip mail", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := New()
			s.Anchors(false).RecordJSON([]byte(`{"structuredContent":` + tc.record + `}`))
			s.RecordPrompt(tc.prompt)
			if got := s.Anchored([]string{"eve@evil.example"}); got != tc.anchor {
				t.Fatalf("Anchored = %v, want %v", got, tc.anchor)
			}
		})
	}
}
