package approval

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Printable returns s safe to show on a terminal: control characters
// (which could move the cursor or rewrite the prompt), bidirectional
// overrides and isolates (which could make "evil.com/@bob" read as
// something else), invisible format characters, line and paragraph
// separators and invalid UTF-8 are written as escapes (\x1b, \u202e), and a
// backslash as \\ so that escapes can't be faked. changed reports whether
// anything was escaped, so the caller can say so.
func Printable(s string) (out string, changed bool) {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
			changed = true
		case r == '\\':
			b.WriteString(`\\`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
			changed = true
		case hidden(r):
			fmt.Fprintf(&b, `\u%04x`, r)
			changed = true
		default:
			b.WriteRune(r)
		}
		i += size
	}
	return b.String(), changed
}

// hidden reports characters a terminal would not show as themselves.
func hidden(r rune) bool {
	switch {
	case r >= 0x80 && r <= 0x9f: // C1 controls, CSI among them
		return true
	case r == 0x2028 || r == 0x2029: // line, paragraph separator
		return true
	case unicode.Is(unicode.Cf, r): // bidi controls, zero-width, BOM, tags
		return true
	case unicode.Is(unicode.Zs, r) && r != ' ': // odd spaces look like a space
		return true
	case unicode.Is(unicode.Co, r) || unicode.Is(unicode.Cs, r) || r == utf8.RuneError:
		return true
	}
	return false
}
