package proxy

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Upstream is the server end of a session. The pump needs the same of a
// stdio child process (*Process) and of a remote server over HTTP
// (*Remote): messages in and out, unchanged; a way to say the client is
// done while the server's last words are still read; and, when the server
// goes, why.
type Upstream interface {
	// Read returns the next message from the server. It is called from
	// one goroutine. io.EOF means the server ended its side in order;
	// an error wrapping ErrUpstreamOutput means it sent something that is
	// not an MCP message; an *EndedError says why the server is gone
	// (the session expired, the server went away); a *RefusedError is a
	// message refused on the way, and reading goes on.
	Read(context.Context) (jsonrpc.Message, error)
	// Write sends one message. It must not wait for the server to answer:
	// the pump writes from its read loop, and a slow call must not hold up
	// the next message, or the cancellation of that call.
	Write(context.Context, jsonrpc.Message) error
	// CloseWrite tells the server the client is done. What the server
	// still sends can be read until Read ends.
	CloseWrite() error
	// Close ends the connection; Read then returns an error.
	Close() error
}

// EndedError is an Upstream's way to say why it is gone, when that is not
// the plain end of its output. Why is written to the client in the answer
// to every request still waiting, and to stderr, so it says what happened
// and what the user can do.
type EndedError struct {
	Why string
	Err error
}

func (e *EndedError) Error() string { return e.Why }
func (e *EndedError) Unwrap() error { return e.Err }

var (
	_ Upstream = (*Process)(nil)
	_ Upstream = (*Remote)(nil)
)
