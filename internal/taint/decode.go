package taint

import (
	"html"
	"strings"
	"unicode/utf8"
)

// maxDecode is how many times a piece of text is decoded: once for plain
// encodings (attacker%40evil.com, attacker&#64;evil.com,
// attacker\u0040evil.com) and once more for one level of nesting
// (%26%2364%3B is &#64; is @). Deeper nesting is not decoded: such a
// destination is not traced and goes to a human.
const maxDecode = 2

func unhex(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		v, ok := unhex(c)
		if !ok {
			return 0, false
		}
		r = r<<4 | rune(v)
	}
	return r, true
}

// decode appends src to dst with one layer of percent-encoding, HTML
// character references and JSON (and JavaScript \xHH) string escapes
// decoded, all in one left-to-right pass. changed reports whether anything
// was decoded. Malformed escapes are copied as they are.
func decode(dst, src []byte) (out []byte, changed bool) {
	for i := 0; i < len(src); {
		c := src[i]
		switch c {
		case '%':
			if i+2 < len(src) {
				h, ok1 := unhex(src[i+1])
				l, ok2 := unhex(src[i+2])
				if ok1 && ok2 {
					dst = append(dst, h<<4|l)
					i += 3
					changed = true
					continue
				}
			}
		case '&':
			if n, s := entity(src[i:]); n > 0 {
				dst = append(dst, s...)
				i += n
				changed = true
				continue
			}
		case '\\':
			if n, r := backslash(src[i:]); n > 0 {
				dst = utf8.AppendRune(dst, r)
				i += n
				changed = true
				continue
			}
		}
		dst = append(dst, c)
		i++
	}
	return dst, changed
}

// entity decodes one HTML character reference at the start of b (which
// starts with '&'): numeric (&#64; &#x40;, the ';' optional as browsers
// allow) or named (&commat; &amp;, any HTML5 name, trying the name as
// written and then in lower case). It returns the bytes consumed, or 0.
func entity(b []byte) (int, string) {
	j := 1
	for j < len(b) && j < 40 {
		c := b[j]
		if c == '#' && j == 1 || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' {
			j++
			continue
		}
		break
	}
	if j == 1 {
		return 0, ""
	}
	semi := j < len(b) && b[j] == ';'
	if b[1] == '#' {
		return numericRef(b, j, semi)
	}
	if !semi {
		// Without ';' only the legacy names decode (&amp &lt &gt &quot
		// &nbsp ...); of those only these can matter to a destination.
		for _, l := range legacyRefs {
			if len(b)-1 >= len(l[0]) && string(b[1:1+len(l[0])]) == l[0] {
				return 1 + len(l[0]), l[1]
			}
		}
		return 0, ""
	}
	if s, ok := commonRefs[string(b[1:j])]; ok { // no allocation
		return j + 1, s
	}
	j++
	ref := string(b[:j])
	if s := html.UnescapeString(ref); s != ref {
		return consumed(ref, s)
	}
	if lower := strings.ToLower(ref); lower != ref {
		if s := html.UnescapeString(lower); s != lower {
			return consumed(lower, s)
		}
	}
	return 0, ""
}

// commonRefs decodes the references that are common in tool output
// without going through html.UnescapeString (which allocates).
var commonRefs = map[string]string{
	"amp": "&", "lt": "<", "gt": ">", "quot": "\"", "apos": "'", "nbsp": "\u00a0",
	"commat": "@", "period": ".", "colon": ":", "sol": "/", "num": "#", "percnt": "%",
	"equals": "=", "quest": "?", "plus": "+", "lowbar": "_", "hyphen": "-",
}

var legacyRefs = [][2]string{
	{"amp", "&"}, {"AMP", "&"}, {"lt", "<"}, {"LT", "<"}, {"gt", ">"}, {"GT", ">"},
	{"quot", "\""}, {"QUOT", "\""}, {"nbsp", "\u00a0"},
}

// numericRef decodes &#NN; or &#xHH; (b[:j] is '&', '#' and alphanumerics;
// semi says a ';' follows). Like a browser it accepts a missing ';', maps
// zero, surrogates and out-of-range values to U+FFFD, and reads 0x80..0x9F
// as Windows-1252, by deferring those rare cases to html.UnescapeString.
func numericRef(b []byte, j int, semi bool) (int, string) {
	k := 2
	hex := k < j && (b[k] == 'x' || b[k] == 'X')
	if hex {
		k++
	}
	start := k
	var v rune
	for k < j {
		c := b[k]
		var d byte
		var ok bool
		if hex {
			d, ok = unhex(c)
		} else {
			d, ok = c-'0', c >= '0' && c <= '9'
		}
		if !ok || v > 0x10ffff {
			break
		}
		if hex {
			v = v<<4 | rune(d)
		} else {
			v = v*10 + rune(d)
		}
		k++
	}
	if k == start {
		return 0, ""
	}
	n := k
	if k == j && semi {
		n++
	}
	if v < 0x80 && v > 0 || v >= 0xa0 && v <= 0x10ffff && (v < 0xd800 || v > 0xdfff) {
		if v < 0x80 {
			return n, asciiStrings[v]
		}
		return n, string(v)
	}
	ref := string(b[:n])
	if s := html.UnescapeString(ref); s != ref {
		return n, s
	}
	return 0, ""
}

// asciiStrings holds one-byte strings, so decoding &#64; allocates nothing.
var asciiStrings = func() (t [128]string) {
	for i := range t {
		t[i] = string(rune(i))
	}
	return
}()

// consumed works out how much of ref html.UnescapeString decoded: a legacy
// name without ';' (&ampfoo is "&" + "foo") decodes only a prefix, and the
// undecoded rest is copied back unchanged at the end of s. It returns the
// length of the reference proper and what it decodes to.
func consumed(ref, s string) (int, string) {
	n := len(ref)
	for n > 0 && len(s) > 0 && ref[n-1] == s[len(s)-1] {
		// The shared tail was not part of the reference; but never eat
		// into the decoded text itself, which is at most 8 bytes.
		if len(s) <= 1 {
			break
		}
		n--
		s = s[:len(s)-1]
	}
	return n, s
}

// backslash decodes one JSON escape (\" \\ \/ \b \f \n \r \t \uXXXX, with
// surrogate pairs), or the JavaScript and Python forms \xHH, \u{H..} and
// \UHHHHHHHH, at the start of b. It returns the bytes consumed, or 0.
func backslash(b []byte) (int, rune) {
	if len(b) < 2 {
		return 0, 0
	}
	switch b[1] {
	case '"', '\\', '/', '\'':
		return 2, rune(b[1])
	case 'b':
		return 2, '\b'
	case 'f':
		return 2, '\f'
	case 'n':
		return 2, '\n'
	case 'r':
		return 2, '\r'
	case 't':
		return 2, '\t'
	case 'x':
		if len(b) >= 4 {
			h, ok1 := unhex(b[2])
			l, ok2 := unhex(b[3])
			if ok1 && ok2 {
				return 4, rune(h<<4 | l)
			}
		}
	case 'U':
		// Python and C: \U0001F4E7.
		if len(b) >= 10 {
			hi, ok1 := hex4(b[2:])
			lo, ok2 := hex4(b[6:])
			if r := hi<<16 | lo; ok1 && ok2 && r <= 0x10ffff {
				if r >= 0xd800 && r < 0xe000 {
					return 10, utf8.RuneError
				}
				return 10, r
			}
		}
	case 'u':
		if len(b) >= 4 && b[2] == '{' {
			// JavaScript: \u{40}.
			var r rune
			for j := 3; j < len(b) && j < 10; j++ {
				if b[j] == '}' {
					if j == 3 || r > 0x10ffff {
						return 0, 0
					}
					if r >= 0xd800 && r < 0xe000 {
						return j + 1, utf8.RuneError
					}
					return j + 1, r
				}
				v, ok := unhex(b[j])
				if !ok {
					return 0, 0
				}
				r = r<<4 | rune(v)
			}
			return 0, 0
		}
		r, ok := hex4(b[2:])
		if !ok {
			return 0, 0
		}
		if r >= 0xd800 && r < 0xdc00 && len(b) >= 12 && b[6] == '\\' && b[7] == 'u' {
			if lo, ok := hex4(b[8:]); ok && lo >= 0xdc00 && lo < 0xe000 {
				return 12, 0x10000 + (r-0xd800)<<10 + (lo - 0xdc00)
			}
		}
		if r >= 0xd800 && r < 0xe000 {
			return 6, utf8.RuneError
		}
		return 6, r
	}
	return 0, 0
}
