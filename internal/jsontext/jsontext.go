// Package jsontext holds the lexical pieces of JSON text that more than one
// of Bouncer's readers needs: the engine's call parser decodes \u escapes,
// the audit log's strict rewriting looks at them to find lone surrogates,
// and the JSONC reader of the clients' configs (internal/jsonc) checks
// them. All must read an escape the same way, so it is read here. So is
// FoldKey, the key folding of Go's encoding/json, under which the engine
// refuses a call and the audit log a line whose keys a Go reader merges.
package jsontext

import (
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// IsHex reports whether c is a hex digit, of which a \u escape has four.
func IsHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// Hex4 reads the four hex digits of a \u escape at the start of b (the
// bytes after `\u`). It reports false when there are fewer than four or
// one is not a hex digit, which makes the escape invalid JSON.
func Hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case !IsHex(c):
			return 0, false
		case c <= '9':
			c -= '0'
		case c >= 'a':
			c = c - 'a' + 10
		default:
			c = c - 'A' + 10
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// UEscape reads the \u escape at the start of b (b starts with the
// backslash) as encoding/json decodes it: a high surrogate followed by an
// escaped low one is one rune, read from both escapes (n is 12); anything
// else is one escape (n is 6). A surrogate that is not part of such a pair
// is returned as itself, which is no rune: encoding/json reads it as
// U+FFFD, and utf16.IsSurrogate tells the caller so. ok is false when b
// does not start with `\u` and four hex digits.
func UEscape(b []byte) (r rune, n int, ok bool) {
	if len(b) < 2 || b[0] != '\\' || b[1] != 'u' {
		return 0, 0, false
	}
	if r, ok = Hex4(b[2:]); !ok {
		return 0, 0, false
	}
	if utf16.IsSurrogate(r) && r < 0xdc00 && len(b) >= 12 && b[6] == '\\' && b[7] == 'u' {
		if lo, ok := Hex4(b[8:]); ok {
			if pair := utf16.DecodeRune(r, lo); pair != utf8.RuneError {
				return pair, 12, true
			}
		}
	}
	return r, 6, true
}

// FoldKey returns the form under which Go's encoding/json matches an object
// key to a struct field: two keys with the same FoldKey fill the same field
// of a Go server's request struct. ASCII letters fold to upper case; any
// other rune to the smallest rune of its Unicode simple-folding orbit, so
// the long s (U+017F) folds with s and the Kelvin sign (U+212A) with k.
// This must stay the rule encoding/json applies (its foldName); a
// differential fuzz test holds the two together.
func FoldKey(k string) string {
	ascii := true
	for i := 0; i < len(k); i++ {
		if k[i] >= utf8.RuneSelf || 'a' <= k[i] && k[i] <= 'z' {
			ascii = false
			break
		}
	}
	if ascii {
		return k
	}
	var b strings.Builder
	b.Grow(len(k))
	for _, r := range k {
		switch {
		case r < utf8.RuneSelf:
			if 'a' <= r && r <= 'z' {
				r -= 'a' - 'A'
			}
		default:
			r = foldRune(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// foldRune returns the smallest rune of r's simple-folding orbit.
func foldRune(r rune) rune {
	for {
		r2 := unicode.SimpleFold(r)
		if r2 <= r {
			return r2
		}
		r = r2
	}
}
