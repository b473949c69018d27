package transport

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/bouncer-mcp/bouncer/internal/jsontext"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// decodeWire reads a JSON-RPC message's members as parseJSON reads them
// into a wireMessage (the go-sdk's parser, case-sensitive names, the last
// of a repeated member winning, raw values as slices of data), without
// that parser's reflection and its byte-by-byte walk through every string
// that holds an escape: a 64 KiB result of text spent most of its read in
// it. The members' values are checked as the parser checks them, so what
// is forwarded is exactly one JSON value each; FuzzDecodeWireAgrees holds
// the two to the same reading. The rare forms (a name or a version with
// an escape, the error object) are handed to parseJSON itself.
//
// It is stricter in one way: a value nested deeper than maxDepth is
// refused, as the stdio reader refuses its frame.
func decodeWire(data []byte) (wireMessage, error) {
	var w wireMessage // not addressed: it stays on the stack
	i := skipSpace(data, 0)
	if i == len(data) || data[i] != '{' {
		return w, errors.New("a JSON-RPC message must be a JSON object")
	}
	var errs []json.RawMessage // every "error" member, in order
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		i++
	} else {
		for {
			if i == len(data) || data[i] != '"' {
				return w, syntaxAt(data, i, "a member name")
			}
			end, err := skipString(data, i)
			if err != nil {
				return w, err
			}
			name := data[i:end]
			i = skipSpace(data, end)
			if i == len(data) || data[i] != ':' {
				return w, syntaxAt(data, i, "':' after a member name")
			}
			i = skipSpace(data, i+1)
			start := i
			if i, err = skipValue(data, i); err != nil {
				return w, err
			}
			value := data[start:i]
			field, err := memberOf(name)
			if err != nil {
				return w, err
			}
			switch field {
			case "jsonrpc":
				if w.VersionTag, err = versionOf(value, w.VersionTag); err != nil {
					return w, err
				}
			case "id":
				w.ID = json.RawMessage(value)
			case "method":
				w.Method = json.RawMessage(value)
			case "params":
				w.Params = json.RawMessage(value)
			case "result":
				w.Result = json.RawMessage(value)
			case "error":
				errs = append(errs, json.RawMessage(value))
			}
			i = skipSpace(data, i)
			if i < len(data) && data[i] == ',' {
				i = skipSpace(data, i+1)
				continue
			}
			if i < len(data) && data[i] == '}' {
				i++
				break
			}
			return w, syntaxAt(data, i, "',' or '}' after a member")
		}
	}
	if rest := bytes.TrimSpace(data[i:]); len(rest) > 0 {
		// What parseJSON lets follow the value (bytes.TrimSpace's
		// spaces, \f and \v among them); none of it is forwarded.
		return w, fmt.Errorf("invalid character %q after top-level value", rest[0])
	}
	if errs != nil {
		var err error
		if w.Error, err = errorOf(errs); err != nil {
			return w, err
		}
	}
	return w, nil
}

// errorOf reads the "error" members' values as the parser reads them into
// one *jsonrpc.Error: it fills the same pointer again for each, a later
// object's members over an earlier one's, null clearing it.
func errorOf(values []json.RawMessage) (*jsonrpc.Error, error) {
	var e *jsonrpc.Error
	for _, v := range values {
		if err := parseJSON(v, &e); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// memberOf is the wireMessage member a quoted name stands for ("" for
// none). Names are matched exactly, after their escapes are read.
func memberOf(quoted []byte) (string, error) {
	inner := quoted[1 : len(quoted)-1]
	if bytes.IndexByte(inner, '\\') >= 0 {
		return escapedMember(quoted)
	}
	switch string(inner) {
	case "jsonrpc":
		return "jsonrpc", nil
	case "id":
		return "id", nil
	case "method":
		return "method", nil
	case "params":
		return "params", nil
	case "result":
		return "result", nil
	case "error":
		return "error", nil
	}
	return "", nil
}

// escapedMember is memberOf for a name with an escape, read by the parser.
func escapedMember(quoted []byte) (string, error) {
	var name string
	if err := parseJSON(quoted, &name); err != nil {
		return "", err
	}
	switch name {
	case "jsonrpc", "id", "method", "params", "result", "error":
		return name, nil
	}
	return "", nil
}

// versionOf reads the "jsonrpc" member's value as the parser reads it
// into a string that holds prev: null leaves prev, anything but a string
// or null is an error.
func versionOf(value []byte, prev string) (string, error) {
	if string(value) == `"2.0"` {
		return "2.0", nil
	}
	if n := len(value); n >= 2 && value[0] == '"' && jsontext.RunOf(value[1:n-1], true) == n-2 {
		return string(value[1 : n-1]), nil
	}
	return escapedVersion(value, prev)
}

// escapedVersion is versionOf for any other value, read by the parser.
func escapedVersion(value []byte, prev string) (string, error) {
	v := prev
	err := parseJSON(value, &v)
	return v, err
}

// skipSpace is the index of the first byte at or after i that is not JSON
// whitespace.
func skipSpace(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// syntaxAt is the error for input that does not go on as JSON must at i.
func syntaxAt(b []byte, i int, want string) error {
	if i >= len(b) {
		return fmt.Errorf("unexpected end of JSON input, looking for %s", want)
	}
	return fmt.Errorf("invalid character %q at offset %d, looking for %s", b[i], i, want)
}

// skipValue checks the JSON value starting at b[i] and returns the index
// just past it. It walks arrays and objects with a stack of its own, not
// recursion, and refuses nesting deeper than maxDepth.
func skipValue(b []byte, i int) (int, error) {
	var stack []byte // the open containers, '[' or '{'
	var err error
	for {
		// A value.
		if i >= len(b) {
			return i, syntaxAt(b, i, "a value")
		}
		switch c := b[i]; c {
		case '{', '[':
			if len(stack) == maxDepth {
				return i, fmt.Errorf("json: exceeded maximum nesting depth of %d", maxDepth)
			}
			stack = append(stack, c)
			i = skipSpace(b, i+1)
			if i < len(b) && b[i] == c+2 { // '}' is '{'+2, ']' is '['+2
				stack = stack[:len(stack)-1]
				i++
				break
			}
			if c == '{' {
				if i, err = skipName(b, i); err != nil {
					return i, err
				}
			}
			continue
		case '"':
			if i, err = skipString(b, i); err != nil {
				return i, err
			}
		case 't':
			if i, err = skipLiteral(b, i, "true"); err != nil {
				return i, err
			}
		case 'f':
			if i, err = skipLiteral(b, i, "false"); err != nil {
				return i, err
			}
		case 'n':
			if i, err = skipLiteral(b, i, "null"); err != nil {
				return i, err
			}
		default:
			if i, err = skipNumber(b, i); err != nil {
				return i, err
			}
		}
		// After a value: the end of what holds it, or the next member.
		for {
			if len(stack) == 0 {
				return i, nil
			}
			i = skipSpace(b, i)
			if i == len(b) {
				return i, syntaxAt(b, i, "',' or the end of an array or object")
			}
			top := stack[len(stack)-1]
			if b[i] == top+2 {
				stack = stack[:len(stack)-1]
				i++
				continue
			}
			if b[i] != ',' {
				return i, syntaxAt(b, i, "',' or the end of an array or object")
			}
			i = skipSpace(b, i+1)
			if top == '{' {
				if i, err = skipName(b, i); err != nil {
					return i, err
				}
			}
			break
		}
	}
}

// skipName checks a member's name and its colon at b[i] and returns the
// index of its value.
func skipName(b []byte, i int) (int, error) {
	if i >= len(b) || b[i] != '"' {
		return i, syntaxAt(b, i, "a member name")
	}
	i, err := skipString(b, i)
	if err != nil {
		return i, err
	}
	i = skipSpace(b, i)
	if i >= len(b) || b[i] != ':' {
		return i, syntaxAt(b, i, "':' after a member name")
	}
	return skipSpace(b, i+1), nil
}

// skipLiteral checks that lit (true, false or null) is written at b[i].
func skipLiteral(b []byte, i int, lit string) (int, error) {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return i, syntaxAt(b, i, lit)
	}
	return i + len(lit), nil
}

// skipNumber checks the number at b[i] (RFC 8259's grammar) and returns
// the index just past it.
func skipNumber(b []byte, i int) (int, error) {
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = skipDigits(b, i)
	default:
		return i, syntaxAt(b, i, "a value")
	}
	if i < len(b) && b[i] == '.' {
		j := skipDigits(b, i+1)
		if j == i+1 {
			return j, syntaxAt(b, j, "a digit after '.'")
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := skipDigits(b, i)
		if j == i {
			return j, syntaxAt(b, j, "a digit in an exponent")
		}
		i = j
	}
	return i, nil
}

func skipDigits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}

// skipString checks the string at b[i] (a quote) and returns the index
// just past its closing quote. A string's inside is any byte from 0x20 up
// (UTF-8 is not checked, as the parser does not) and escapes of the form
// \" \\ \/ \b \f \n \r \t \uXXXX. The run up to the next byte that
// matters is found as the engine's parser finds it (jsontext.RunOf).
func skipString(b []byte, i int) (int, error) {
	i++
	for {
		i += jsontext.RunOf(b[i:], false) // to the first byte that matters
		if i >= len(b) {
			return i, errors.New("unexpected end of JSON input, inside a string")
		}
		switch c := b[i]; {
		case c == '"':
			return i + 1, nil
		case c == '\\':
			if i+1 >= len(b) {
				return i, errors.New("unexpected end of JSON input, inside a string")
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if _, ok := jsontext.Hex4(b[i+2:]); !ok {
					return i, fmt.Errorf("invalid \\u escape at offset %d", i)
				}
				i += 6
			default:
				return i, fmt.Errorf("invalid escape %q at offset %d", b[i+1], i)
			}
		case c < 0x20:
			return i, fmt.Errorf("invalid control character %#x in a string at offset %d", c, i)
		default:
			i++
		}
	}
}
