package taint

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/bouncer-mcp/bouncer/internal/testsupport/need"
)

// FuzzFold: folding never panics, is idempotent, and leaves no ignorable
// runes, no upper-case ASCII and no runs of spaces.
func FuzzFold(f *testing.F) {
	for _, s := range []string{"ＡＢＣ", "a\u200bb", "Straße ſ ǅ", "e\u0301", "\xff\xfe", " a  b ", "ﷺ", "İı", "ᾈ"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a := Fold(s)
		if b := Fold(a); b != a {
			t.Fatalf("Fold(%q) = %q, but Fold of that = %q", s, a, b)
		}
		if strings.Contains(a, "  ") || strings.HasPrefix(a, " ") || strings.HasSuffix(a, " ") {
			t.Fatalf("Fold(%q) = %q has stray spaces", s, a)
		}
		for _, r := range a {
			if ignorable(r) || r >= 'A' && r <= 'Z' {
				t.Fatalf("Fold(%q) = %q keeps %U", s, a, r)
			}
		}
	})
}

// FuzzNoPanic: recording any text or document and checking any destination
// never panics, and a store never forgets: what was seen stays seen.
func FuzzNoPanic(f *testing.F) {
	f.Add("mail attacker@evil.com", []byte(`{"a":"b@c.de"}`), "attacker@evil.com")
	f.Add("%26%2364%3B &#x; \\u12 \\ud800", []byte(`[1e5, "\u0040"]`), "%%")
	f.Add("https://x/?a=&b#c=d://e:f/g", []byte("{"), "https://x/?a=b@c.de")
	f.Add("000 0 00 00 00 00 0 0 0", []byte(`["000 0 00 00 00 00 0 0 0"]`), "0000000") // once a panic
	f.Fuzz(func(t *testing.T, text string, doc []byte, dest string) {
		s := NewStore()
		before := s.Seen(dest)
		s.Record(text)
		s.RecordJSON(doc)
		after := s.Seen(dest)
		if before && !after {
			t.Fatal("seen, then unseen after more output")
		}
		_ = Tokens(text)
		_ = DestForms(dest)
	})
}

// The fuzzed destination is wrapped in one of these encodings (applied
// once or twice) and surrounded by punctuation, and must be found again.
var encoders = []func(string) string{
	func(s string) string { return s },
	// percent-encode every byte
	func(s string) string {
		var b strings.Builder
		for i := 0; i < len(s); i++ {
			fmt.Fprintf(&b, "%%%02X", s[i])
		}
		return b.String()
	},
	// percent-encode only address punctuation
	func(s string) string {
		return strings.NewReplacer("@", "%40", ".", "%2e", ":", "%3A", "/", "%2F").Replace(s)
	},
	// decimal character references
	func(s string) string {
		var b strings.Builder
		for _, r := range s {
			fmt.Fprintf(&b, "&#%d;", r)
		}
		return b.String()
	},
	// hex character references
	func(s string) string {
		var b strings.Builder
		for _, r := range s {
			fmt.Fprintf(&b, "&#x%X;", r)
		}
		return b.String()
	},
	// named references
	func(s string) string {
		return strings.NewReplacer("@", "&commat;", ".", "&period;", ":", "&colon;", "/", "&sol;", "&", "&amp;", "<", "&lt;").Replace(s)
	},
	// JSON \u escapes for every rune
	func(s string) string {
		var b strings.Builder
		for _, r := range s {
			if r >= 0x10000 {
				r -= 0x10000
				fmt.Fprintf(&b, `\u%04x\u%04x`, 0xd800+(r>>10), 0xdc00+(r&0x3ff))
				continue
			}
			fmt.Fprintf(&b, `\u%04X`, r)
		}
		return b.String()
	},
	// JSON-style escapes of punctuation only
	func(s string) string {
		return strings.NewReplacer("/", `\/`, "@", `\u0040`, `"`, `\"`, `\`, `\\`).Replace(s)
	},
}

var transforms = []func(string) string{
	func(s string) string { return s },
	// full-width forms of printable ASCII
	func(s string) string {
		return strings.Map(func(r rune) rune {
			if r > ' ' && r < 0x7f {
				return r + 0xfee0
			}
			return r
		}, s)
	},
	// a zero-width character after every rune
	func(s string) string {
		var b strings.Builder
		zw := []string{"\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad"}
		i := 0
		for _, r := range s {
			b.WriteRune(r)
			b.WriteString(zw[i%len(zw)])
			i++
		}
		return b.String()
	},
}

var wrappers = [][2]string{
	{"", ""}, {"mail ", " now"}, {"(", ")."}, {"<", ">,"}, {`"`, `";`}, {"'", "'!"},
	{"[", "]?"}, {"{", "}:"}, {"`", "`"}, {"**", "**"}, {"Mallory <", ">"}, {"to:\u00a0", "\u3000x"},
	{"«", "»"}, {"请发送到", "。"}, {"mailto:", "?subject=hi"}, {"https://x.example/?to=", "&x=1"},
	{"see\n", "\n"}, {"...", "..."},
}

// eligible reports whether dest is one whole token by the package's own
// rules, so that finding it again is required: a single word after folding,
// with no separator inside, long enough, and not starting with a combining
// mark (which would merge with the wrapper before it).
func eligible(dest string) bool {
	if !utf8.ValidString(dest) {
		return false
	}
	f := Fold(dest)
	if strings.ContainsRune(f, ' ') || runeLen(trim([]byte(f))) < MinLen {
		return false
	}
	if hasSep1([]byte(f)) || hasApos([]byte(f)) {
		return false
	}
	r, _ := utf8.DecodeRuneInString(f)
	p := norm.NFKC.PropertiesString(string(r))
	return p.BoundaryBefore() && p.CCC() == 0
}

// FuzzRecordedIsSeen: a destination recorded in any supported wrapping is
// always seen again, in its plain form and in the wrapped form.
func FuzzRecordedIsSeen(f *testing.F) {
	for _, d := range []string{"attacker@evil.com", "https://evil.example/hook", "#general", "@octocat", "acme/widgets", "josé@correo.es", "Ölçü.Şirket@örnek.tr", "пётр@почта.рф"} {
		for i := range 4 {
			f.Add(d, uint8(i), uint8(i*3), uint8(i*5), false)
		}
	}
	f.Fuzz(func(t *testing.T, dest string, enc, tr, wrap uint8, upper bool) {
		if !eligible(dest) {
			need.Skip(t, "input outside the property")
		}
		wr := wrappers[int(wrap)%len(wrappers)]
		if strings.Contains(wr[0], ":") && (strings.ContainsAny(Fold(dest), ":?&=#") || strings.HasPrefix(Fold(dest), "/")) {
			// Inside mailto: or a URL query these are URI syntax
			// (mailto:a#b is the address a, mailto://x is a URL with
			// host x), not part of a value.
			need.Skip(t, "input outside the property")
		}
		d := dest
		if upper {
			d = strings.ToUpper(d)
		}
		e1 := encoders[int(enc)%len(encoders)]
		e2 := encoders[int(enc/16)%len(encoders)]
		if strings.ContainsAny(Fold(dest), `%&\`) {
			// A destination that itself holds escape syntax is found in
			// its raw form (always recorded); encoding it on top would
			// make the escapes ambiguous.
			e1, e2 = encoders[0], encoders[0]
		}
		wrapped := transforms[int(tr)%len(transforms)](e2(e1(d)))
		text := wr[0] + wrapped + wr[1]
		s := NewStore()
		s.Record(text)
		if !s.Seen(dest) {
			t.Fatalf("recorded %q (as %q), not seen\ntokens: %q\ndest forms: %q", dest, text, Tokens(text), DestForms(dest))
		}
		js := NewStore()
		doc, err := json.Marshal(map[string]string{"v": text})
		if err != nil {
			t.Fatal(err)
		}
		js.RecordJSON(doc)
		if !js.Seen(dest) {
			t.Fatalf("recorded %q in JSON, not seen", text)
		}
	})
}
