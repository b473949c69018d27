package e2e

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestGoDecodesKeyAs(t *testing.T) {
	for _, tc := range []struct {
		key, field string
		want       bool
	}{
		{"to", "to", true},
		{"TO", "to", true},
		{"tO", "to", true},
		{"arguments", "arguments", true},
		{"argumentſ", "arguments", true}, // U+017F LATIN SMALL LETTER LONG S
		{"ARGUMENTſ", "arguments", true},
		{"\u212aey", "key", true}, // U+212A KELVIN SIGN
		{"Path", "path", true},
		{"to ", "to", false},
		{"t\u200bo", "to", false},
		{"ｔｏ", "to", false}, // full-width forms do not fold
		{"tos", "to", false},
		{"", "to", false},
		{"x", "", false},    // an empty tag: the Go field name is used
		{"F", "", false},    // ... and that is not what this asks
		{"a", "a,b", false}, // a comma ends the tag name
		{"-", "-", false},   // "-" skips the field
	} {
		if got := GoDecodesKeyAs(tc.key, tc.field); got != tc.want {
			t.Errorf("GoDecodesKeyAs(%q, %q) = %v, want %v", tc.key, tc.field, got, tc.want)
		}
	}
}

// FuzzGoDecodesKeyAs pins the rule down: for valid UTF-8, encoding/json
// takes a key as a field exactly when strings.EqualFold says they match.
func FuzzGoDecodesKeyAs(f *testing.F) {
	for _, k := range []string{"to", "tO", "argumentſ", "\u212aey", "Path", "ｔｏ", "t\u200bo"} {
		f.Add(k)
	}
	fields := []string{"to", "cc", "path", "arguments", "name", "key", "subject", "messages"}
	f.Fuzz(func(t *testing.T, key string) {
		if !utf8.ValidString(key) {
			return
		}
		for _, field := range fields {
			if got, want := GoDecodesKeyAs(key, field), strings.EqualFold(key, field); got != want {
				t.Errorf("GoDecodesKeyAs(%q, %q) = %v, strings.EqualFold says %v", key, field, got, want)
			}
		}
	})
}
