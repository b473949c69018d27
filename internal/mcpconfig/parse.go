package mcpconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
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

// parse validates data as strict JSON (RFC 8259, no comments, no trailing
// commas) and returns its tree. The syntax check is encoding/json's, so what
// is accepted is exactly what the standard decoder accepts; the tree builder
// then only has to walk text already known to be valid.
func parse(file string, data []byte) (*node, error) {
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			// Offset is the number of bytes read when the error was found;
			// the offending byte is the one before it.
			off := int(se.Offset) - 1
			if off < 0 {
				off = 0
			}
			line, col := lineCol(data, off)
			msg := "not valid JSON: " + se.Error()
			if bytes.HasPrefix(data, []byte("\xef\xbb\xbf")) {
				msg += " (the file starts with a UTF-8 byte-order mark; save it without one)"
			} else if looksLikeJSONC(data, off) {
				msg += " (comments and trailing commas are not supported: remove them, or wrap the servers by hand)"
			}
			return nil, &Error{File: file, Line: line, Col: col, Msg: msg}
		}
		return nil, &Error{File: file, Msg: "not valid JSON: " + err.Error()}
	}
	p := &parser{data: data}
	p.ws()
	n, err := p.value(0)
	if err != nil {
		line, col := lineCol(data, p.pos)
		return nil, &Error{File: file, Line: line, Col: col, Msg: err.Error()}
	}
	return n, nil
}

// looksLikeJSONC reports whether the syntax error at off is a comment or a
// trailing comma, to say so in the message.
func looksLikeJSONC(data []byte, off int) bool {
	if off < len(data) && data[off] == '/' {
		return true
	}
	if off < len(data) && (data[off] == '}' || data[off] == ']') {
		i := off - 1
		for i >= 0 && isSpace(data[i]) {
			i--
		}
		return i >= 0 && data[i] == ','
	}
	return false
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// maxDepth bounds nesting; encoding/json refuses deeper documents already,
// this keeps the walker safe on its own.
const maxDepth = 10000

type parser struct {
	data []byte
	pos  int
}

func (p *parser) ws() {
	for p.pos < len(p.data) && isSpace(p.data[p.pos]) {
		p.pos++
	}
}

func (p *parser) value(depth int) (*node, error) {
	if depth > maxDepth {
		return nil, errors.New("nested too deeply")
	}
	if p.pos >= len(p.data) {
		return nil, errors.New("unexpected end of input")
	}
	start := p.pos
	switch c := p.data[p.pos]; {
	case c == '{':
		n := &node{kind: '{', start: start}
		p.pos++
		p.ws()
		if p.peek() == '}' {
			p.pos++
			n.end = p.pos
			return n, nil
		}
		for {
			p.ws()
			keyStart := p.pos
			k, err := p.value(depth + 1)
			if err != nil {
				return nil, err
			}
			if k.kind != '"' {
				return nil, errors.New("object key is not a string")
			}
			p.ws()
			if p.peek() != ':' {
				return nil, errors.New("expected ':'")
			}
			p.pos++
			p.ws()
			v, err := p.value(depth + 1)
			if err != nil {
				return nil, err
			}
			n.members = append(n.members, member{key: k.str, keyStart: keyStart, keyEnd: k.end, val: v})
			p.ws()
			switch p.peek() {
			case ',':
				p.pos++
			case '}':
				p.pos++
				n.end = p.pos
				return n, nil
			default:
				return nil, errors.New("expected ',' or '}'")
			}
		}
	case c == '[':
		n := &node{kind: '[', start: start}
		p.pos++
		p.ws()
		if p.peek() == ']' {
			p.pos++
			n.end = p.pos
			return n, nil
		}
		for {
			p.ws()
			v, err := p.value(depth + 1)
			if err != nil {
				return nil, err
			}
			n.elems = append(n.elems, v)
			p.ws()
			switch p.peek() {
			case ',':
				p.pos++
			case ']':
				p.pos++
				n.end = p.pos
				return n, nil
			default:
				return nil, errors.New("expected ',' or ']'")
			}
		}
	case c == '"':
		p.pos++
		for p.pos < len(p.data) {
			switch p.data[p.pos] {
			case '\\':
				p.pos += 2
				continue
			case '"':
				p.pos++
				n := &node{kind: '"', start: start, end: p.pos}
				if err := json.Unmarshal(p.data[start:p.pos], &n.str); err != nil {
					return nil, fmt.Errorf("bad string: %v", err)
				}
				return n, nil
			}
			p.pos++
		}
		return nil, errors.New("unterminated string")
	case c == 't' || c == 'f' || c == 'n':
		for _, lit := range []string{"true", "false", "null"} {
			if bytes.HasPrefix(p.data[p.pos:], []byte(lit)) {
				p.pos += len(lit)
				return &node{kind: lit[0], start: start, end: p.pos}, nil
			}
		}
		return nil, errors.New("bad literal")
	case c == '-' || (c >= '0' && c <= '9'):
		for p.pos < len(p.data) && strings.IndexByte("+-0123456789.eE", p.data[p.pos]) >= 0 {
			p.pos++
		}
		return &node{kind: '0', start: start, end: p.pos}, nil
	default:
		return nil, fmt.Errorf("unexpected character %q", c)
	}
}

func (p *parser) peek() byte {
	if p.pos < len(p.data) {
		return p.data[p.pos]
	}
	return 0
}
