package mcpconfig

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// node is one JSON value with the byte range it occupies in the document, so
// that a rewrite can replace one server entry and leave every other byte of
// the file as it was. Objects keep their members in file order.
type node struct {
	kind       byte // '{' object, '[' array, '"' string, '0' number, 't' true, 'f' false, 'n' null
	start, end int  // data[start:end] is the value's text
	members    []member
	elems      []*node
	str        string // decoded string, for kind '"'
}

type member struct {
	key              string
	keyStart, keyEnd int // data[keyStart:keyEnd] is the key as written, quotes included
	val              *node
}

// get returns the value of the first member named key.
func (n *node) get(key string) (*node, bool) {
	if n == nil || n.kind != '{' {
		return nil, false
	}
	for _, m := range n.members {
		if m.key == key {
			return m.val, true
		}
	}
	return nil, false
}

// Error is a problem with a config file. Line and Col are 1-based and 0 when
// the problem has no single place (an unreadable file).
type Error struct {
	File      string
	Line, Col int
	Msg       string
}

func (e *Error) Error() string {
	if e.Line == 0 {
		return e.File + ": " + e.Msg
	}
	return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Col, e.Msg)
}

// lineCol turns a byte offset into a 1-based line and column (the column
// counts bytes, which is what editors' "go to" accepts for ASCII JSON).
func lineCol(data []byte, off int) (int, int) {
	if off > len(data) {
		off = len(data)
	}
	if off < 0 {
		off = 0
	}
	line := 1 + bytes.Count(data[:off], []byte("\n"))
	col := off - bytes.LastIndexByte(data[:off], '\n')
	return line, col
}

// parse reads data as JSON with comments (JSONC: what VS Code, Cursor and
// Gemini CLI accept in their settings) and returns its tree. Strict JSON is
// a subset, so one reader serves every client's file; the rewrite keeps the
// comments because it only replaces the byte ranges it changes.
func parse(file string, data []byte) (*node, error) {
	n, off, err := parseJSONC(data, true)
	if err != nil {
		line, col := lineCol(data, off)
		msg := "not valid JSON: " + err.Error()
		if bytes.HasPrefix(data, []byte("\xef\xbb\xbf")) {
			msg += " (the file starts with a UTF-8 byte-order mark; save it without one)"
		}
		return nil, &Error{File: file, Line: line, Col: col, Msg: msg}
	}
	return n, nil
}

// maxDepth is encoding/json's nesting limit: a document it refuses for
// depth, this reader refuses too, and the walker's recursion stays bounded.
const maxDepth = 10000

// parseJSONC parses data. With jsonc false it accepts exactly what
// encoding/json accepts (RFC 8259; invalid UTF-8 inside strings included, as
// the standard decoder does); with jsonc true it also takes // and /* */
// comments wherever whitespace may stand, and one trailing comma before a
// closing bracket or brace. On error it returns the offset of the fault.
func parseJSONC(data []byte, jsonc bool) (*node, int, error) {
	p := &jparser{data: data, jsonc: jsonc}
	if err := p.ws(); err != nil {
		return nil, p.pos, err
	}
	n, err := p.value(0)
	if err != nil {
		return nil, p.pos, err
	}
	if err := p.ws(); err != nil {
		return nil, p.pos, err
	}
	if p.pos < len(p.data) {
		return nil, p.pos, fmt.Errorf("unexpected %s after the top-level value", p.describe())
	}
	return n, 0, nil
}

type jparser struct {
	data  []byte
	pos   int
	jsonc bool
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// ws skips whitespace and, in JSONC, comments.
func (p *jparser) ws() error {
	for p.pos < len(p.data) {
		c := p.data[p.pos]
		switch {
		case isSpace(c):
			p.pos++
		case c == '/' && p.jsonc && p.pos+1 < len(p.data) && p.data[p.pos+1] == '/':
			i := bytes.IndexByte(p.data[p.pos:], '\n')
			if i < 0 {
				p.pos = len(p.data)
			} else {
				p.pos += i + 1
			}
		case c == '/' && p.jsonc && p.pos+1 < len(p.data) && p.data[p.pos+1] == '*':
			i := bytes.Index(p.data[p.pos+2:], []byte("*/"))
			if i < 0 {
				return fmt.Errorf("a /* comment is never closed")
			}
			p.pos += 2 + i + 2
		default:
			return nil
		}
	}
	return nil
}

// describe names the byte at pos for a message.
func (p *jparser) describe() string {
	if p.pos >= len(p.data) {
		return "end of input"
	}
	c := p.data[p.pos]
	if c == '/' && !p.jsonc {
		return "'/' (comments are not JSON)"
	}
	if c < 0x20 || c >= 0x7f {
		return fmt.Sprintf("byte 0x%02x", c)
	}
	return fmt.Sprintf("character %q", c)
}

func (p *jparser) peek() byte {
	if p.pos < len(p.data) {
		return p.data[p.pos]
	}
	return 0
}

func (p *jparser) value(depth int) (*node, error) {
	if p.pos >= len(p.data) {
		return nil, fmt.Errorf("unexpected end of input, expected a value")
	}
	start := p.pos
	switch c := p.data[p.pos]; {
	case c == '{' || c == '[':
		if depth+1 > maxDepth {
			return nil, fmt.Errorf("nested more than %d deep", maxDepth)
		}
		if c == '{' {
			return p.object(start, depth+1)
		}
		return p.array(start, depth+1)
	case c == '"':
		return p.str()
	case c == 't' || c == 'f' || c == 'n':
		for _, lit := range []string{"true", "false", "null"} {
			if bytes.HasPrefix(p.data[p.pos:], []byte(lit)) {
				p.pos += len(lit)
				return &node{kind: lit[0], start: start, end: p.pos}, nil
			}
		}
		return nil, fmt.Errorf("unexpected %s, expected a value", p.describe())
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	default:
		return nil, fmt.Errorf("unexpected %s, expected a value", p.describe())
	}
}

func (p *jparser) object(start, depth int) (*node, error) {
	n := &node{kind: '{', start: start}
	p.pos++ // {
	if err := p.ws(); err != nil {
		return nil, err
	}
	if p.peek() == '}' {
		p.pos++
		n.end = p.pos
		return n, nil
	}
	for {
		if p.peek() != '"' {
			return nil, fmt.Errorf("unexpected %s, expected a quoted key", p.describe())
		}
		keyStart := p.pos
		k, err := p.str()
		if err != nil {
			return nil, err
		}
		if err := p.ws(); err != nil {
			return nil, err
		}
		if p.peek() != ':' {
			return nil, fmt.Errorf("unexpected %s, expected ':' after key %q", p.describe(), k.str)
		}
		p.pos++
		if err := p.ws(); err != nil {
			return nil, err
		}
		v, err := p.value(depth)
		if err != nil {
			return nil, err
		}
		n.members = append(n.members, member{key: k.str, keyStart: keyStart, keyEnd: k.end, val: v})
		if err := p.ws(); err != nil {
			return nil, err
		}
		switch p.peek() {
		case ',':
			p.pos++
			if err := p.ws(); err != nil {
				return nil, err
			}
			if p.jsonc && p.peek() == '}' {
				p.pos++
				n.end = p.pos
				return n, nil
			}
		case '}':
			p.pos++
			n.end = p.pos
			return n, nil
		default:
			return nil, fmt.Errorf("unexpected %s, expected ',' or '}'", p.describe())
		}
	}
}

func (p *jparser) array(start, depth int) (*node, error) {
	n := &node{kind: '[', start: start}
	p.pos++ // [
	if err := p.ws(); err != nil {
		return nil, err
	}
	if p.peek() == ']' {
		p.pos++
		n.end = p.pos
		return n, nil
	}
	for {
		v, err := p.value(depth)
		if err != nil {
			return nil, err
		}
		n.elems = append(n.elems, v)
		if err := p.ws(); err != nil {
			return nil, err
		}
		switch p.peek() {
		case ',':
			p.pos++
			if err := p.ws(); err != nil {
				return nil, err
			}
			if p.jsonc && p.peek() == ']' {
				p.pos++
				n.end = p.pos
				return n, nil
			}
		case ']':
			p.pos++
			n.end = p.pos
			return n, nil
		default:
			return nil, fmt.Errorf("unexpected %s, expected ',' or ']'", p.describe())
		}
	}
}

// str reads a string token, checking what RFC 8259 requires (no control
// characters, only the defined escapes) and decoding it the way
// encoding/json does, which also settles surrogates and invalid UTF-8.
func (p *jparser) str() (*node, error) {
	start := p.pos
	p.pos++ // opening quote
	for p.pos < len(p.data) {
		c := p.data[p.pos]
		switch {
		case c == '"':
			p.pos++
			n := &node{kind: '"', start: start, end: p.pos}
			if err := json.Unmarshal(p.data[start:p.pos], &n.str); err != nil {
				// Unreachable for text that passed the checks above; kept
				// so a disagreement fails closed instead of decoding wrong.
				return nil, fmt.Errorf("bad string: %v", err)
			}
			return n, nil
		case c == '\\':
			if p.pos+1 >= len(p.data) {
				p.pos++
				return nil, fmt.Errorf("unexpected end of input in a string")
			}
			switch e := p.data[p.pos+1]; e {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				p.pos += 2
			case 'u':
				for i := 2; i < 6; i++ {
					if p.pos+i >= len(p.data) || !isHex(p.data[p.pos+i]) {
						p.pos += i
						return nil, fmt.Errorf("unexpected %s in a \\u escape", p.describe())
					}
				}
				p.pos += 6
			default:
				p.pos++
				return nil, fmt.Errorf("unexpected %s after a backslash in a string", p.describe())
			}
		case c < 0x20:
			return nil, fmt.Errorf("unexpected %s in a string (control characters must be escaped)", p.describe())
		default:
			p.pos++
		}
	}
	return nil, fmt.Errorf("unexpected end of input in a string")
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// number reads -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?.
func (p *jparser) number() (*node, error) {
	start := p.pos
	if p.peek() == '-' {
		p.pos++
	}
	switch c := p.peek(); {
	case c == '0':
		p.pos++
	case c >= '1' && c <= '9':
		for isDigit(p.peek()) {
			p.pos++
		}
	default:
		return nil, fmt.Errorf("unexpected %s in a number", p.describe())
	}
	if p.peek() == '.' {
		p.pos++
		if !isDigit(p.peek()) {
			return nil, fmt.Errorf("unexpected %s after a decimal point", p.describe())
		}
		for isDigit(p.peek()) {
			p.pos++
		}
	}
	if c := p.peek(); c == 'e' || c == 'E' {
		p.pos++
		if c := p.peek(); c == '+' || c == '-' {
			p.pos++
		}
		if !isDigit(p.peek()) {
			return nil, fmt.Errorf("unexpected %s in an exponent", p.describe())
		}
		for isDigit(p.peek()) {
			p.pos++
		}
	}
	return &node{kind: '0', start: start, end: p.pos}, nil
}
