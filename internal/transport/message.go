package transport

import (
	"context"
	"errors"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// This file is the message layer for a client side that is not a byte
// stream: bouncer listen's streamable HTTP sessions (internal/listen) take
// one message, or one batch, per POST, and read and write them as Conn
// does, so that an id is carried exactly and a result is encoded the same
// way on either side.

// DecodeMessage decodes one JSON-RPC message (not a batch) as Conn reads
// one: the go-sdk's decoding, with the id read exactly (ParseID). A
// message whose id can't pass unchanged is not returned: err is then a
// *RefusedError, and request says whether it was a request (its sender is
// owed an answer, with id null: the id can't be written back as it came)
// rather than a response (dropped). Any other error means the data is not
// a JSON-RPC message.
func DecodeMessage(data []byte) (m jsonrpc.Message, request bool, err error) {
	m, err = decodeMessage(data)
	var bad *badIDError
	if errors.As(err, &bad) {
		if bad.request {
			return nil, true, &RefusedError{"refused a request: " + bad.reason}
		}
		return nil, false, &RefusedError{"dropped a response: " + bad.reason}
	}
	return m, false, err
}

// EncodeMessage encodes m as Conn writes it (one line's worth, without the
// line end, and holding none: appendMessage).
func EncodeMessage(m jsonrpc.Message) ([]byte, error) { return appendMessage(nil, m) }

// relatedKey is the context key of WithRelated.
type relatedKey struct{}

// WithRelated marks a write to the client as being about the client's
// request id: the pump's own question about a call it holds, for example.
// A client side that has a stream per request (streamable HTTP, where the
// answer to a POST is a stream of its own) sends the message on that
// request's stream; a byte stream ignores it. The go-sdk's streamable
// server transport has the same idea behind an unexported key, which is
// why bouncer listen has a transport of its own (docs/listen.md).
func WithRelated(ctx context.Context, id jsonrpc.ID) context.Context {
	return context.WithValue(ctx, relatedKey{}, id)
}

// Related returns the client request a write is about (WithRelated).
func Related(ctx context.Context) (jsonrpc.ID, bool) {
	id, ok := ctx.Value(relatedKey{}).(jsonrpc.ID)
	return id, ok && id.IsValid()
}
