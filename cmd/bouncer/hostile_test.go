package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/bouncer-mcp/bouncer/internal/approval"
	"github.com/bouncer-mcp/bouncer/internal/audit"
)

// hostile are values an agent (or a hostile upstream) can put in a request:
// each tries to redraw the screen, fake a line or the prompt, hide part of
// itself, or pass for the program's own words.
var hostile = map[string]string{
	"cursor and erase":    "eve@evil.com\x1b[2K\r\x1b[1A  destination  bob@partner.com",
	"newline, fake field": "eve@evil.com\n  destination  bob@partner.com",
	"fake prompt":         "eve@evil.com" + strings.Repeat(" ", 70) + "Approve? [y/N] y",
	"bidi override":       "moc.live@\u202ebob",
	"bidi isolate":        "eve@evil.com\u2066\u2069",
	"zero width":          "bob@partner.com\u200b",
	"line separator":      "eve@evil.com\u2028bob@partner.com",
	"NUL":                 "eve@evil.com\x00bob",
	"C1 CSI":              "eve\u009b2Kbob",
	"tag characters":      "bob@partner.com\U000E0065\U000E0076\U000E0065",
	"variation selector":  "bob@partner.com\ufe0f\U000E0100",
	"replacement char":    "\ufffd@evil.com",
	"cyrillic lookalike":  "bob@p\u0430rtner.com",
	"the none marker":     "(none: the call names no destination)",
	"quotes":              `"bob@partner.com" eve@evil.com`,
	"backslash escape":    `eve@evil.com\x1b`,
	"trailing space":      "bob@partner.com ",
	"zalgo":               "bob" + strings.Repeat("\u0301\u0336", 40) + "@x.com",
	"longest":             strings.Repeat("e", approval.MaxDestination-len("@evil.com")) + "@evil.com",
}

// rawDanger reports a character that must never reach the terminal raw.
func rawDanger(r rune) bool {
	switch {
	case r == '\n' || r == '\r' || r == '\t':
		return false // the program's own line ends (the pty adds \r)
	case r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f):
		return true
	case r == 0x2028 || r == 0x2029 || r == 0xfffd:
		return true
	case unicode.In(r, unicode.Cf, unicode.Variation_Selector, unicode.Me):
		return true
	}
	return false
}

// unescapeShown inverts display.Show: the exact value behind a token.
func unescapeShown(t *testing.T, tok string) string {
	t.Helper()
	if strings.HasPrefix(tok, `"`) {
		if len(tok) < 2 || !strings.HasSuffix(tok, `"`) {
			t.Fatalf("unterminated quoted token %q", tok)
		}
		tok = tok[1 : len(tok)-1]
	}
	var b strings.Builder
	for i := 0; i < len(tok); {
		if tok[i] != '\\' {
			b.WriteByte(tok[i])
			i++
			continue
		}
		if i+1 >= len(tok) {
			t.Fatalf("lone backslash in %q", tok)
		}
		width := map[byte]int{'\\': 0, '"': 0, 'x': 2, 'u': 4, 'U': 8}
		w, ok := width[tok[i+1]]
		if !ok || i+2+w > len(tok) {
			t.Fatalf("bad escape at %d in %q", i, tok)
		}
		if w == 0 {
			b.WriteByte(tok[i+1])
			i += 2
			continue
		}
		n, err := strconv.ParseUint(tok[i+2:i+2+w], 16, 32)
		if err != nil {
			t.Fatalf("bad escape at %d in %q", i, tok)
		}
		if w == 2 {
			b.WriteByte(byte(n))
		} else {
			b.WriteRune(rune(n))
		}
		i += 2 + w
	}
	return b.String()
}

// On a real terminal, each hostile destination is shown as one row that
// reads back as the exact value; nothing dangerous reaches the terminal raw;
// the output has the same lines as for a plain value, plus the notes; and
// the question is asked once, at the end.
func TestApproveShowsHostileValues(t *testing.T) {
	for name, dest := range hostile {
		t.Run(name, func(t *testing.T) {
			home := t.TempDir()
			store := approval.Open(filepath.Join(home, "pending.json"), nil)
			r := mailReq
			r.Destination = dest
			code, err := store.Issue(r, nil)
			if err != nil {
				t.Fatal(err)
			}
			p := startPTY(t, "approve", code, "--home", home)
			// The question at the start of a line: "fake prompt" holds
			// its text too, and an answer sent before the real question
			// is discarded as type-ahead, which would leave approve
			// waiting for one.
			p.waitFor(t, "\nApprove? [y/N] ")
			out := p.output()
			for _, c := range out {
				if rawDanger(c) {
					t.Fatalf("the terminal received %U raw:\n%q", c, out)
				}
			}
			lines := strings.Split(strings.ReplaceAll(out, "\r\n", "\n"), "\n")
			var rows = map[string]string{}
			prompts := 0
			for i, l := range lines {
				if strings.HasPrefix(l, "Approve?") {
					prompts++
					if i != len(lines)-1 {
						t.Errorf("line %d of %d starts like the question: %q", i+1, len(lines), l)
					}
				}
				if m := regexp.MustCompile(`^  (code|server|tool|argument|destination|as ASCII|length) +(.*)$`).FindStringSubmatch(l); m != nil {
					if _, dup := rows[m[1]]; dup {
						t.Errorf("row %q appears twice:\n%s", m[1], out)
					}
					rows[m[1]] = m[2]
				}
			}
			if prompts != 1 {
				t.Errorf("%d lines start with the question", prompts)
			}
			if got := unescapeShown(t, rows["destination"]); got != dest {
				t.Errorf("the destination row %q reads back as %q, want %q", rows["destination"], got, dest)
			}
			if strings.HasPrefix(rows["destination"], "(") {
				t.Errorf("the destination row %q passes for the program's own words", rows["destination"])
			}
			if a, ok := rows["as ASCII"]; ok {
				if got := unescapeShown(t, a); got != dest {
					t.Errorf("the as-ASCII row %q reads back as %q", a, got)
				}
				for _, c := range a {
					if c >= 0x80 {
						t.Errorf("the as-ASCII row has %U", c)
					}
				}
			} else if strings.ContainsFunc(rows["destination"], func(r rune) bool { return r >= 0x80 }) {
				t.Errorf("no as-ASCII row for a destination with non-ASCII characters:\n%s", out)
			}
			if _, ok := rows["length"]; ok != (len(dest) > longDestination) {
				t.Errorf("length row shown = %v for %d bytes", ok, len(dest))
			}
			io.WriteString(p.f, "n\r")
			if status, _ := p.wait(t); status != 1 {
				t.Errorf("exit %d", status)
			}
		})
	}
}

// The ask for a call naming no destination is issued, shown as such, and
// approved like any other.
func TestApproveNoDestination(t *testing.T) {
	home := t.TempDir()
	store := approval.Open(filepath.Join(home, "pending.json"), nil)
	none := approval.Request{Server: "mail", Tool: "send_email"}
	code, err := store.Issue(none, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := startPTY(t, "approve", code, "--home", home)
	p.waitFor(t, "Approve? [y/N] ")
	out := p.output()
	for _, want := range []string{"names no destination", "argument     (none)\r\n", "destination  (none: the call names no destination)\r\n", "that names no destination"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	io.WriteString(p.f, "y\r")
	if status, out := p.wait(t); status != 0 || !strings.Contains(out, "Approved "+code) {
		t.Fatalf("exit %d:\n%s", status, out)
	}
	if codes, missing, err := store.Redeem([]approval.Request{none}); len(missing) > 0 || err != nil || len(codes) != 1 || codes[0].Code != code {
		t.Fatalf("Redeem = %v, %v, %v; want %s", codes, missing, err, code)
	}
}

// bouncer pending prints one line per open code whose six columns, split on
// runs of two or more spaces, read back as the exact values.
func TestPendingShowsHostileValues(t *testing.T) {
	home := t.TempDir()
	store := approval.Open(filepath.Join(home, "pending.json"), nil)
	type want struct{ code, param, dest string }
	var wants []want
	add := func(r approval.Request) {
		code, err := store.Issue(r, nil)
		if err != nil {
			t.Fatal(err)
		}
		wants = append(wants, want{code, r.Param, r.Destination})
		time.Sleep(2 * time.Millisecond) // oldest first: distinct issue times
	}
	add(approval.Request{Server: "mail", Tool: "send_email"})
	for _, name := range []string{"cursor and erase", "newline, fake field", "fake prompt", "bidi override", "the none marker", "quotes", "trailing space", "NUL"} {
		r := mailReq
		r.Destination = hostile[name]
		add(r)
	}
	r := mailReq
	r.Param = "to  (none)"
	add(r)
	out, err := exec.Command(bouncerBin(t), "pending", "--home", home).Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range string(out) {
		if rawDanger(c) {
			t.Fatalf("pending printed %U raw:\n%q", c, out)
		}
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != len(wants) {
		t.Fatalf("%d lines for %d codes:\n%s", len(lines), len(wants), out)
	}
	cols := regexp.MustCompile(`  +`)
	for i, l := range lines {
		f := cols.Split(l, -1)
		if len(f) != 6 {
			t.Errorf("line %d has %d columns: %q", i+1, len(f), l)
			continue
		}
		w := wants[i]
		if f[0] != w.code || f[2] != "mail" || f[3] != "send_email" {
			t.Errorf("line %d = %q", i+1, l)
		}
		if w.param == "" {
			if f[4] != "(none)" || f[5] != "(none)" {
				t.Errorf("no-destination line %d = %q", i+1, l)
			}
			continue
		}
		if got := unescapeShown(t, f[4]); got != w.param {
			t.Errorf("line %d: argument %q reads back as %q, want %q", i+1, f[4], got, w.param)
		}
		if got := unescapeShown(t, f[5]); got != w.dest {
			t.Errorf("line %d: destination %q reads back as %q, want %q", i+1, f[5], got, w.dest)
		}
	}
}

// One invalid entry (an older bouncer wrote it) does not lock the human
// out: pending lists the rest and names the bad entry, and approve says
// why its code can't be approved.
func TestInvalidEntryReported(t *testing.T) {
	home := t.TempDir()
	now := time.Now().UTC().Format(time.RFC3339Nano)
	content := fmt.Sprintf(`{"version":1,"codes":[
 {"code":"GOD-AAA","server":"mail","tool":"send_email","param":"to","destination":"bob@partner.com","issued":%q,"approved":false,"used":false},
 {"code":"BAD-AAA","server":"mail","tool":"send_email","param":"to","destination":%q,"issued":%q,"approved":false,"used":false}]}`,
		now, strings.Repeat("x", approval.MaxDestination+1), now)
	path := filepath.Join(home, "pending.json")
	os.WriteFile(path, []byte(content), 0o600)
	cmd := exec.Command(bouncerBin(t), "pending", "--home", home)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("pending: %v\n%s", err, stderr.String())
	}
	if !strings.HasPrefix(stdout.String(), "GOD-AAA") || strings.Count(stdout.String(), "\n") != 1 {
		t.Errorf("stdout %q, want the one good code", stdout.String())
	}
	if e := stderr.String(); !strings.Contains(e, path) || !strings.Contains(e, "codes[1] (BAD-AAA)") || !strings.Contains(e, "4097 bytes") {
		t.Errorf("stderr %q does not name the file, the entry and why", e)
	}
	p := startPTY(t, "approve", "--home", home, "BAD-AAA")
	status, out := p.wait(t)
	if status != 1 || !strings.Contains(out, "BAD-AAA can't be approved: its entry is invalid") || strings.Contains(out, "Approve?") {
		t.Errorf("exit %d:\n%s", status, out)
	}
	p = startPTY(t, "approve", "--home", home, "GOD-AAA")
	p.waitFor(t, "Approve? [y/N] ")
	io.WriteString(p.f, "y\r")
	if status, out := p.wait(t); status != 0 {
		t.Errorf("approving the good code: exit %d\n%s", status, out)
	}
}

// A log holding args with lone surrogates, bytes that aren't UTF-8 and args
// that aren't JSON verifies with bouncer audit verify.
func TestAuditVerifyHostileArgs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := audit.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	for i, a := range []string{`{"to":"\ud800@evil.com"}`, "{\"to\":\"\xff\"}", "{\"to\":\"x\ny\"}", `{"to":"\udc00\u2028"}`} {
		e := audit.Entry{Server: "mail", Tool: "send_email", Args: json.RawMessage(a), Verdict: "deny", Reason: "r", Rule: "sink", ID: json.RawMessage(strconv.Itoa(i))}
		if err := l.Append(e); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	out, err := exec.Command(bouncerBin(t), "audit", "verify", "--audit", path).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "4 lines, chain intact") {
		t.Fatalf("audit verify: %v\n%s", err, out)
	}
}
