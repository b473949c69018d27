package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/bouncer-mcp/bouncer/internal/jsontext"
)

// Call is one tools/call: the tool's name and its arguments. Build it with
// ParseCall from the params as the client sent them; a Call built by hand
// (tests, tools) has its Args parsed by Decide with the same rules.
type Call struct {
	Tool string
	// Args is the arguments object as sent (null or absent is an empty
	// object), for a Call built by hand; ParseCall fills it only when it
	// refuses the call (see Arguments).
	Args json.RawMessage

	// meta and task are the params' "_meta" and "task" members, forwarded
	// as sent: the server reads them as protocol data, not as arguments.
	meta, task json.RawMessage
	// args is Args parsed by ParseCall (nil until then).
	args map[string]any
	// size is the length of the params as sent, to size buffers.
	size int
}

// CallError is a tools/call whose params are not well formed. Invalid is
// true when the params break the MCP schema itself (no tool name, arguments
// that are not an object): a server answers those with JSON-RPC error
// -32602, and so does the proxy. Otherwise the call is well formed JSON-RPC
// that Bouncer refuses to judge (keys a server may read differently), and it
// is answered as a blocked tool result.
type CallError struct {
	Invalid bool
	Msg     string
}

func (e *CallError) Error() string { return e.Msg }

// Names of the tools/call params members Bouncer knows. Any other member is
// dropped from what is forwarded: it was not judged.
const (
	paramName      = "name"
	paramArguments = "arguments"
	paramMeta      = "_meta"
	paramTask      = "task"
)

// ParseCall reads the params of a tools/call as every server will read them,
// or says why it can't. This is the one place that decides whether a call is
// well formed, for run, check and serve alike.
//
// Refused, because some server would read the call differently from the way
// Bouncer judges it:
//   - invalid UTF-8 anywhere;
//   - an object, at any depth, holding the same key twice, or two keys that
//     are equal under the case folding Go's encoding/json applies when it
//     matches keys to struct fields (FoldKey): JSON.parse keeps the last of
//     two equal keys, Go keeps the last of two folding ones, and Bouncer
//     would judge one of them;
//   - params or arguments that are not a JSON object, or trailing data.
//
// What is forwarded is not the bytes as sent but Decision.Forward: the
// params re-encoded from what was parsed here and judged by Decide.
//
// On error the Call holds, for the audit line only, the tool name and
// arguments as best they can be read; nothing built from it is judged or
// forwarded.
func ParseCall(params json.RawMessage) (Call, error) {
	c, err := parseCall(params)
	if err != nil {
		var raw struct {
			Name      any             `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		}
		if json.Unmarshal(params, &raw) == nil {
			c.Tool, _ = raw.Name.(string)
			c.Args = raw.Arguments
		}
		c.args = nil
	}
	return c, err
}

func parseCall(params json.RawMessage) (Call, error) {
	if !utf8.Valid(params) {
		return Call{}, &CallError{Msg: "the request is not valid UTF-8"}
	}
	v, err := decodeStrict(params)
	if err != nil {
		var ke *keyError
		if errors.As(err, &ke) {
			return Call{}, &CallError{Msg: ke.Error()}
		}
		return Call{}, &CallError{Invalid: true, Msg: "the params are not valid JSON: " + err.Error()}
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return Call{}, &CallError{Invalid: true, Msg: "the params are " + jsonKind(v) + ", not an object"}
	}
	var c Call
	name, ok := obj[paramName].(string)
	if !ok || name == "" {
		return Call{}, &CallError{Invalid: true, Msg: "the params have no tool name (\"name\" must be a non-empty string)"}
	}
	c.Tool = name
	switch a := obj[paramArguments].(type) {
	case nil:
		c.args = map[string]any{}
	case map[string]any:
		c.args = a
	default:
		return Call{Tool: name}, &CallError{Invalid: true, Msg: fmt.Sprintf("the arguments of %s are %s, not an object", quote(name), jsonKind(a))}
	}
	if m, ok := obj[paramMeta]; ok {
		c.meta, _ = marshal(m)
	}
	if t, ok := obj[paramTask]; ok {
		c.task, _ = marshal(t)
	}
	// The arguments are encoded once, when the call is decided
	// (Decision.Args); Arguments encodes them for a call refused before.
	c.size = len(params)
	return c, nil
}

// Arguments returns the arguments as JSON: as ParseCall read them
// (re-encoded), or Args as given for a Call built by hand or one ParseCall
// refused. The audit line of a call refused before it is judged records
// them; a judged call's line records Decision.Args.
func (c *Call) Arguments() json.RawMessage {
	if c.args != nil {
		if b, err := marshal(c.args); err == nil {
			return b
		}
	}
	return c.Args
}

// parsed returns the call's arguments, parsing Args if ParseCall did not.
func (c *Call) parsed() (map[string]any, error) {
	if c.args != nil {
		return c.args, nil
	}
	trimmed := bytes.TrimSpace(c.Args)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		return map[string]any{}, nil
	}
	if !utf8.Valid(trimmed) {
		return nil, errors.New("not valid UTF-8")
	}
	v, err := decodeStrict(trimmed)
	if err != nil {
		return nil, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("got %s", jsonKind(v))
	}
	return m, nil
}

// forward returns the params to send upstream: the members that were
// judged, re-encoded from the parsed (and, for paths, canonicalised)
// arguments.
func (c *Call) forward(args map[string]any) (fwdArgs, params json.RawMessage, err error) {
	// One buffer, sized for the params as they came: the arguments are
	// the bulk of a large call, and are encoded once, in place.
	buf := make([]byte, 0, c.size+64)
	buf = append(buf, `{"name":`...)
	buf = jsontext.AppendQuoted(buf, c.Tool)
	buf = append(buf, `,"arguments":`...)
	start := len(buf)
	if buf, err = encodeValue(buf, args); err != nil {
		return nil, nil, err
	}
	fwdArgs = buf[start:len(buf):len(buf)]
	if c.meta != nil {
		buf = append(buf, `,"_meta":`...)
		buf = append(buf, c.meta...)
	}
	if c.task != nil {
		buf = append(buf, `,"task":`...)
		buf = append(buf, c.task...)
	}
	buf = append(buf, '}')
	return fwdArgs, buf, nil
}

// marshal encodes a parsed value as compact JSON without HTML escaping, so
// that what is forwarded and audited reads as what was sent.
func marshal(v any) (json.RawMessage, error) {
	return encodeValue(nil, v)
}

// keyError is an object whose keys a server may read differently.
type keyError struct {
	path     string // where the object is ("arguments.to[0]"), empty at the top
	prev, at string // the two keys, as decoded
}

func (e *keyError) Error() string {
	where := ""
	if e.path != "" {
		where = " in " + e.path
	}
	if e.prev == e.at {
		return fmt.Sprintf("key %s appears twice in one object%s; servers disagree on which one counts", quote(e.at), where)
	}
	return fmt.Sprintf("keys %s and %s%s are the same key to a Go server (encoding/json matches keys ignoring case); send each key once, spelled as declared", quote(e.prev), quote(e.at), where)
}

// decodeStrict decodes one JSON value, keeping numbers as written, and
// refuses objects with keys that are equal or fold together (FoldKey).
// String escapes are decoded the way encoding/json decodes them (a lone
// surrogate becomes U+FFFD), and what is forwarded is re-encoded from the
// result, so every server reads the same characters Bouncer judged.
func decodeStrict(data []byte) (any, error) {
	return parseValue(data)
}

// DecodeStrict is how the engine reads JSON, for another reader of
// untrusted JSON whose meaning must not depend on the parser (a client's
// answer to Bouncer's question): objects are map[string]any whose keys
// are unique even under Go's case folding (two that fold together are an
// error, not the last one kept), numbers are json.Number as written.
func DecodeStrict(data []byte) (any, error) { return decodeStrict(data) }

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// FoldKey is jsontext.FoldKey: the form under which Go's encoding/json
// matches an object key to a struct field.
func FoldKey(k string) string { return jsontext.FoldKey(k) }

// aliasKey is how an argument name is compared with the names a tool
// declares: FoldKey, and also without '_' and '-', which the case-insensitive
// matching of Go's encoding/json/v2 ignores. A key that is not a declared
// name but aliases one is refused rather than guessed at.
func aliasKey(k string) string {
	f := FoldKey(k)
	if !strings.ContainsAny(f, "_-") {
		return f
	}
	return strings.NewReplacer("_", "", "-", "").Replace(f)
}
