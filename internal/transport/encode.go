package transport

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// rawInline is the size from which encodeMessage writes a message's params
// or result itself instead of through encoding/json.
const rawInline = 4 << 10

// encodeMessage returns m as one line's worth of JSON (without the line
// end), byte for byte what jsonrpc.EncodeMessage writes for it, save for
// insignificant whitespace.
//
// jsonrpc.EncodeMessage runs a params or result (a json.RawMessage) through
// encoding/json's compaction, a byte-by-byte pass that, for a 1 MiB result,
// costs more than reading it did. That pass adds nothing here: every raw
// value the proxy holds was parsed whole already, by the reader that took
// it off the wire (segmentio's parser, as strict as encoding/json but for
// UTF-8, which compaction does not check either) or made by encoding/json
// or the engine's encoder. So a large one is written as it is, with only
// the envelope from encoding/json. A raw value holding a line end (the
// peer's pretty-printing; a string can't hold one unescaped) is compacted,
// since on stdio a line end ends the message.
func encodeMessage(m jsonrpc.Message) ([]byte, error) { return encodeFrom(m, rawInline) }

// encodeFrom is encodeMessage with the size from which a raw value is
// written as it is (tests take every size).
func encodeFrom(m jsonrpc.Message, inline int) ([]byte, error) {
	switch m := m.(type) {
	case *jsonrpc.Response:
		if m.Error == nil && len(m.Result) > 0 && len(m.Result) >= inline {
			c := *m
			c.Result = nil
			return splice(&c, "result", m.Result)
		}
	case *jsonrpc.Request:
		if len(m.Params) > 0 && len(m.Params) >= inline {
			c := *m
			c.Params = nil
			return splice(&c, "params", m.Params)
		}
	}
	return jsonrpc.EncodeMessage(m)
}

// splice encodes m (whose params or result is left out) and adds raw under
// key as its last member, where encoding/json would have put it: both come
// after jsonrpc, id and method, and an error (which a spliced response
// never has) is the only member after them.
func splice(m jsonrpc.Message, key string, raw json.RawMessage) ([]byte, error) {
	head, err := jsonrpc.EncodeMessage(m)
	if err != nil {
		return nil, err
	}
	if len(head) < 2 || head[len(head)-1] != '}' {
		return nil, fmt.Errorf("marshaling jsonrpc message: unexpected envelope %q", head)
	}
	out := make([]byte, 0, len(head)+len(key)+len(raw)+8)
	out = append(out, head[:len(head)-1]...)
	if len(head) > 2 {
		out = append(out, ',')
	}
	out = append(out, '"')
	out = append(out, key...)
	out = append(out, '"', ':')
	if bytes.IndexByte(raw, '\n') >= 0 || bytes.IndexByte(raw, '\r') >= 0 {
		var buf bytes.Buffer
		if err := json.Compact(&buf, raw); err != nil {
			return nil, fmt.Errorf("marshaling jsonrpc message: %w", err)
		}
		raw = buf.Bytes()
	}
	out = append(out, raw...)
	out = append(out, '}')
	return out, nil
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
