package jsontext

import (
	"encoding/json"
	"testing"
	"unicode/utf16"
	"unicode/utf8"
)

// Hex4 accepts exactly the escapes encoding/json accepts, and reads them
// to the same rune (for the escapes that are not surrogates).
func TestHex4(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want rune
		ok   bool
	}{
		{"0041", 'A', true},
		{"00e9", 'é', true},
		{"00E9", 'é', true},
		{"FFFF", 0xffff, true},
		{"d83d", 0xd83d, true},
		{"004", 0, false},
		{"004g", 0, false},
		{" 041", 0, false},
		{"", 0, false},
	} {
		r, ok := Hex4([]byte(tc.in))
		if r != tc.want || ok != tc.ok {
			t.Errorf("Hex4(%q) = %U, %v; want %U, %v", tc.in, r, ok, tc.want, tc.ok)
		}
	}
}

func FuzzHex4(f *testing.F) {
	f.Add([]byte("00e9"))
	f.Add([]byte("zz00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, ok := Hex4(b)
		var s string
		err := json.Unmarshal(append(append([]byte(`"\u`), b[:min(len(b), 4)]...), '"'), &s)
		if ok != (err == nil) {
			t.Fatalf("Hex4(%q) ok=%v, encoding/json: %v", b, ok, err)
		}
		if ok && (r < 0xd800 || r > 0xdfff) && s != string(r) {
			t.Fatalf("Hex4(%q) = %U, encoding/json read %q", b, r, s)
		}
	})
}

func TestUEscape(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want rune
		n    int
		ok   bool
	}{
		{`\u00e9x`, 'é', 6, true},
		{`\ud83d\ude00`, '😀', 12, true},
		{`\ud83d`, 0xd83d, 6, true},       // lone high
		{`\ude00\ud83d`, 0xde00, 6, true}, // low first: not a pair
		{`\ud83d\u0041`, 0xd83d, 6, true}, // high, then no low
		{`\ud83d\ud83d`, 0xd83d, 6, true}, // high, then high
		{`\ud83d\ude0`, 0xd83d, 6, true},  // the second escape is cut short
		{`\ufffd`, 0xfffd, 6, true},
		{`\u00g0`, 0, 0, false},
		{`\n`, 0, 0, false},
		{`u0041`, 0, 0, false},
	} {
		r, n, ok := UEscape([]byte(tc.in))
		if r != tc.want || n != tc.n || ok != tc.ok {
			t.Errorf("UEscape(%q) = %U, %d, %v; want %U, %d, %v", tc.in, r, n, ok, tc.want, tc.n, tc.ok)
		}
	}
}

// FuzzUEscape checks UEscape against encoding/json: for a string that
// starts with a \u escape, the rune it reads (U+FFFD for a lone
// surrogate) followed by the rest of the string decodes to what
// encoding/json decodes the whole string to.
func FuzzUEscape(f *testing.F) {
	for _, s := range []string{`00e9`, `d83d\ude00`, `d83d`, `d83d\u0041x`, `de00\ud83d`, `zz`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, tail []byte) {
		b := append([]byte(`\u`), tail...)
		var whole string
		werr := json.Unmarshal(append(append([]byte(`"`), b...), '"'), &whole)
		r, n, ok := UEscape(b)
		if !ok {
			if werr == nil {
				t.Fatalf("UEscape(%q) refused what encoding/json reads as %q", b, whole)
			}
			return
		}
		if werr != nil {
			return // the rest of the string is what encoding/json refused
		}
		if utf16.IsSurrogate(r) {
			r = utf8.RuneError
		}
		var rest string
		if err := json.Unmarshal(append(append([]byte(`"`), b[n:]...), '"'), &rest); err != nil {
			t.Fatalf("the rest of %q after %d bytes: %v", b, n, err)
		}
		if string(r)+rest != whole {
			t.Fatalf("UEscape(%q) = %U, %d: %q + %q, encoding/json read %q", b, r, n, string(r), rest, whole)
		}
	})
}

// FuzzSameFold holds SameFold to FoldKey, which it stands in for where
// making the folded keys would cost an allocation each.
func FuzzSameFold(f *testing.F) {
	for _, s := range [][2]string{{"to", "tO"}, {"arguments", "argumentſ"}, {"link", "lin\u212a"}, {"to", "to "},
		{"", ""}, {"a", ""}, {"\xff", "\ufffd"}, {"\xffa", "\ufffdA"}, {"ß", "ẞ"}, {"K", "\u212a"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		if got, want := SameFold(a, b), FoldKey(a) == FoldKey(b); got != want {
			t.Fatalf("SameFold(%q, %q) = %v, FoldKey says %v", a, b, got, want)
		}
	})
}
