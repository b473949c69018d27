package transport

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/bouncer-mcp/bouncer/internal/jsontext"
)

// rawInline is the size from which appendMessage writes a message's params
// or result as they are, without compacting them.
const rawInline = 4 << 10

// appendMessage appends m as one line's worth of JSON (without the line
// end) to buf: byte for byte what jsonrpc.EncodeMessage writes for it,
// save for insignificant whitespace in a params or result of rawInline
// bytes or more.
//
// The envelope is written here, by hand: jsonrpc.EncodeMessage's trip
// through encoding/json's reflection and its buffers cost more than the
// rest of a small message's way through the pump. Its fields, their order
// and their omissions are jsonrpc's (FuzzEncodeMessage holds the two
// together). A params or result (a json.RawMessage) is not parsed again:
// every raw value the proxy holds was parsed whole already, by the reader
// that took it off the wire (segmentio's parser, as strict as
// encoding/json but for UTF-8, which compaction does not check either) or
// made by encoding/json or the engine's encoder. A small one is compacted,
// as jsonrpc.EncodeMessage compacts it; a large one is written as it is,
// unless it holds a line end (the peer's pretty-printing; a string can't
// hold one unescaped), since on stdio a line end ends the message.
func appendMessage(buf []byte, m jsonrpc.Message) ([]byte, error) {
	return appendFrom(buf, m, rawInline)
}

// appendFrom is appendMessage with the size from which a raw value is
// written as it is (tests take every size).
func appendFrom(buf []byte, m jsonrpc.Message, inline int) ([]byte, error) {
	start := len(buf)
	buf = append(buf, `{"jsonrpc":"2.0"`...)
	switch m := m.(type) {
	case *jsonrpc.Request:
		buf = appendID(buf, m.ID)
		if m.Method != "" {
			buf = append(buf, `,"method":`...)
			buf = jsontext.AppendQuoted(buf, m.Method)
		}
		if len(m.Params) > 0 {
			buf = append(buf, `,"params":`...)
			buf = appendRaw(buf, m.Params, inline)
		}
	case *jsonrpc.Response:
		buf = appendID(buf, m.ID)
		if len(m.Result) > 0 {
			buf = append(buf, `,"result":`...)
			buf = appendRaw(buf, m.Result, inline)
		}
		if m.Error != nil {
			e, ok := m.Error.(*jsonrpc.Error)
			if !ok {
				return appendEncoded(buf[:start], m)
			}
			buf = append(buf, `,"error":{"code":`...)
			buf = strconv.AppendInt(buf, e.Code, 10)
			buf = append(buf, `,"message":`...)
			buf = jsontext.AppendQuoted(buf, e.Message)
			if len(e.Data) > 0 {
				buf = append(buf, `,"data":`...)
				buf = appendRaw(buf, e.Data, inline)
			}
			buf = append(buf, '}')
		}
	default:
		return appendEncoded(buf[:start], m)
	}
	return append(buf, '}'), nil
}

// appendEncoded appends what jsonrpc.EncodeMessage writes for m: for what
// appendFrom does not write itself (an error of another type than
// jsonrpc.Error, which the pump never makes).
func appendEncoded(buf []byte, m jsonrpc.Message) ([]byte, error) {
	b, err := jsonrpc.EncodeMessage(m)
	if err != nil {
		return buf, err
	}
	return append(buf, b...), nil
}

// appendID appends the id member, if the message has an id.
func appendID(buf []byte, id jsonrpc.ID) []byte {
	if !id.IsValid() {
		return buf
	}
	return AppendID(append(buf, `,"id":`...), id)
}

// appendRaw appends a raw JSON value: compacted when it is smaller than
// inline or holds a line end, as it is otherwise.
func appendRaw(buf []byte, raw json.RawMessage, inline int) []byte {
	if rawAsIs(raw, inline) {
		return append(buf, raw...)
	}
	return appendCompact(buf, raw)
}

// rawAsIs reports whether appendRaw writes raw as it is.
func rawAsIs(raw json.RawMessage, inline int) bool {
	return len(raw) >= inline && !hasLineEnd(raw)
}

// EncodeResponse is EncodeMessage for an answer, in parts to be written
// one after the other: a result written as it is (rawInline bytes or more) is a part of its
// own, not copied into the message, so that a large answer goes out from
// the buffer it was read into. The parts joined are EncodeMessage's bytes.
func EncodeResponse(r *jsonrpc.Response) ([][]byte, error) {
	if r.Error != nil || !rawAsIs(r.Result, rawInline) {
		data, err := EncodeMessage(r)
		return [][]byte{data}, err
	}
	head := appendID(append(make([]byte, 0, 64), `{"jsonrpc":"2.0"`...), r.ID)
	return [][]byte{append(head, `,"result":`...), r.Result, []byte("}")}, nil
}

// hasLineEnd reports whether b holds '\n' or '\r' (two vectorized
// searches: b is a large value).
func hasLineEnd(b []byte) bool {
	return bytes.IndexByte(b, '\n') >= 0 || bytes.IndexByte(b, '\r') >= 0
}

// appendCompact appends the valid JSON text src without its insignificant
// whitespace, which is all json.Compact changes in a valid text. Strings
// are skipped whole, to their closing quote.
func appendCompact(dst, src []byte) []byte {
	done := 0 // src[:done] is in dst
	for i := 0; i < len(src); i++ {
		switch src[i] {
		case '"':
			for i++; i < len(src); i++ {
				i += jsontext.RunOf(src[i:], false)
				if i >= len(src) || src[i] == '"' {
					break
				}
				if src[i] == '\\' {
					i++ // the escaped byte
				}
			}
		case ' ', '\t', '\n', '\r':
			dst = append(dst, src[done:i]...)
			done = i + 1
		}
	}
	return append(dst, src[done:]...)
}

// SetField returns the JSON object doc with key set to value; other members
// are kept as they were. The pump clamps and raises a protocolVersion with
// it, and Remote sets the one a new session starts at.
func SetField(doc json.RawMessage, key string, value any) (json.RawMessage, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(doc, &obj); err != nil {
		return nil, err
	}
	v, err := json.Marshal(value)
	if err != nil {
		return nil, err
	}
	obj[key] = v
	return json.Marshal(obj)
}
