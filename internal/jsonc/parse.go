package jsonc

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/bouncer-mcp/bouncer/internal/jsontext"
)

// maxDepth is encoding/json's nesting limit: a document it refuses for
// depth, this reader refuses too, and the walker's recursion stays bounded.
const maxDepth = 10000

// parse parses data. With jsonc false it accepts exactly what
// encoding/json accepts (RFC 8259; invalid UTF-8 inside strings included, as
// the standard decoder does); with jsonc true it also takes // and /* */
// comments wherever whitespace may stand, and one trailing comma before a
// closing bracket or brace. On error it returns the offset of the fault.
func parse(data []byte, jsonc bool) (*Node, int, error) {
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

func (p *jparser) value(depth int) (*Node, error) {
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
				return &Node{Kind: Kind(lit[0]), Start: start, End: p.pos}, nil
			}
		}
		return nil, fmt.Errorf("unexpected %s, expected a value", p.describe())
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	default:
		return nil, fmt.Errorf("unexpected %s, expected a value", p.describe())
	}
}

func (p *jparser) object(start, depth int) (*Node, error) {
	n := &Node{Kind: Object, Start: start}
	p.pos++ // {
	if err := p.ws(); err != nil {
		return nil, err
	}
	if p.peek() == '}' {
		p.pos++
		n.End = p.pos
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
			return nil, fmt.Errorf("unexpected %s, expected ':' after key %q", p.describe(), k.Str)
		}
		p.pos++
		if err := p.ws(); err != nil {
			return nil, err
		}
		v, err := p.value(depth)
		if err != nil {
			return nil, err
		}
		n.Members = append(n.Members, Member{Key: k.Str, KeyStart: keyStart, KeyEnd: k.End, Val: v})
		done, err := p.after('}')
		if err != nil {
			return nil, err
		}
		if done {
			n.End = p.pos
			return n, nil
		}
	}
}

func (p *jparser) array(start, depth int) (*Node, error) {
	n := &Node{Kind: Array, Start: start}
	p.pos++ // [
	if err := p.ws(); err != nil {
		return nil, err
	}
	if p.peek() == ']' {
		p.pos++
		n.End = p.pos
		return n, nil
	}
	for {
		v, err := p.value(depth)
		if err != nil {
			return nil, err
		}
		n.Elems = append(n.Elems, v)
		done, err := p.after(']')
		if err != nil {
			return nil, err
		}
		if done {
			n.End = p.pos
			return n, nil
		}
	}
}

// after reads what follows a member or an element: a ',' (and, in JSONC,
// a trailing one before close) or close itself. done is true once close
// is read; false means another member or element follows.
func (p *jparser) after(close byte) (done bool, err error) {
	if err := p.ws(); err != nil {
		return false, err
	}
	switch p.peek() {
	case ',':
		p.pos++
		if err := p.ws(); err != nil {
			return false, err
		}
		if p.jsonc && p.peek() == close {
			p.pos++
			return true, nil
		}
		return false, nil
	case close:
		p.pos++
		return true, nil
	}
	return false, fmt.Errorf("unexpected %s, expected ',' or '%c'", p.describe(), close)
}

// str reads a string token, checking what RFC 8259 requires (no control
// characters, only the defined escapes) and decoding it the way
// encoding/json does, which also settles surrogates and invalid UTF-8.
func (p *jparser) str() (*Node, error) {
	start := p.pos
	p.pos++ // opening quote
	for p.pos < len(p.data) {
		c := p.data[p.pos]
		switch {
		case c == '"':
			p.pos++
			n := &Node{Kind: String, Start: start, End: p.pos}
			if err := json.Unmarshal(p.data[start:p.pos], &n.Str); err != nil {
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
					if p.pos+i >= len(p.data) || !jsontext.IsHex(p.data[p.pos+i]) {
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

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// number reads -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?.
func (p *jparser) number() (*Node, error) {
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
	return &Node{Kind: Number, Start: start, End: p.pos}, nil
}
