package taint

import (
	"encoding/json"
	"unicode/utf8"
)

// json records the strings (values and keys) and numbers of a JSON
// document, each as its own piece; invalid JSON is recorded as text.
func (sc *scanner) json(doc []byte) {
	if !json.Valid(doc) {
		sc.piece(doc)
		return
	}
	for i := 0; i < len(doc); {
		c := doc[i]
		switch {
		case c == '"':
			end, s := sc.jsonString(doc, i+1)
			sc.piece(s)
			i = end
		case c == '-' || c >= '0' && c <= '9':
			j := i + 1
			for j < len(doc) && (doc[j] >= '0' && doc[j] <= '9' || doc[j] == '.' || doc[j] == 'e' || doc[j] == 'E' || doc[j] == '+' || doc[j] == '-') {
				j++
			}
			sc.record(doc[i:j], 0)
			i = j
		default:
			i++
		}
	}
}

// jsonString decodes the string starting at doc[i] (just after the quote) of
// a valid document. It returns the index after the closing quote and the
// content, which aliases doc when there is no escape.
func (sc *scanner) jsonString(doc []byte, i int) (int, []byte) {
	start := i
	for i < len(doc) && doc[i] != '"' && doc[i] != '\\' {
		i++
	}
	if i < len(doc) && doc[i] == '"' {
		return i + 1, doc[start:i]
	}
	buf := append(sc.jbuf[:0], doc[start:i]...)
	for i < len(doc) {
		c := doc[i]
		if c == '"' {
			i++
			break
		}
		if c != '\\' {
			buf = append(buf, c)
			i++
			continue
		}
		n, r := backslash(doc[i:])
		if n == 0 { // cannot happen in valid JSON; keep the byte
			buf = append(buf, c)
			i++
			continue
		}
		buf = utf8.AppendRune(buf, r)
		i += n
	}
	sc.jbuf = buf
	return i, buf
}
