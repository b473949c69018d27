package engine

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// quote renders a value inside a reason: single quotes (double when the value
// holds a single quote and no double), with control, format and other
// invisible characters escaped so that a destination can't hide in a
// reason or spoof the terminal it is printed on.
func quote(s string) string {
	more := 0
	if len(s) > maxQuoted {
		// A reason names a value; the audit line's args hold all of it.
		cut := maxQuoted
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s, more = s[:cut], len(s)-cut
	}
	q := byte('\'')
	if strings.ContainsRune(s, '\'') && !strings.ContainsRune(s, '"') {
		q = '"'
	}
	var b strings.Builder
	b.WriteByte(q)
	for _, r := range s {
		switch {
		case r == rune(q) || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == unicode.ReplacementChar:
			b.WriteString(`\ufffd`)
		case !unicode.IsPrint(r) || unicode.Is(unicode.Cf, r):
			if r > 0xffff {
				fmt.Fprintf(&b, `\U%08x`, r)
			} else {
				fmt.Fprintf(&b, `\u%04x`, r)
			}
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte(q)
	if more > 0 {
		fmt.Fprintf(&b, "… (%d more bytes)", more)
	}
	return b.String()
}

// maxQuoted bounds how much of a value a reason repeats.
const maxQuoted = 256

func quoteList(ss []string) string {
	parts := make([]string, len(ss))
	for i, s := range ss {
		parts[i] = quote(s)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}
