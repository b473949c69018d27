// Package jsontext holds the lexical pieces of JSON text that more than one
// of Bouncer's readers needs: the engine's call parser decodes \u escapes,
// the audit log's strict rewriting looks at them to find lone surrogates,
// and the JSONC reader of the clients' configs (internal/jsonc) checks
// them. All must read an escape the same way, so it is read here. So is
// FoldKey, the key folding of Go's encoding/json, under which the engine
// refuses a call and the audit log a line whose keys a Go reader merges,
// and AppendQuoted, the one way Bouncer writes a JSON string (the engine's
// encoder, audit lines, the pump's envelopes).
package jsontext

import (
	"math/bits"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
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

// SameFold reports whether FoldKey(a) == FoldKey(b), without making
// either: a rune at a time, each folded as FoldKey folds it.
func SameFold(a, b string) bool {
	for a != "" && b != "" {
		ra, na := foldedRune(a)
		rb, nb := foldedRune(b)
		if ra != rb {
			return false
		}
		a, b = a[na:], b[nb:]
	}
	return a == "" && b == ""
}

// foldedRune is the first rune of s as FoldKey writes it, and its length
// in s.
func foldedRune(s string) (rune, int) {
	if c := s[0]; c < utf8.RuneSelf {
		if 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		return rune(c), 1
	}
	r, n := utf8.DecodeRuneInString(s)
	return foldRune(r), n
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

// RunOf returns how many bytes at the start of b are neither '"', nor a
// backslash, nor a control byte, nor (with ascii) at or above 0x80. Most of
// a large message is string content, and every string Bouncer forwards is
// checked here, so on amd64 with AVX2 it tests 32 bytes per instruction
// (runBlocks, in assembly) and elsewhere eight bytes per word (runWords).
func RunOf[T string | []byte](b T, ascii bool) int {
	i := 0
	if haveBlocks && len(b) >= 32 {
		// The same two words as a string header: b's bytes, not a copy.
		i = runBlocks(*(*string)(unsafe.Pointer(&b)), ascii)
		if i < len(b)&^31 {
			return i
		}
	}
	return i + runWords(b[i:], ascii)
}

// runWords is RunOf without vector instructions. It tests 32 bytes at a time
// while none of them stops the run (one branch for four words), then finds
// the stop in that block eight bytes at a time.
func runWords[T string | []byte](b T, ascii bool) int {
	stop := uint64(0)
	if ascii {
		stop = highs
	}
	i := 0
	for ; i+32 <= len(b); i += 32 {
		w := b[i : i+32]
		if runStops(wordAt(w, 0), stop)|runStops(wordAt(w, 8), stop)|runStops(wordAt(w, 16), stop)|runStops(wordAt(w, 24), stop) != 0 {
			break
		}
	}
	for ; i+8 <= len(b); i += 8 {
		if m := runStops(wordAt(b, i), stop); m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
	}
	for ; i < len(b); i++ {
		if c := b[i]; c < 0x20 || c == '"' || c == '\\' || (ascii && c >= 0x80) {
			return i
		}
	}
	return i
}

const ones, highs = 0x0101010101010101, 0x8080808080808080

// wordAt is the eight bytes of b at i, little-endian (one load: slicing
// first leaves a single bounds check).
func wordAt[T string | []byte](b T, i int) uint64 {
	b = b[i : i+8]
	return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
}

// runStops has a byte's high bit set where x's byte stops a run: below 0x20,
// a quote, a backslash (the classic "has a zero byte" test for each), or,
// when stop is highs, at or above 0x80. A borrow only runs upward from a
// byte that is itself a hit, so the lowest flagged byte is exactly the
// first stop.
func runStops(x, stop uint64) uint64 {
	q := x ^ (ones * '"')
	s := x ^ (ones * '\\')
	return ((x-ones*0x20)&^x|(q-ones)&^q|(s-ones)&^s)&highs | x&stop
}

const hexDigits = "0123456789abcdef"

// AppendQuoted appends s as a JSON string, escaping as encoding/json does
// without HTML escaping.
func AppendQuoted(buf []byte, s string) []byte {
	buf = append(buf, '"')
	start := 0
	for i := 0; i < len(s); {
		if n := RunOf(s[i:], true); n > 0 {
			i += n
			continue
		}
		c := s[i]
		if c < utf8.RuneSelf {
			buf = append(buf, s[start:i]...)
			switch c {
			case '"', '\\':
				buf = append(buf, '\\', c)
			case '\b':
				buf = append(buf, '\\', 'b')
			case '\f':
				buf = append(buf, '\\', 'f')
			case '\n':
				buf = append(buf, '\\', 'n')
			case '\r':
				buf = append(buf, '\\', 'r')
			case '\t':
				buf = append(buf, '\\', 't')
			default:
				buf = append(buf, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			buf = append(buf, s[start:i]...)
			buf = append(buf, `\ufffd`...)
			i++
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			buf = append(buf, s[start:i]...)
			buf = append(buf, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	buf = append(buf, s[start:]...)
	return append(buf, '"')
}
