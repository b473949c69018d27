package audit

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/bouncer-mcp/bouncer/internal/display"
)

// columns splits a Human line the way its doc promises it can be split.
var columns = regexp.MustCompile(`  +`)

func TestHuman(t *testing.T) {
	ts := time.Date(2026, 12, 1, 9, 30, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		e    Entry
		want []string // the columns after the time
	}{
		{"plain", Entry{Server: "helpdesk", Tool: "send_email", Verdict: "deny", Rule: "sink", Reason: "no",
			Dests: []Dest{{Param: "to", Value: "a@x.example"}}},
			[]string{"helpdesk", "send_email", "deny", "to=a@x.example", "[sink] no"}},
		{"a real U+202E and its escape as text", Entry{Server: "s", Tool: "x\u202ey", Verdict: "allow", Rule: "default"},
			[]string{"s", `x\u202ey`, "allow", "-", "(default)"}},
		{"the text of an escape", Entry{Server: "s", Tool: `x\u202ey`, Verdict: "allow", Rule: "default"},
			[]string{"s", `x\\u202ey`, "allow", "-", "(default)"}},
		{"padding that fakes a verdict", Entry{Server: "s", Tool: "  nope   allow  ", Verdict: "deny", Rule: "pinning"},
			[]string{"s", `\x20\x20nope\x20\x20\x20allow\x20\x20`, "deny", "-", "(pinning)"}},
		{"one space is quoted", Entry{Server: "mail box", Tool: "a b", Verdict: "deny", Rule: "pinning"},
			[]string{`"mail box"`, `"a b"`, "deny", "-", "(pinning)"}},
		{"tab and newline", Entry{Server: "s\t", Tool: "a\nb", Verdict: "deny", Rule: "pinning", Reason: "x\ny"},
			[]string{`s\x09`, `a\x0ab`, "deny", "-", `[pinning] x\x0ay`}},
		{"a value that passes for the display's words", Entry{Server: "s", Tool: "(none)", Verdict: "ask", Rule: "sink",
			Dests: []Dest{{Param: "to", Value: "-"}, {Param: "cc", Value: "b"}}},
			[]string{"s", `"(none)"`, "ask", "to=- (+1)", "(sink)"}},
		{"taint", Entry{Server: "s", Tool: "t", Verdict: "deny", Rule: "sink", Reason: "r",
			Taint: &Taint{Param: "to", Destination: "Bob  Smith <b@x>"}},
			[]string{"s", "t", "deny", `to="Bob\x20\x20Smith <b@x>"`, "[sink] r"}},
		{"the reason's own escapes are escaped again", Entry{Server: "s", Tool: "t", Verdict: "deny", Rule: "pinning",
			Reason: `tool 'x\u202ey'   `},
			[]string{"s", "t", "deny", "-", `[pinning] tool 'x\\u202ey'\x20\x20\x20`}},
	} {
		tc.e.TS = ts
		line := Human(tc.e)
		got := columns.Split(line, -1)
		want := append([]string{"2026-12-01 09:30:00"}, tc.want...)
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("%s: Human = %q\n got columns %q\nwant columns %q", tc.name, line, got, want)
		}
	}
}

// FuzzHuman: whatever the agent, the server or a forged line put in the
// values, a Human line is one line of six columns that split on runs of
// two or more spaces, with the server and tool as their display tokens.
func FuzzHuman(f *testing.F) {
	f.Add("s", "t", "to", "a@x", "r", "sink")
	f.Add("  mail  ", "x\u202e  allow\n", "to\t", " (+1) ", "a\x1b[2Kb  c", "")
	f.Add("", "", "", "", "", "")
	f.Fuzz(func(t *testing.T, server, tool, param, value, reason, rule string) {
		line := Human(Entry{TS: time.Unix(0, 0), Server: server, Tool: tool, Verdict: "deny", Rule: rule, Reason: reason,
			Dests: []Dest{{Param: param, Value: value}}})
		for _, r := range line {
			if r < 0x20 || r == 0x7f || r >= 0x80 && r <= 0x9f || r == 0x2028 || r == 0x2029 || r == 0x202e {
				t.Fatalf("Human left %U in %q", r, line)
			}
		}
		cols := columns.Split(line, -1)
		if len(cols) != 6 {
			t.Fatalf("Human = %q splits into %d columns: %q", line, len(cols), cols)
		}
		if s, _ := display.Show(server); cols[1] != s {
			t.Fatalf("server column %q, want %q", cols[1], s)
		}
		if s, _ := display.Show(tool); cols[2] != s {
			t.Fatalf("tool column %q, want %q", cols[2], s)
		}
	})
}
