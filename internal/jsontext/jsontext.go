// Package jsontext holds the lexical pieces of JSON text that more than one
// of Bouncer's readers needs: the engine's call parser decodes \u escapes,
// and the audit log's strict rewriting looks at them to find lone
// surrogates. Both must read an escape the same way, so it is read here.
package jsontext

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
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}
