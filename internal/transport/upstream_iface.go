package transport

import (
	"context"
	"encoding/json"
	"errors"

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

// ErrUpstreamOutput is what an Upstream's Read wraps (the parse error
// with it) when the server sent something meant as a JSON-RPC message that
// is not one (a stdio server's log lines are passed over: see Start). The
// session can't go on, since the stream can't be trusted to be in step.
var ErrUpstreamOutput = errors.New("the upstream server wrote something that is not an MCP message on its stdout")

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

// IDPrefix starts every request id Bouncer itself sends on a session: the
// pump's own requests (its tools/list pages, its elicitation/create) and
// Remote's on a session it starts in place of a lost one. The pump refuses
// a peer's request whose id starts with it, so an answer to one of
// Bouncer's requests can never be taken for an answer to a peer's.
const IDPrefix = "bouncer-"

// MaxListPages bounds how many tools/list pages are followed, by the pump
// when it pins and by Remote when it starts a new session; a server that
// keeps handing out cursors pins nothing.
const MaxListPages = 1000

// Resumer is an Upstream that can start a new session in place of one the
// server forgot, without the client noticing: a remote server that
// restarted answers 404 for the old session's id, and the MCP spec has the
// client start a new session with a new initialize. Bouncer does that for
// the client, once per loss; the pump gives it its side (SetRepinner),
// without which it starts none (the session ends, as it would without
// this).
type Resumer interface {
	SetRepinner(Repinner)
}

// Repinner is the pump's side of a new upstream session: the pin and the
// audit log are the pump's, so what was judged on the old session is
// judged again there, never here. The transport calls it holding none of
// its locks.
type Repinner interface {
	// Repin takes the new session's whole tool list before anything the
	// client sent is sent on that session, and returns how it differs
	// from the pinned list (nil: it is that list exactly). What differs
	// is refused from then on, as after a list_changed.
	Repin(tools []json.RawMessage) []string
	// Carry judges a tools/call that was judged on the lost session and
	// never ran there, before it goes to the new one; differs is what
	// Repin returned, where the server's URL. It writes the call's second
	// audit line and returns "" if the call may go: only if the tool list
	// is the pinned one exactly (or in observe mode, which refuses
	// nothing) and the line was written. Otherwise it returns why not.
	Carry(req *jsonrpc.Request, where string, differs []string) (refused string)
	// RefuseCarried answers a call Carry refused, with the reason it gave.
	RefuseCarried(req *jsonrpc.Request, reason string)
	// Unsent records that such a call is not sent at all, for why (the
	// session ended); the pump answers it with the session's reason.
	Unsent(req *jsonrpc.Request, why string)
}

var (
	_ Upstream = (*Process)(nil)
	_ Upstream = (*Remote)(nil)
	_ Resumer  = (*Remote)(nil)
)
