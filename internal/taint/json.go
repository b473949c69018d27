package taint

import (
	"unicode/utf8"
)

// json records the strings (values and keys) and numbers of a JSON
// document, each string as its own piece. It does not validate first (that
// would cost a third of the time): it scans strings and the runs between
// them, and if anything is not JSON (an unterminated string, a bad escape, a
// bare word that is not a number or literal) it also records the whole
// document as plain text, so nothing in invalid JSON is lost.
func (sc *scanner) json(doc []byte) {
	valid := true
	for i := 0; i < len(doc); {
		c := doc[i]
		switch c {
		case '"':
			end, s, ok := sc.jsonString(doc, i+1)
			if !ok {
				valid = false
			}
			sc.piece(s)
			i = end
		case '{', '}', '[', ']', ',', ':', ' ', '\t', '\n', '\r':
			i++
		default:
			j := i + 1
			for j < len(doc) && !jsonDelim(doc[j]) {
				j++
			}
			run := doc[i:j]
			if !jsonScalar(run) {
				valid = false
			}
			sc.record(run, 0)
			i = j
		}
	}
	if !valid {
		sc.piece(doc)
	}
}

func jsonDelim(c byte) bool {
	switch c {
	case '"', '{', '}', '[', ']', ',', ':', ' ', '\t', '\n', '\r':
		return true
	}
	return false
}

// jsonScalar reports a number or literal (loosely: the characters of one).
func jsonScalar(b []byte) bool {
	switch string(b) {
	case "true", "false", "null":
		return true
	}
	for _, c := range b {
		if !(c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E') {
			return false
		}
	}
	return true
}

// jsonString decodes the string whose content starts at doc[i] (just after
// the quote). It returns the index after the closing quote, the content
// (aliasing doc when there is no escape) and whether the string was well
// formed.
func (sc *scanner) jsonString(doc []byte, i int) (int, []byte, bool) {
	start := i
	for i < len(doc) && doc[i] != '"' && doc[i] != '\\' && doc[i] >= 0x20 {
		i++
	}
	if i < len(doc) && doc[i] == '"' {
		return i + 1, doc[start:i], true
	}
	ok := true
	buf := append(sc.jbuf[:0], doc[start:i]...)
	closed := false
	for i < len(doc) {
		c := doc[i]
		if c == '"' {
			i++
			closed = true
			break
		}
		if c < 0x20 {
			ok = false
		}
		if c != '\\' {
			buf = append(buf, c)
			i++
			continue
		}
		n, r := backslash(doc[i:])
		if n == 0 || !jsonEscape(doc[i:]) {
			ok = false
			if n == 0 {
				buf = append(buf, c)
				i++
				continue
			}
		}
		buf = utf8.AppendRune(buf, r)
		i += n
	}
	sc.jbuf = buf
	return i, buf, ok && closed
}

// jsonEscape reports whether the escape at the start of b (a backslash with
// at least one byte after it) is one JSON allows; backslash also decodes
// JavaScript and Python forms, which make the document not JSON.
func jsonEscape(b []byte) bool {
	switch b[1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return true
	case 'u':
		return len(b) < 3 || b[2] != '{'
	}
	return false
}
