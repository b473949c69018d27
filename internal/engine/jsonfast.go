package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/bouncer-mcp/bouncer/internal/jsontext"
)

// The call parser and its encoder. A tools/call's arguments can be
// megabytes (a file written through the filesystem server), and every byte
// is parsed, judged, re-encoded for the server and recorded for the audit
// log before the call goes on. encoding/json's Decoder.Token walks such a
// document several times over and allocates per token; this parser reads
// it once, with the same grammar, the same string decoding (a lone
// surrogate becomes U+FFFD) and the same key folding checks, and the
// encoder writes what encoding/json writes (keys sorted, no HTML escaping).
// FuzzFastJSON holds both to encoding/json.

// maxDepth is encoding/json's nesting limit.
const maxDepth = 10000

type parser struct {
	b     []byte
	i     int
	depth int
}

// parseValue decodes one JSON value from data, refusing objects with keys
// that are equal or fold together (FoldKey). data must be valid UTF-8.
func parseValue(data []byte) (any, error) {
	p := &parser{b: data}
	p.skip()
	v, err := p.value(nil)
	if err != nil {
		return nil, err
	}
	p.skip()
	if p.i != len(p.b) {
		return nil, fmt.Errorf("invalid character %s after top-level value", p.char())
	}
	return v, nil
}

func (p *parser) skip() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *parser) char() string {
	if p.i >= len(p.b) {
		return "end of input"
	}
	r, _ := utf8.DecodeRune(p.b[p.i:])
	return strconv.QuoteRune(r)
}

func (p *parser) errorf(format string, a ...any) error {
	return fmt.Errorf("offset %d: %s", p.i, fmt.Sprintf(format, a...))
}

// pathNode is where a value sits ("arguments.to[0]"), built only when an
// error names it, so deep documents cost no path strings.
type pathNode struct {
	parent *pathNode
	key    string
	index  int // for an array element; key is "" then
}

func (n *pathNode) String() string {
	if n == nil {
		return ""
	}
	var parts []string
	for ; n != nil; n = n.parent {
		if n.key != "" || n.index < 0 {
			parts = append(parts, "."+n.key)
		} else {
			parts = append(parts, "["+strconv.Itoa(n.index)+"]")
		}
	}
	var b strings.Builder
	for i := len(parts) - 1; i >= 0; i-- {
		b.WriteString(parts[i])
	}
	return strings.TrimPrefix(b.String(), ".")
}

func (p *parser) value(path *pathNode) (any, error) {
	if p.i >= len(p.b) {
		return nil, errors.New("unexpected end of JSON input")
	}
	switch c := p.b[p.i]; {
	case c == '{':
		return p.object(path)
	case c == '[':
		return p.array(path)
	case c == '"':
		return p.str()
	case c == '-' || '0' <= c && c <= '9':
		return p.number()
	case p.lit("true"):
		return true, nil
	case p.lit("false"):
		return false, nil
	case p.lit("null"):
		return nil, nil
	}
	return nil, p.errorf("invalid character %s looking for beginning of value", p.char())
}

func (p *parser) lit(word string) bool {
	if bytes.HasPrefix(p.b[p.i:], []byte(word)) {
		p.i += len(word)
		return true
	}
	return false
}

func (p *parser) enter() error {
	p.depth++
	if p.depth > maxDepth {
		return p.errorf("exceeded max depth")
	}
	return nil
}

// maxFewKeys is how many keys of an object the parser compares with each
// other one by one before it keys them by their fold.
const maxFewKeys = 8

func (p *parser) object(path *pathNode) (any, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer func() { p.depth-- }()
	p.i++ // {
	obj := map[string]any{}
	// The keys read so far, to refuse two a Go server would read as one:
	// compared a pair at a time (SameFold, which makes nothing) while
	// they are few, by their FoldKey in a map once they are many.
	var few [maxFewKeys]string
	keys := few[:0]
	var folded map[string]string
	p.skip()
	if p.i < len(p.b) && p.b[p.i] == '}' {
		p.i++
		return obj, nil
	}
	for {
		p.skip()
		if p.i >= len(p.b) || p.b[p.i] != '"' {
			return nil, p.errorf("invalid character %s looking for beginning of object key string", p.char())
		}
		k, err := p.str()
		if err != nil {
			return nil, err
		}
		if folded == nil {
			for _, prev := range keys {
				if jsontext.SameFold(prev, k) {
					return nil, &keyError{path: path.String(), prev: prev, at: k}
				}
			}
			if len(keys) < maxFewKeys {
				keys = append(keys, k)
			} else {
				folded = make(map[string]string, 2*maxFewKeys)
				for _, prev := range keys {
					folded[FoldKey(prev)] = prev
				}
			}
		}
		if folded != nil {
			f := FoldKey(k)
			if prev, ok := folded[f]; ok {
				return nil, &keyError{path: path.String(), prev: prev, at: k}
			}
			folded[f] = k
		}
		p.skip()
		if p.i >= len(p.b) || p.b[p.i] != ':' {
			return nil, p.errorf("invalid character %s after object key", p.char())
		}
		p.i++
		p.skip()
		v, err := p.value(&pathNode{parent: path, key: k, index: -1})
		if err != nil {
			return nil, err
		}
		obj[k] = v
		p.skip()
		if p.i >= len(p.b) {
			return nil, errors.New("unexpected end of JSON input")
		}
		switch p.b[p.i] {
		case ',':
			p.i++
		case '}':
			p.i++
			return obj, nil
		default:
			return nil, p.errorf("invalid character %s after object key:value pair", p.char())
		}
	}
}

func (p *parser) array(path *pathNode) (any, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer func() { p.depth-- }()
	p.i++ // [
	arr := []any{}
	p.skip()
	if p.i < len(p.b) && p.b[p.i] == ']' {
		p.i++
		return arr, nil
	}
	for n := 0; ; n++ {
		p.skip()
		v, err := p.value(&pathNode{parent: path, index: n})
		if err != nil {
			return nil, err
		}
		arr = append(arr, v)
		p.skip()
		if p.i >= len(p.b) {
			return nil, errors.New("unexpected end of JSON input")
		}
		switch p.b[p.i] {
		case ',':
			p.i++
		case ']':
			p.i++
			return arr, nil
		default:
			return nil, p.errorf("invalid character %s after array element", p.char())
		}
	}
}

// str reads a string at p.i (on its opening quote) and decodes it as
// encoding/json does.
func (p *parser) str() (string, error) {
	p.i++ // "
	start := p.i
	// First pass: find the closing quote and check the string whole, so
	// that the second one can size its buffer (an escape never decodes to
	// more bytes than it takes) and can't fail. Errors are the ones
	// encoding/json gives, at the first offending byte.
	i, escapes := start, false
	for {
		i += plainRun(p.b[i:])
		if i >= len(p.b) {
			return "", errors.New("unexpected end of JSON input")
		}
		c := p.b[i]
		if c == '"' {
			break
		}
		if c < 0x20 {
			p.i = i
			return "", p.errorf("invalid character %s in string literal", p.char())
		}
		// A backslash.
		escapes = true
		if i+1 >= len(p.b) {
			return "", errors.New("unexpected end of JSON input")
		}
		switch p.b[i+1] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			i += 2
		case 'u':
			p.i = i + 2
			if _, ok := p.hex4(); !ok {
				return "", p.errorf("invalid \\u escape in string literal")
			}
			i += 6
		default:
			p.i = i + 1
			return "", p.errorf("invalid character %s in string escape code", p.char())
		}
	}
	end := i
	p.i = end + 1
	if !escapes {
		return string(p.b[start:end]), nil
	}
	var out strings.Builder
	out.Grow(end - start)
	for i = start; i < end; {
		if n := plainRun(p.b[i:end]); n > 0 {
			out.Write(p.b[i : i+n])
			i += n
			continue
		}
		e := p.b[i+1] // p.b[i] is a backslash: the first pass saw to it
		i += 2
		switch e {
		case '"', '\\', '/':
			out.WriteByte(e)
		case 'b':
			out.WriteByte('\b')
		case 'f':
			out.WriteByte('\f')
		case 'n':
			out.WriteByte('\n')
		case 'r':
			out.WriteByte('\r')
		case 't':
			out.WriteByte('\t')
		case 'u':
			// The first pass checked the digits.
			r, n, _ := jsontext.UEscape(p.b[i-2 : end])
			i += n - 2
			if utf16.IsSurrogate(r) {
				r = utf8.RuneError // a lone surrogate, as encoding/json reads it
			}
			out.WriteRune(r)
		}
	}
	return out.String(), nil
}

// plainRun returns how many bytes at the start of b need no decoding in a
// JSON string: up to the first '"', backslash or control byte.
func plainRun(b []byte) int { return jsontext.RunOf(b, false) }

func (p *parser) hex4() (rune, bool) {
	r, ok := jsontext.Hex4(p.b[p.i:])
	if ok {
		p.i += 4
	}
	return r, ok
}

// number reads a number with JSON's grammar, kept as written.
func (p *parser) number() (any, error) {
	start := p.i
	if p.b[p.i] == '-' {
		p.i++
	}
	digits := func() int {
		n := 0
		for p.i < len(p.b) && '0' <= p.b[p.i] && p.b[p.i] <= '9' {
			p.i++
			n++
		}
		return n
	}
	if p.i < len(p.b) && p.b[p.i] == '0' {
		p.i++
	} else if digits() == 0 {
		return nil, p.errorf("invalid character %s in numeric literal", p.char())
	}
	if p.i < len(p.b) && p.b[p.i] == '.' {
		p.i++
		if digits() == 0 {
			return nil, p.errorf("invalid character %s after decimal point in numeric literal", p.char())
		}
	}
	if p.i < len(p.b) && (p.b[p.i] == 'e' || p.b[p.i] == 'E') {
		p.i++
		if p.i < len(p.b) && (p.b[p.i] == '+' || p.b[p.i] == '-') {
			p.i++
		}
		if digits() == 0 {
			return nil, p.errorf("invalid character %s in exponent of numeric literal", p.char())
		}
	}
	return json.Number(p.b[start:p.i]), nil
}

// encodeValue writes v (a value parseValue returns, or one built of the
// same types) as encoding/json's Encoder with SetEscapeHTML(false) writes
// it, without the trailing newline: object keys sorted, strings escaped
// only where JSON requires (and U+2028, U+2029, invalid UTF-8 as \ufffd).
func encodeValue(buf []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(buf, "null"...), nil
	case bool:
		if x {
			return append(buf, "true"...), nil
		}
		return append(buf, "false"...), nil
	case string:
		return jsontext.AppendQuoted(buf, x), nil
	case json.Number:
		if !validNumber(string(x)) {
			return nil, fmt.Errorf("invalid number literal %q", string(x))
		}
		return append(buf, x...), nil
	case []any:
		buf = append(buf, '[')
		for i, el := range x {
			if i > 0 {
				buf = append(buf, ',')
			}
			var err error
			if buf, err = encodeValue(buf, el); err != nil {
				return nil, err
			}
		}
		return append(buf, ']'), nil
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		buf = append(buf, '{')
		for i, k := range keys {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = jsontext.AppendQuoted(buf, k)
			buf = append(buf, ':')
			var err error
			if buf, err = encodeValue(buf, x[k]); err != nil {
				return nil, err
			}
		}
		return append(buf, '}'), nil
	}
	// Any other type (not produced by the parser): encoding/json's way.
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(buf, b...), nil
}

func validNumber(s string) bool {
	p := &parser{b: []byte(s)}
	if len(s) == 0 {
		return false
	}
	if _, err := p.number(); err != nil {
		return false
	}
	return p.i == len(s)
}
