package display

import (
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestPrintable(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"bob@partner.com", "bob@partner.com"},
		{"josé@x.es", "josé@x.es"},
		{"jose\u0301@x.es", "jose\u0301@x.es"}, // a decomposed é is fine
		{"Bob Smith <bob@x.com>", "Bob Smith <bob@x.com>"},
		{"a\x1b[2K\rApprove? [y/N] y", `a\x1b[2K\x0dApprove? [y/N] y`},
		{"moc.live@\u202ebob", `moc.live@\u202ebob`},
		{"a\u2066b\u2069", `a\u2066b\u2069`},
		{"a\u200bb", `a\u200bb`},
		{"a\u009b31m", `a\u009b31m`},
		{"a\nb\tc", `a\x0ab\x09c`},
		{"a\x00b", `a\x00b`},
		{"bad\xffutf8", `bad\xffutf8`},
		{"surrogate\xed\xa0\x80", `surrogate\xed\xa0\x80`},
		{`back\x1bslash`, `back\\x1bslash`},
		{"a\u2028b", `a\u2028b`},
		{"a\u00a0b", `a\u00a0b`},
		{"\ufffd", `\ufffd`},
		{"tag\U000E0041", `tag\U000e0041`},             // invisible tag letter, fixed-width escape
		{"a\U0001F600b", "a\U0001F600b"},               // an emoji is shown as itself
		{"vs\ufe0fx\U000E0100", `vs\ufe0fx\U000e0100`}, // variation selectors can smuggle data
		{"h\u3164i\u115f\u2800", `h\u3164i\u115f\u2800`},
		{"cgj\u034fx", `cgj\u034fx`},
		{"unassigned\U000EFFFD\uffff", `unassigned\U000efffd\uffff`},
		{"\u0301start", `\u0301start`},                                                   // a mark with no base
		{"z\u0301\u0302\u0303\u0304\u0305", `z` + "\u0301\u0302\u0303" + `\u0304\u0305`}, // stacked marks
		{"a \u0301", `a \u0301`},
		{"x\u20dd", `x\u20dd`}, // enclosing mark
		{" lead", `\x20lead`},
		{"trail ", `trail\x20`},
		{"x" + strings.Repeat(" ", 5) + "Approve? [y/N]", `x\x20\x20\x20\x20\x20Approve? [y/N]`},
		{" ", `\x20`},
		{"", ""},
	} {
		got, changed := Printable(tc.in)
		if got != tc.want {
			t.Errorf("Printable(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if want := strings.ReplaceAll(tc.want, `\\`, `\`) != tc.in; changed != want {
			t.Errorf("Printable(%q): changed = %v", tc.in, changed)
		}
		checkPrintable(t, tc.in, got)
	}
}

func TestShow(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"bob@partner.com", "bob@partner.com"},
		{"", `""`},
		{"(none)", `"(none)"`},
		{"(none: the call names no destination)", `"(none: the call names no destination)"`},
		{"Bob Smith", `"Bob Smith"`},
		{`say "hi"`, `"say \"hi\""`},
		{`"quoted"`, `"\"quoted\""`},
		{"a\x1b[2Kb", `a\x1b[2Kb`},
		{"a  b", `a\x20\x20b`},
		{`c:\x`, `c:\\x`},
	} {
		if got, _ := Show(tc.in); got != tc.want {
			t.Errorf("Show(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

func TestASCII(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"bob@partner.com", "bob@partner.com"},
		{"bob@p\u0430rtner.com", `bob@p\u0430rtner.com`}, // Cyrillic а
		{"\U0001F600\x1b", `\U0001f600\x1b`},
		{`a\b`, `a\\b`},
	} {
		if got := ASCII(tc.in); got != tc.want {
			t.Errorf("ASCII(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

// unescape inverts Printable.
func unescape(t *testing.T, s string) string {
	t.Helper()
	var b strings.Builder
	for i := 0; i < len(s); {
		if s[i] != '\\' {
			b.WriteByte(s[i])
			i++
			continue
		}
		if i+1 >= len(s) {
			t.Fatalf("a lone backslash at the end of %q", s)
		}
		width := map[byte]int{'\\': 0, 'x': 2, 'u': 4, 'U': 8}[s[i+1]]
		if _, ok := map[byte]bool{'\\': true, 'x': true, 'u': true, 'U': true}[s[i+1]]; !ok || i+2+width > len(s) {
			t.Fatalf("a bad escape at %d of %q", i, s)
		}
		if width == 0 {
			b.WriteByte('\\')
			i += 2
			continue
		}
		n, err := strconv.ParseUint(s[i+2:i+2+width], 16, 32)
		if err != nil {
			t.Fatalf("a bad escape at %d of %q: %v", i, s, err)
		}
		if width == 2 {
			b.WriteByte(byte(n))
		} else {
			b.WriteRune(rune(n))
		}
		i += 2 + width
	}
	return b.String()
}

// checkPrintable asserts what a terminal gets from Printable(in): nothing
// that moves the cursor, reorders or hides text, no space a human could
// miss, marks that stay on their line, and exactly in, once unescaped.
func checkPrintable(t *testing.T, in, out string) {
	t.Helper()
	if !utf8.ValidString(out) {
		t.Fatalf("Printable(%q) = %q is not valid UTF-8", in, out)
	}
	marks := -1
	for i, r := range out {
		if r < 0x20 || r == 0x7f || hidden(r) || unicode.Is(unicode.Me, r) {
			t.Fatalf("Printable(%q) left %U in", in, r)
		}
		switch {
		case r == ' ' && (i == 0 || i == len(out)-1 || out[i-1] == ' ' || out[i+1] == ' '):
			t.Fatalf("Printable(%q) = %q has a space at an end or next to another", in, out)
		case r == ' ':
			marks = -1
		case unicode.Is(unicode.Mn, r):
			if marks < 0 || marks >= 3 {
				t.Fatalf("Printable(%q) = %q has a mark with no base or stacked deep", in, out)
			}
			marks++
		default:
			marks = 0
		}
	}
	if back := unescape(t, out); back != in {
		t.Fatalf("Printable(%q) = %q reads back as %q", in, out, back)
	}
	if back := Unescape(out); back != in {
		t.Fatalf("Unescape(Printable(%q)) = %q", in, back)
	}
}

func TestUnescape(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`x\u202ey`, "x\u202ey"},
		{`x\\u202ey`, `x\u202ey`},
		{`a\x0ab\x09\xff`, "a\nb\t\xff"},
		{`tag\U000e0041`, "tag\U000E0041"},
		// Not Printable's: a backslash that starts no escape is itself.
		{`old\n reason`, `old\n reason`},
		{`short \u20`, `short \u20`},
		{`bad \xZZ and \`, `bad \xZZ and \`},
		{`quote \' stays`, `quote \' stays`},
		{"plain", "plain"},
	} {
		if got := Unescape(tc.in); got != tc.want {
			t.Errorf("Unescape(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func FuzzPrintable(f *testing.F) {
	f.Add("a\x1b[31mb\u202e")
	f.Add(" a  b \u0301\u0302\u0303\u0304 \U000E0041\xff")
	f.Add(`\x1b \\u202e "(none)"`)
	f.Fuzz(func(t *testing.T, s string) {
		out, changed := Printable(s)
		checkPrintable(t, s, out)
		if !changed && out != strings.ReplaceAll(s, `\`, `\\`) {
			t.Fatalf("Printable(%q) = %q changed it without saying so", s, out)
		}
		// Show is one token: unquoted it has no space, quote or leading
		// "("; quoted, it is the Printable form with its quotes escaped.
		sh, _ := Show(s)
		if strings.HasPrefix(sh, `"`) {
			inner := sh[1 : len(sh)-1]
			if len(sh) < 2 || !strings.HasSuffix(sh, `"`) || strings.ReplaceAll(inner, `\"`, `"`) != out {
				t.Fatalf("Show(%q) = %s", s, sh)
			}
		} else if sh != out || sh == "" || strings.ContainsAny(sh, ` "`) || strings.HasPrefix(sh, "(") {
			t.Fatalf("Show(%q) = %s is ambiguous", s, sh)
		}
		for _, r := range ASCII(s) {
			if r >= 0x80 {
				t.Fatalf("ASCII(%q) left %U", s, r)
			}
		}
	})
}
