package jsontext

import (
	"encoding/json"
	"testing"
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
