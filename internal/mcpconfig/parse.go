package mcpconfig

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/bouncer-mcp/bouncer/internal/display"
	"github.com/bouncer-mcp/bouncer/internal/filepos"
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

// get returns the value of the member named key, the last one when the
// key repeats: that is the one every client reads (JSON.parse and VS Code's
// jsonc-parser keep the last of two equal keys). On the path init reads and
// rewrites a repeat never gets here (checkUnique refuses it); elsewhere (a
// hook file) reading the last keeps bouncer on the client's side.
func (n *node) get(key string) (*node, bool) {
	if n == nil || n.kind != '{' {
		return nil, false
	}
	for i := len(n.members) - 1; i >= 0; i-- {
		if n.members[i].key == key {
			return n.members[i].val, true
		}
	}
	return nil, false
}

// A key that appears twice in one JSON object is read differently by
// different readers, so Bouncer refuses it where the difference matters.
// The rule is not one function across the project, on purpose:
//
//   - Here, in a client's config, a key repeated in any object on the path
//     init reads and rewrites (a server block and everything in its
//     entries: command, args, env, url, headers, x-bouncer-upstream) is
//     refused, compared exactly. The readers are the clients (JSON.parse,
//     VS Code's jsonc-parser: exact keys, the last of two wins) and bouncer
//     itself; a repeat would have init wrap one server while the client
//     runs the other. A repeat elsewhere in the file (the client's own
//     settings) is left to the client, so a stray one there does not stop
//     init.
//   - In a tools/call (engine.ParseCall), a repeated key is refused at any
//     depth, and so are two keys that fold together (engine.FoldKey):
//     the readers include Go servers, whose encoding/json matches struct
//     fields ignoring case. No client reads its config that way.
//   - The policy and trust files (internal/policy, internal/bundle) are
//     YAML, read from yaml.Node with YAML's own positions: a repeated key
//     is refused there too, naming the first line, by their own loops over
//     the mapping's nodes, which a JSON tree can't share.

// repeated returns the first member of object n whose key an earlier member
// already has, with that earlier member; nil when every key is unique.
func (n *node) repeated() (first, second *member) {
	if n.kind != '{' || len(n.members) < 2 {
		return nil, nil
	}
	seen := make(map[string]int, len(n.members))
	for i := range n.members {
		if j, ok := seen[n.members[i].key]; ok {
			return &n.members[j], &n.members[i]
		}
		seen[n.members[i].key] = i
	}
	return nil, nil
}

// checkUnique refuses a key repeated in object n or in any object inside
// it, naming the second key's place (the first in file order) and path,
// which says where n is ("mcpServers.files"), extended as it goes down.
func checkUnique(file string, data []byte, n *node, path string) *Error {
	if first, second := n.repeated(); second != nil {
		// A repeat in n itself comes before any inside a later member's
		// value, but may come after one inside an earlier member's: look
		// there first, in file order.
		for i := range n.members {
			m := &n.members[i]
			if m == second {
				break
			}
			if err := checkUnique(file, data, m.val, path+"."+m.key); err != nil {
				return err
			}
		}
		return dupError(file, data, path, first, second)
	}
	for _, m := range n.members {
		if err := checkUnique(file, data, m.val, path+"."+m.key); err != nil {
			return err
		}
	}
	for i, e := range n.elems {
		if err := checkUnique(file, data, e, fmt.Sprintf("%s[%d]", path, i)); err != nil {
			return err
		}
	}
	return nil
}

// dupError says that second repeats first's key in the object at path, at
// second's place, and what to do about it. The path is made of keys of a
// file that may have come with a cloned project, so it is escaped for the
// terminal like the key (display.Printable).
func dupError(file string, data []byte, path string, first, second *member) *Error {
	line, col := lineCol(data, second.keyStart)
	firstLine, _ := lineCol(data, first.keyStart)
	where, _ := display.Printable(path)
	return &Error{File: file, Line: line, Col: col, Msg: fmt.Sprintf(
		"%q appears twice in %s (first at line %d); clients keep the last one, and bouncer won't guess which you meant: remove one of the two %q keys",
		second.key, where, firstLine, second.key)}
}

// Error is a problem with a config file: the one file-position error
// (package filepos), printed as "FILE:LINE:COL: problem". Line and Col are
// 1-based and 0 when the problem has no single place (an unreadable file).
type Error = filepos.Error

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
