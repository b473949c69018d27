package engine

import (
	"strings"
	"testing"
)

func TestUnquote(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string
		ok   bool
	}{
		{`'plain'`, "plain", true},
		{`"o'brien@x.com"`, "o'brien@x.com", true},
		{`'both\'"'`, `both'"`, true},
		{`'evil\u202ecom'`, "evil\u202ecom", true},
		{`'evil\\u202ecom'`, `evil\u202ecom`, true},
		{`'\x20pad\x20'`, " pad ", true},
		{`'a\\\'b'`, `a\'b`, true},
		{`plain`, "", false},
		{`'open`, "", false},
		{`'`, "", false},
	} {
		got, ok := Unquote(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("Unquote(%s) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

// FuzzQuote: a reason's quoted value is one token that reads back as the
// value, whatever it holds.
func FuzzQuote(f *testing.F) {
	f.Add(`o'brien "x" \u202e`)
	f.Add("a\u202e\x1b[2K  b\\'")
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > maxQuoted {
			s = s[:maxQuoted]
		}
		q := quote(s)
		if strings.ContainsAny(q[1:len(q)-1], "\n\r") {
			t.Fatalf("quote(%q) = %s spans lines", s, q)
		}
		if got, ok := Unquote(q); !ok || got != s {
			t.Fatalf("Unquote(quote(%q)) = %q, %v (quoted %s)", s, got, ok, q)
		}
	})
}
