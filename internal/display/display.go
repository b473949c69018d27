// Package display is the one escaper for text that Bouncer shows to a
// person and that someone else chose: a tool or server name, an argument, a
// destination, a reason that quotes one. Every place that shows such text
// calls it: the approval prompt and `bouncer pending`, `bouncer log`, the
// review pack (`bouncer report`, inside its Markdown code spans), and the
// engine's reasons, which quote the values they name. One escaper means one
// reading: a real U+202E is \u202e everywhere, and the six characters
// "\u202e" are \\u202e everywhere, so an escape can't be faked in one
// place that another would print raw.
//
// It imports nothing of Bouncer's, so any package may call it.
package display

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Printable returns s safe to show on a terminal, so that a human sees
// exactly the value they approve. Written as escapes (\x1b, \u202e,
// \U000e0041): control characters (which could move the cursor or rewrite
// the prompt), bidirectional overrides and isolates (which could make
// "evil.com/@bob" read as something else), invisible characters (format
// characters, variation selectors, fillers, blanks), line and paragraph
// separators, unusual spaces, unassigned code points, invalid UTF-8,
// combining marks with no base or stacked more than three deep (which can
// draw over neighbouring lines), and a space at either end or next to
// another space (which can hide an end or push text onto a line of its
// own). A backslash is written as \\ so that escapes can't be faked.
// changed reports whether anything was escaped, so the caller can say so.
func Printable(s string) (out string, changed bool) {
	var b strings.Builder
	marks := -1 // combining marks since the last base character; -1: no base
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
			changed, marks = true, -1
		case r == '\\':
			b.WriteString(`\\`)
			marks = 0
		case escapeAt(s, i, r, marks):
			writeEscape(&b, r)
			changed, marks = true, -1
		default:
			b.WriteRune(r)
			switch {
			case r == ' ':
				marks = -1
			case unicode.Is(unicode.Mn, r):
				marks++
			default:
				marks = 0
			}
		}
		i += size
	}
	return b.String(), changed
}

// Unescape reads back what Printable wrote: Unescape(Printable(s)) is s
// for every s. A backslash that starts none of Printable's escapes (\\, \xHH,
// \uHHHH, \UHHHHHHHH) stands for itself, so text Printable did not write
// (an older log's reason) reads as it is and is never refused.
func Unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		if s[i] != '\\' || i+1 >= len(s) {
			b.WriteByte(s[i])
			i++
			continue
		}
		width := 0
		switch s[i+1] {
		case '\\':
			b.WriteByte('\\')
			i += 2
			continue
		case 'x':
			width = 2
		case 'u':
			width = 4
		case 'U':
			width = 8
		}
		n, ok := hexAt(s, i+2, width)
		switch {
		case !ok:
			b.WriteByte(s[i])
			i++
			continue
		case width == 2:
			b.WriteByte(byte(n)) // a control character, or a byte that is not UTF-8
		default:
			b.WriteRune(rune(n))
		}
		i += 2 + width
	}
	return b.String()
}

// hexAt reads width hex digits at s[i:], false when there are not that
// many (or width is 0).
func hexAt(s string, i, width int) (uint32, bool) {
	if width == 0 || i+width > len(s) {
		return 0, false
	}
	var n uint32
	for _, c := range []byte(s[i : i+width]) {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		n = n<<4 | uint32(c)
	}
	return n, true
}

// escapeAt reports whether r, at byte i of s after marks combining marks
// (-1: with no base to sit on), is to be escaped.
func escapeAt(s string, i int, r rune, marks int) bool {
	switch {
	case r < 0x20 || r == 0x7f:
		return true
	case r == ' ':
		return i == 0 || i+1 == len(s) || s[i-1] == ' ' || s[i+1] == ' '
	case hidden(r):
		return true
	case unicode.Is(unicode.Me, r): // enclosing marks draw around their neighbours
		return true
	case unicode.Is(unicode.Mn, r):
		return marks < 0 || marks >= 3
	}
	return false
}

// writeEscape writes r as \xHH, \uHHHH or \UHHHHHHHH, a fixed width each,
// so an escape never runs into the characters after it.
func writeEscape(b *strings.Builder, r rune) {
	switch {
	case r < 0x80:
		fmt.Fprintf(b, `\x%02x`, r)
	case r <= 0xffff:
		fmt.Fprintf(b, `\u%04x`, r)
	default:
		fmt.Fprintf(b, `\U%08x`, r)
	}
}

// hidden reports characters a terminal would not show as themselves.
func hidden(r rune) bool {
	switch {
	case r >= 0x80 && r <= 0x9f: // C1 controls, CSI among them
		return true
	case r == 0x2028 || r == 0x2029: // line, paragraph separator
		return true
	case r == utf8.RuneError:
		return true
	case r == 0x2800: // braille blank: a letter-like blank
		return true
	case unicode.In(r, unicode.Cf, // bidi controls, zero-width, BOM, tags
		unicode.Co, unicode.Cs,
		unicode.Variation_Selector,                 // invisible, and can carry hidden data
		unicode.Other_Default_Ignorable_Code_Point, // Hangul fillers, CGJ and the like
	):
		return true
	case unicode.Is(unicode.Zs, r) && r != ' ': // odd spaces look like a space
		return true
	case !unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.P, unicode.S, unicode.Zs):
		return true // unassigned, noncharacters
	}
	return false
}

// Show returns s as one unambiguous token for a line of text: Printable(s)
// as it is when that is plain, else in double quotes with \" for a quote.
// It is quoted when it is empty, holds a space or a quote, or starts with
// "(", which marks the display's own words (as in "(none)"): so a value
// never runs into the next column, never hides an end, and never passes for
// something the program wrote.
func Show(s string) (out string, changed bool) {
	p, changed := Printable(s)
	if s != "" && !strings.ContainsAny(p, ` "`) && !strings.HasPrefix(p, "(") {
		return p, changed
	}
	return `"` + strings.ReplaceAll(p, `"`, `\"`) + `"`, changed
}

// ASCII returns Printable(s) with every other non-ASCII character escaped
// too, for a second look at a value whose letters may be lookalikes (a
// Cyrillic а in "pаrtner.com").
func ASCII(s string) string {
	p, _ := Printable(s)
	var b strings.Builder
	for _, r := range p {
		if r < 0x80 {
			b.WriteRune(r)
		} else {
			writeEscape(&b, r)
		}
	}
	return b.String()
}
