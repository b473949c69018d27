package engine

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/bouncer-mcp/bouncer/internal/display"
)

// quote renders a value inside a reason: single quotes (double when the value
// holds a single quote and no double), escaped by the one display escaper
// (display.Printable: control, format and other invisible characters, a
// space at either end or next to another, and a backslash) so that a
// destination can't hide in a reason or spoof the terminal it is printed
// on, and reads the same here as in bouncer log and the approval prompt.
// The quote character inside is written \' (or \"); Printable never writes
// a quote itself, so that is unambiguous.
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
	q := "'"
	if strings.Contains(s, "'") && !strings.Contains(s, `"`) {
		q = `"`
	}
	p, _ := display.Printable(s)
	out := q + strings.ReplaceAll(p, q, `\`+q) + q
	if more > 0 {
		out += fmt.Sprintf("… (%d more bytes)", more)
	}
	return out
}

// Unquote reads back a value that quote wrote into a reason, given the
// quoted token with its quotes ('…' or "…"): readers of reasons (the review
// pack's destination tables) call it instead of knowing quote's escapes.
// The token must not include quote's "… (N more bytes)" tail. ok is false
// for a token that is not in quotes.
func Unquote(q string) (s string, ok bool) {
	if len(q) < 2 || (q[0] != '\'' && q[0] != '"') || q[len(q)-1] != q[0] {
		return "", false
	}
	quoteChar, inner := q[0], q[1:len(q)-1]
	var b strings.Builder
	for i := 0; i < len(inner); i++ {
		if inner[i] == '\\' && i+1 < len(inner) {
			// \' (or \") is quote's; every other escape is Printable's,
			// kept whole for display.Unescape.
			if inner[i+1] != quoteChar {
				b.WriteByte('\\')
			}
			b.WriteByte(inner[i+1])
			i++
			continue
		}
		b.WriteByte(inner[i])
	}
	return display.Unescape(b.String()), true
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
