package transport

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sjson "github.com/segmentio/encoding/json"

	"github.com/bouncer-mcp/bouncer/internal/jsontext"
)

// maxDepth is the deepest nesting a frame may have, the go-sdk's limit.
const maxDepth = 1000

// Conn is one side of the pump: newline-delimited JSON-RPC over a byte
// stream, read and written as the go-sdk's stdio transport does (the same
// framing rules and message decoding), but without its reader goroutine and
// the three parses and 32 KiB decoder buffers it spends on every message,
// which dominated the proxy's CPU and garbage on a small call. Read must not
// be called concurrently with itself; Write may be.
//
// Where the go-sdk's transport would lose track of a request, Conn keeps a
// ledger instead: every request read from the peer is owed exactly one
// answer. A request whose id can't be carried exactly, or is still owed an
// answer, is refused and answered by Conn itself (see Read); a response
// that answers nothing owed is not written (see Write); and the answers to a
// batch go back as one array once every request in it is answered
// (JSON-RPC 2.0, MCP 2025-03-26).
type Conn struct {
	r      *frameReader
	w      io.Writer
	closer []io.Closer

	// noise, when set, makes the stream line-framed and tolerant of lines
	// that are not JSON-RPC (see TolerateNoise); it gets each such line.
	noise func(line []byte, size int)

	queue []jsonrpc.Message // the rest of the last batch read

	// idle, if set, runs in Read's goroutine whenever Read is about to
	// wait for more of the peer's bytes (see OnIdle).
	idle func()

	// inPipe is the file read, until it is grown for a large message
	// (pipeSize); used by Read's goroutine only.
	inPipe *os.File

	// lent holds the frames of large answers Read returned, and those
	// given back to be read into again (GiveBack).
	lent lender

	// The write side. Messages are encoded into out; one goroutine at a
	// time (writing) hands out to the peer in one write(2), and messages
	// that other goroutines add meanwhile, or while the Conn is corked,
	// go out together in the next one. holds are the places in out past
	// which nothing may be written yet (WriteHeld). werr, once a write
	// failed, fails every later Write. drained is signalled after each
	// write(2), for a writer waiting for out to shrink. All guarded by
	// writeMu.
	writeMu sync.Mutex
	out     []byte
	holds   []hold
	spare   []byte // the last buffer written, reused for out
	writing bool
	corks   int
	werr    error
	drained *sync.Cond
	outPipe *os.File // the file written, until it is grown (pipeSize)

	// owed holds every request read from this side that has not been
	// answered yet, with the batch it came in (nil when it came alone).
	owedMu sync.Mutex
	owed   map[jsonrpc.ID]*msgBatch

	closeOnce sync.Once
	closeErr  error
}

// msgBatch gathers the answers to one batch's requests, in the batch's
// order.
type msgBatch struct {
	slot      map[jsonrpc.ID]int // unanswered request → its place in responses
	responses []*jsonrpc.Response
	ready     []<-chan struct{} // what the held answers among them wait for (WriteHeld)
}

// hold is a place in Conn.out: the byte at is written only once ready is
// closed.
type hold struct {
	at    int
	ready <-chan struct{}
}

// RefusedError is what Read returns for a message it refused. Conn has
// already answered it if it was a request (a JSON-RPC -32600 error); the
// stream is still good, and Read may be called again.
type RefusedError struct{ Reason string }

func (e *RefusedError) Error() string { return e.Reason }

// NewConn returns a Conn reading r and writing w; Close closes r and w if
// they are closers.
func NewConn(r io.Reader, w io.Writer) *Conn {
	c := &Conn{w: w, owed: map[jsonrpc.ID]*msgBatch{}, inPipe: pipeOf(r), outPipe: pipeOf(w)}
	c.r = newFrameReader(idleReader{r, c})
	c.drained = sync.NewCond(&c.writeMu)
	if rc, ok := r.(io.Closer); ok {
		c.closer = append(c.closer, rc)
	}
	if wc, ok := w.(io.Closer); ok {
		c.closer = append(c.closer, wc)
	}
	return c
}

// maxNoiseShown is how much of a noise line is kept for its report.
const maxNoiseShown = 512

// TolerateNoise makes c read the stream as the MCP stdio transport frames
// it, one message a line, and pass every line that is not a JSON-RPC
// message to report instead of ending the stream: the first maxNoiseShown
// bytes of it (without its line end) and its full size. A server that
// prints a log line on stdout works with the clients (they read lines and
// skip what does not parse), so it must work through Bouncer too; the line
// is never a message, so it is never passed on.
//
// A line is a message if it is a JSON object with a "jsonrpc" member, or a
// JSON array holding one or none (a batch). Anything else is noise: text,
// a JSON scalar, invalid JSON, a JSON object without "jsonrpc" (a
// structured log line), a value followed by more text on its line, or one
// the line ends inside of. A message that is malformed in another way (a
// wrong version, a response without an id) ends the stream as it does
// without this, and one whose id is refused is refused: only what is
// surely not meant as a message is passed over.
//
// Call it before the first Read.
func (c *Conn) TolerateNoise(report func(line []byte, size int)) { c.noise = report }

// SessionID is empty: stdio has no sessions.
func (c *Conn) SessionID() string { return "" }

// OnIdle makes fn run in Read's goroutine whenever Read has used up what
// the peer sent and is about to wait for more: the moment a reader that
// gathered work from the messages already read (the pump's audit lines,
// its corked writes) must finish it, since nothing more may come for a
// while. Call it before the first Read.
func (c *Conn) OnIdle(fn func()) { c.idle = fn }

// idleReader calls the Conn's idle function before each read of the
// peer's stream: the Conn reads the stream only when its buffer is used
// up.
type idleReader struct {
	r io.Reader
	c *Conn
}

func (r idleReader) Read(p []byte) (int, error) {
	if r.c.idle != nil {
		r.c.idle()
	}
	return r.r.Read(p)
}

// Cork holds the messages written from now on until as many Uncorks as
// Corks: they then go to the peer in one write(2). A reader of the other
// side corks this one while it has messages in hand, so that their
// answers and forwards leave together (the pump's coalesced writes). A
// Write while corked returns at once: it neither waits for the peer nor
// can fail but for an earlier write's error.
func (c *Conn) Cork() {
	c.writeMu.Lock()
	c.corks++
	c.writeMu.Unlock()
}

// Uncork undoes a Cork; the last one writes what the corks held.
func (c *Conn) Uncork() {
	c.writeMu.Lock()
	if c.corks--; c.corks > 0 || c.writing {
		// Still corked, or the goroutine writing takes what is queued.
		c.writeMu.Unlock()
		return
	}
	_ = c.flushLocked()
}

// maxQueued is how much may queue behind a write(2) in progress before a
// Write waits for it: a peer that stops reading holds up its writers, as
// a plain write would, rather than growing out without bound.
const maxQueued = 4 << 20

// queueLocked ends a message (or a batch's array) appended to c.out, and
// writes c.out unless the Conn is corked or another goroutine is writing
// (which then writes this too). The caller holds writeMu; queueLocked
// releases it.
func (c *Conn) queueLocked() error {
	c.out = append(c.out, '\n')
	if c.corks > 0 {
		err := c.werr
		c.writeMu.Unlock()
		return err
	}
	if c.writing {
		for c.writing && len(c.out) > maxQueued && c.werr == nil {
			c.drained.Wait()
		}
		err := c.werr
		c.writeMu.Unlock()
		return err
	}
	return c.flushLocked()
}

// flushLocked writes c.out, and whatever other goroutines add to it
// meanwhile, until it is empty or the Conn is corked. The caller holds
// writeMu; flushLocked releases it.
func (c *Conn) flushLocked() error {
	for len(c.out) > 0 && c.corks == 0 && c.werr == nil {
		buf, holds := c.out, c.holds
		c.out, c.spare, c.holds = c.spare[:0], nil, nil
		if c.outPipe != nil && len(buf) > smallPipe {
			growOnce(c.outPipe)
			c.outPipe = nil
		}
		c.writing = true
		c.writeMu.Unlock()
		err := writeHolding(c.w, buf, holds)
		c.writeMu.Lock()
		c.writing = false
		if err != nil {
			c.werr = err
			c.out, c.holds = c.out[:0], nil
		}
		if cap(buf) <= maxKept {
			c.spare = buf[:0]
		}
		c.drained.Broadcast()
	}
	err := c.werr
	c.writeMu.Unlock()
	return err
}

// writeHolding writes buf to w, stopping before each hold's byte until
// its ready channel is closed (a hold already ready stops nothing): the
// peer reads everything before it meanwhile. Messages queued behind a
// hold wait with it, so they keep their order.
func writeHolding(w io.Writer, buf []byte, holds []hold) error {
	done := 0
	for _, h := range holds {
		select {
		case <-h.ready:
			// Already recorded: nothing to stop for, and one write(2)
			// fewer (a result the store had seen is recorded in a few
			// microseconds, before its write comes).
			continue
		default:
		}
		if err := writeFull(w, buf[done:h.at]); err != nil {
			return err
		}
		done = h.at
		<-h.ready
	}
	return writeFull(w, buf[done:])
}

func writeFull(w io.Writer, b []byte) error {
	if len(b) == 0 {
		return nil
	}
	n, err := w.Write(b)
	if err == nil && n < len(b) {
		err = io.ErrShortWrite
	}
	return err
}

// maxKept is the largest write buffer kept for reuse; one that grew past
// it (a large result) is left to the garbage collector.
const maxKept = 256 << 10

// Close closes the underlying streams.
func (c *Conn) Close() error {
	c.closeOnce.Do(func() {
		for _, cl := range c.closer {
			if err := cl.Close(); err != nil && c.closeErr == nil {
				c.closeErr = err
			}
		}
	})
	return c.closeErr
}

// Read returns the next message.
//
// Some messages are refused rather than passed on, because passing them
// would rewrite them or leave a request with no answer or two. Conn answers
// a refused request itself with -32600 Invalid Request and returns a
// *RefusedError; reading may go on. Refused are:
//
//   - a request whose id the go-sdk's jsonrpc.ID can't hold exactly (see
//     ParseID: 1.5, 1e3, 1.0, -0, integers beyond ±(2^53-1), null, true,
//     strings that are not valid UTF-8); its answer has id null, since the
//     id can't be written back as it came. A response with such an id
//     answers nothing that was passed on, so it is dropped, unanswered;
//   - a request whose id is still owed an answer (by a request alone or in
//     an open batch), answered with id null: an answer carrying the id would
//     be taken for the earlier request's;
//   - an empty batch (one answer, id null, as JSON-RPC 2.0 says);
//   - a batch holding any of the above, or the same request id twice. A
//     batch is taken or refused whole: each of its requests gets its -32600
//     error, in one array, with its own id where that id is unambiguous and
//     null where it is not; nothing in it is passed on.
//
// Any other error ends the stream: a peer that sent something that is not
// JSON-RPC is not read further. (With TolerateNoise, a line not meant as a
// message at all is reported and skipped instead.)
func (c *Conn) Read(ctx context.Context) (jsonrpc.Message, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(c.queue) > 0 {
		m := c.queue[0]
		c.queue = c.queue[1:]
		return m, nil
	}
	for {
		frame, err := c.readFrame()
		if err != nil {
			return nil, err
		}
		m, err := c.readMessage(frame)
		if err != nil && c.noise != nil && !isRefused(err) && !jsonrpcShaped(frame) {
			// Not meant as a message (TolerateNoise): reported, and
			// reading goes on with the next line.
			c.dropFrame(frame)
			continue
		}
		if r, ok := m.(*jsonrpc.Response); ok && err == nil && len(frame) >= lendMin && len(frame) <= maxKeptRead && frame[0] == '{' && r.Error == nil {
			c.lent.lend(r, frame)
		}
		return m, err
	}
}

// isRefused reports whether err is Read's refusal of one message, which
// leaves the stream good.
func isRefused(err error) bool {
	var r *RefusedError
	return errors.As(err, &r)
}

// jsonrpcShaped reports whether a frame is meant as a JSON-RPC message: a
// JSON object with a "jsonrpc" member, or an array of values at least one
// of which is one (or none: an empty batch). It is asked only of a frame
// that failed to decode, so it costs nothing on the way of a message.
func jsonrpcShaped(frame []byte) bool {
	var obj struct {
		Version json.RawMessage `json:"jsonrpc"`
	}
	if frame[0] == '{' {
		return parseJSON(frame, &obj) == nil && obj.Version != nil
	}
	var batch []json.RawMessage
	if parseJSON(frame, &batch) != nil {
		return false
	}
	for _, m := range batch {
		obj.Version = nil
		if len(m) > 0 && m[0] == '{' && parseJSON(m, &obj) == nil && obj.Version != nil {
			return true
		}
	}
	return len(batch) == 0
}

// readMessage decodes a frame, registers its requests in the ledger and
// returns its (first) message, or refuses it (see Read).
func (c *Conn) readMessage(frame []byte) (jsonrpc.Message, error) {
	if frame[0] == '[' {
		return c.readBatch(frame)
	}
	m, err := decodeMessage(frame)
	if err != nil {
		var bad *badIDError
		if errors.As(err, &bad) {
			if bad.request {
				c.refuse(false, []refusal{{reason: bad.reason}})
				return nil, &RefusedError{"refused a request: " + bad.reason}
			}
			return nil, &RefusedError{"dropped a response: " + bad.reason}
		}
		return nil, err
	}
	if req, ok := m.(*jsonrpc.Request); ok && req.IsCall() {
		c.owedMu.Lock()
		_, dup := c.owed[req.ID]
		if !dup {
			c.owed[req.ID] = nil
		}
		c.owedMu.Unlock()
		if dup {
			reason := stillOwed(req.ID)
			c.refuse(false, []refusal{{reason: reason}})
			return nil, &RefusedError{"refused a request: " + reason}
		}
	}
	return m, nil
}

// readBatch splits a batch, registers its requests in the ledger and
// returns its first message, or refuses it whole (see Read).
func (c *Conn) readBatch(frame []byte) (jsonrpc.Message, error) {
	var raws []json.RawMessage
	if err := parseJSON(frame, &raws); err != nil {
		return nil, fmt.Errorf("unmarshaling jsonrpc batch: %w", err)
	}
	if len(raws) == 0 {
		const reason = "the batch is empty"
		c.refuse(false, []refusal{{reason: reason}})
		return nil, &RefusedError{"refused a batch: " + reason}
	}
	msgs := make([]jsonrpc.Message, len(raws))
	// The batch's requests, in order; ok is false for one that is refused
	// for its own sake (why says why).
	type member struct {
		id  jsonrpc.ID
		ok  bool
		why string
	}
	var calls []member
	why := "" // why the batch is refused, if it is
	for i, raw := range raws {
		m, err := decodeMessage(raw)
		var bad *badIDError
		if errors.As(err, &bad) {
			if why == "" {
				why = bad.reason
			}
			if bad.request {
				calls = append(calls, member{why: bad.reason})
			}
			continue
		}
		if err != nil {
			return nil, err
		}
		msgs[i] = m
		if req, ok := m.(*jsonrpc.Request); ok && req.IsCall() {
			calls = append(calls, member{id: req.ID, ok: true})
		}
	}
	count := map[jsonrpc.ID]int{}
	for _, m := range calls {
		if m.ok {
			count[m.id]++
		}
	}
	c.owedMu.Lock()
	for i := range calls {
		m := &calls[i]
		if !m.ok {
			continue
		}
		if n := count[m.id]; n > 1 {
			m.ok, m.why = false, fmt.Sprintf("request id %s appears %d times in the batch", IDText(m.id), n)
		} else if _, owed := c.owed[m.id]; owed {
			m.ok, m.why = false, stillOwed(m.id)
		}
		if !m.ok && why == "" {
			why = m.why
		}
	}
	if why == "" {
		if len(calls) > 0 {
			b := &msgBatch{slot: map[jsonrpc.ID]int{}, responses: make([]*jsonrpc.Response, len(calls))}
			for i, m := range calls {
				b.slot[m.id] = i
				c.owed[m.id] = b
			}
		}
		c.owedMu.Unlock()
		c.queue = msgs[1:]
		return msgs[0], nil
	}
	c.owedMu.Unlock()
	if len(calls) > 0 {
		rs := make([]refusal, len(calls))
		for i, m := range calls {
			if m.ok {
				rs[i] = refusal{id: m.id, reason: "its batch was refused: " + why}
			} else {
				rs[i] = refusal{reason: m.why}
			}
		}
		c.refuse(true, rs)
	}
	return nil, &RefusedError{"refused a batch: " + why}
}

// stillOwed is the reason a request reusing an id in use is refused.
func stillOwed(id jsonrpc.ID) string {
	return fmt.Sprintf("request id %s is still awaiting its answer; an id can't be used again until then", IDText(id))
}

// refusal is one -32600 answer Conn writes itself; a zero id is written as
// null.
type refusal struct {
	id     jsonrpc.ID
	reason string
}

// refuse writes refusals, as an array when they answer a batch. A failed
// write means the peer is gone, which the next Read will tell.
func (c *Conn) refuse(batch bool, rs []refusal) {
	type wireError struct {
		JSONRPC string         `json:"jsonrpc"`
		ID      any            `json:"id"` // no omitempty: null must be written
		Error   *jsonrpc.Error `json:"error"`
	}
	var data []byte
	for i, r := range rs {
		enc, err := json.Marshal(wireError{"2.0", r.id.Raw(), &jsonrpc.Error{
			Code:    jsonrpc.CodeInvalidRequest,
			Message: "bouncer: invalid request: " + r.reason,
		}})
		if err != nil {
			continue // can't happen: every field is plain data
		}
		if i > 0 {
			data = append(data, ',')
		}
		data = append(data, enc...)
	}
	if batch {
		data = append(append([]byte{'['}, data...), ']')
	}
	c.writeMu.Lock()
	c.out = append(c.out, data...)
	_ = c.queueLocked()
}

// Write sends one message. A response is written only if it answers a
// request read from this side that is still owed an answer; any other
// response (a second answer, or an answer to an id nobody used) is dropped
// with an error, so no request is ever answered twice. The last answer
// owed to a batch sends the batch's answers as one array; the ones before
// it are held until then.
//
// Messages leave in the order their Writes took the lock. A Write made
// while no other is under way writes at once; one made while another
// goroutine is in write(2), or while the Conn is corked, is queued and
// leaves with the next write, so that messages that pile up cost one
// system call, not one each. A queued Write returns before its bytes
// are written: a failure to write them is returned by the Writes that
// follow (the peer is gone, which its side's reader will see too). Either
// way m's bytes are copied: Write keeps none of them once it returns.
func (c *Conn) Write(ctx context.Context, m jsonrpc.Message) error {
	return c.write(ctx, m, nil)
}

// WriteHeld is Write, except that the last byte of the frame that carries
// m (its own, or its batch's array) leaves only once ready is closed. The
// peer reads the rest of the frame meanwhile, so a large result streams
// while the pump does what must be done before the client has it whole
// (record it as untrusted), and no parser can complete the message
// before then. What is written after it waits with it. ready must be
// closed eventually, whatever happens, or this side's writes stop.
func (c *Conn) WriteHeld(ctx context.Context, m jsonrpc.Message, ready <-chan struct{}) error {
	return c.write(ctx, m, ready)
}

func (c *Conn) write(ctx context.Context, m jsonrpc.Message, ready <-chan struct{}) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.writeMu.Lock()
	if c.werr != nil {
		// The peer is gone: nothing more is queued (and held) for it.
		err := c.werr
		c.writeMu.Unlock()
		return err
	}
	mark := len(c.out)
	if resp, ok := m.(*jsonrpc.Response); ok {
		batch, inBatch, err := c.settle(resp, ready)
		if err != nil {
			c.writeMu.Unlock()
			return err
		}
		if inBatch {
			if batch == nil {
				c.writeMu.Unlock()
				return nil // more answers are owed to this batch
			}
			c.out = append(c.out, '[')
			for i, r := range batch.responses {
				if i > 0 {
					c.out = append(c.out, ',')
				}
				if c.out, err = appendMessage(c.out, r); err != nil {
					c.out = c.out[:mark]
					c.writeMu.Unlock()
					return fmt.Errorf("encoding batch message: %w", err)
				}
			}
			c.out = append(c.out, ']')
			c.holdLocked(batch.ready...)
			return c.queueLocked()
		}
	}
	var err error
	if c.out, err = appendMessage(c.out, m); err != nil {
		c.out = c.out[:mark]
		c.writeMu.Unlock()
		return fmt.Errorf("marshaling message: %w", err)
	}
	c.holdLocked(ready)
	return c.queueLocked()
}

// holdLocked holds the frame just appended to c.out (its last byte) until
// every one of readies (a nil one holds nothing) is closed.
func (c *Conn) holdLocked(readies ...<-chan struct{}) {
	for _, r := range readies {
		if r != nil {
			c.holds = append(c.holds, hold{at: len(c.out) - 1, ready: r})
		}
	}
}

// settle takes resp's request off the ledger. It reports whether the
// request came in a batch, and returns the batch once its last answer is
// in (ready, if set, joins what the batch's frame waits for); an error
// means nothing is owed to resp's id.
func (c *Conn) settle(resp *jsonrpc.Response, ready <-chan struct{}) (*msgBatch, bool, error) {
	c.owedMu.Lock()
	defer c.owedMu.Unlock()
	b, owed := c.owed[resp.ID]
	if !owed {
		return nil, false, fmt.Errorf("no request with id %s is awaiting an answer, so this answer was dropped", IDText(resp.ID))
	}
	delete(c.owed, resp.ID)
	if b == nil {
		return nil, false, nil
	}
	// Kept until the batch's last answer is in, so a copy: a Write keeps
	// none of the bytes it was given once it returns (their frame may be
	// read into again, Conn.GiveBack).
	kept := *resp
	kept.Result = bytes.Clone(resp.Result)
	b.responses[b.slot[resp.ID]] = &kept
	delete(b.slot, resp.ID)
	if ready != nil {
		b.ready = append(b.ready, ready)
	}
	if len(b.slot) > 0 {
		return nil, true, nil
	}
	return b, true, nil
}

// InBatch reports whether id is a request read from this side that came in
// a batch still waiting for answers.
func (c *Conn) InBatch(id jsonrpc.ID) bool {
	c.owedMu.Lock()
	defer c.owedMu.Unlock()
	return c.owed[id] != nil
}

// Release takes a request that will get no answer off the ledger (MCP: a
// request the client cancelled is not answered), so its id may be used
// again. A request in a batch still waiting for answers is not released,
// since the batch goes back only when each of its requests is answered:
// Release reports true for it, and the caller must answer it.
func (c *Conn) Release(id jsonrpc.ID) (inBatch bool) {
	c.owedMu.Lock()
	defer c.owedMu.Unlock()
	b, owed := c.owed[id]
	if owed && b == nil {
		delete(c.owed, id)
	}
	return b != nil
}

// readFrame returns the next JSON value on the stream, as a fresh slice.
// Like the go-sdk's reader, whitespace between values is skipped, a value may
// span lines, and a value must be followed by a line end, not more data on
// the same line. It also enforces the nesting limit while it scans.
//
// With TolerateNoise, a value is one line, as the MCP stdio transport
// frames it: a line that can't be one (it starts with anything but '{' or
// '[', the line ends inside the value, more follows the value on its line,
// or it nests too deep) is reported and skipped here, and reading goes on.
func (c *Conn) readFrame() ([]byte, error) {
	for {
		frame, noise, read, err := c.scanFrame()
		if err != nil || !noise {
			return frame, err
		}
		if err := c.dropLine(frame, read); err != nil {
			return nil, err
		}
	}
}

// scanFrame is readFrame's scan of one value. With TolerateNoise, noise
// reports a line that is surely no message: read bytes of it are read,
// frame holds what is shown of them, and the rest of the line is still to
// be read.
func (c *Conn) scanFrame() (frame []byte, noise bool, read int, err error) {
	// Skip whitespace (blank lines, a \r left by a CRLF line end).
	for {
		b, err := c.r.ReadByte()
		if err != nil {
			return nil, false, 0, err // io.EOF: the peer is done
		}
		if b != ' ' && b != '\t' && b != '\r' && b != '\n' {
			c.r.Unread()
			if c.noise != nil && b != '{' && b != '[' {
				return nil, true, 0, nil
			}
			break
		}
	}
	var (
		// held is how much of the frame is scanned and in the reader's
		// buffer: the frame stays there until it is whole (the buffer
		// grows to hold it, up to maxKeptRead), and is copied out once.
		held int
		// parts are the pieces of a frame longer than maxKeptRead, size
		// their length: such a frame is gathered in pieces and joined
		// once, at its size.
		parts [][]byte
		size  int
		sc    = scanner{lines: c.noise != nil}
	)
	for {
		if c.r.Buffered() == held {
			if held == c.r.Size() {
				// The buffer is full of the frame.
				if c.inPipe != nil && held >= smallPipe {
					growOnce(c.inPipe)
					c.inPipe = nil
				}
				if held < maxKeptRead {
					c.r.grow()
				} else {
					piece, _ := c.r.Peek(held)
					parts = append(parts, bytes.Clone(piece))
					size += held
					c.r.Discard(held)
					held = 0
				}
			}
			// Read more, after what is held.
			if _, err := c.r.Peek(held + 1); err != nil {
				if errors.Is(err, io.EOF) {
					pending, _ := c.r.Peek(held)
					if sc.scalar {
						return join(append(parts, pending), size+held), false, 0, nil // a bare scalar ends the stream
					}
					if c.noise != nil {
						shown := shownOf(parts, pending)
						c.r.Discard(held)
						return shown, true, size + held, nil // the last line, cut short
					}
					return nil, false, 0, io.ErrUnexpectedEOF
				}
				return nil, false, 0, err
			}
		}
		buf, _ := c.r.Peek(c.r.Buffered())
		end, done, err := sc.feed(buf[held:])
		end += held
		if err != nil {
			if c.noise == nil {
				return nil, false, 0, err
			}
			// The line ends inside the value, or it nests too deep.
			frame = shownOf(parts, buf[:end])
			c.r.Discard(end)
			return frame, true, size + end, nil
		}
		if !done {
			held = end
			continue
		}
		if parts != nil {
			frame = join(append(parts, buf[:end]), size+end)
		} else if end >= lendMin {
			// Into a frame given back (GiveBack), if there is one.
			frame = append(c.lent.spare(end), buf[:end]...)
		} else {
			frame = append([]byte(nil), buf[:end]...)
		}
		c.r.Discard(end)
		if c.noise != nil {
			// The line must end after the value, as the clients' line
			// readers see it: spaces may come before its end, nothing
			// else. (That is waited for, as they wait for the line end.)
			var space []byte // what is shown of the spaces
			spaces := 0
			for {
				b, err := c.r.ReadByte()
				switch {
				case err != nil || b == '\n':
					return frame, false, 0, nil // an error is the next read's
				case b == ' ' || b == '\t' || b == '\r':
					if spaces++; len(space) < maxNoiseShown {
						space = append(space, b)
					}
					continue
				}
				c.r.Unread()
				return shownOf([][]byte{frame}, space), true, len(frame) + spaces, nil
			}
		}
		// What follows the value (as far as it has arrived) must end the
		// line; the line end itself is skipped by the next read.
		if c.r.Buffered() > 0 {
			next, _ := c.r.Peek(1)
			if next[0] != '\n' && next[0] != '\r' {
				return nil, false, 0, errors.New("invalid trailing data at the end of stream")
			}
		}
		return frame, false, 0, nil
	}
}

// shownOf is the start of a noise line read as parts and then last, as
// much as is shown of it.
func shownOf(parts [][]byte, last []byte) []byte {
	var shown []byte
	for _, p := range append(parts, last) {
		shown = append(shown, p[:min(len(p), maxNoiseShown-len(shown))]...)
	}
	return shown
}

// dropLine reads the rest of a noise line whose first size bytes are read
// (shown: as much of them as is shown), and reports the line. A line is
// not kept whole: only what is shown of it.
func (c *Conn) dropLine(shown []byte, size int) error {
	for {
		chunk, err := c.r.ReadSlice('\n')
		size += len(chunk)
		if room := maxNoiseShown - len(shown); room > 0 {
			shown = append(shown, chunk[:min(len(chunk), room)]...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		size -= lineEnd(chunk)
		c.reportNoise(shown, size)
		return nil // at EOF, the next read says so
	}
}

// dropFrame reports a frame read whole as noise. (With TolerateNoise a
// frame never holds a line end: the scan stops at one.)
func (c *Conn) dropFrame(frame []byte) {
	c.reportNoise(frame[:min(len(frame), maxNoiseShown)], len(frame))
}

// lineEnd is the length of the line end ("\n" or "\r\n") that b ends with.
func lineEnd(b []byte) int {
	switch {
	case bytes.HasSuffix(b, []byte("\r\n")):
		return 2
	case bytes.HasSuffix(b, []byte("\n")):
		return 1
	}
	return 0
}

// reportNoise hands a noise line to the report: what is shown of it,
// without its line end, and its size without it.
func (c *Conn) reportNoise(shown []byte, size int) {
	shown = shown[:min(len(shown), size)]
	c.noise(shown, size)
}

// join returns the pieces of a frame as one slice of the given size.
func join(parts [][]byte, size int) []byte {
	frame := make([]byte, 0, size)
	for _, p := range parts {
		frame = append(frame, p...)
	}
	return frame
}

// scanner finds where a JSON value ends, byte by byte, across chunks.
type scanner struct {
	started  bool
	scalar   bool // the value is not an object or array
	depth    int
	inString bool
	escaped  bool
	// lines makes a line end inside the value an error (errLineEnd): the
	// MCP stdio transport's values are one line each (TolerateNoise).
	lines bool
}

// errLineEnd is the scanner's error for a line that ends inside a value.
var errLineEnd = errors.New("the line ends inside a JSON value")

// feed scans chunk. It returns the index just past the value's end and true
// once the value is complete; on an error, the index it was found at.
func (s *scanner) feed(chunk []byte) (int, bool, error) {
	// quote is the index of the first '"' at or after the last place it
	// was looked for (len(chunk) if there is none), so that a string with
	// many escapes is searched for its quote once, not once per escape.
	quote := -1
	// nl is the index of chunk's first line end (len(chunk) if it has
	// none; -1 until it is looked for), for lines: a string that goes
	// past it ends the line inside the value.
	nl := -1
	for i := 0; i < len(chunk); i++ {
		b := chunk[i]
		if s.inString && !s.escaped {
			// Most of a large message is the inside of strings: jump to
			// the next quote or backslash, the only bytes that matter
			// there, with the vectorized search.
			if quote < i {
				quote = len(chunk)
				if q := bytes.IndexByte(chunk[i:], '"'); q >= 0 {
					quote = i + q
				}
			}
			if s.lines {
				if nl < 0 {
					nl = len(chunk)
					if n := bytes.IndexByte(chunk, '\n'); n >= 0 {
						nl = n
					}
				}
				if nl < quote {
					return nl, false, errLineEnd
				}
			}
			if e := bytes.IndexByte(chunk[i:quote], '\\'); e >= 0 {
				i += e
			} else if quote < len(chunk) {
				i = quote
			} else {
				return len(chunk), false, nil
			}
			b = chunk[i]
		}
		if !s.started {
			s.started = true
			if b != '{' && b != '[' {
				s.scalar = true
			}
		}
		if s.scalar {
			// A top-level scalar is no JSON-RPC message; let the decoder
			// say so. It ends at the line end.
			if b == '\n' || b == '\r' {
				return i, true, nil
			}
			continue
		}
		if s.inString {
			switch {
			case s.escaped:
				if s.lines && b == '\n' {
					return i, false, errLineEnd
				}
				s.escaped = false
			case b == '\\':
				s.escaped = true
			case b == '"':
				s.inString = false
			}
			continue
		}
		switch b {
		case '"':
			s.inString = true
		case '{', '[':
			s.depth++
			if s.depth > maxDepth {
				return i, false, fmt.Errorf("json: exceeded maximum nesting depth of %d", maxDepth)
			}
		case '}', ']':
			s.depth--
			if s.depth == 0 {
				return i + 1, true, nil
			}
		case '\n':
			if s.lines {
				return i, false, errLineEnd
			}
		}
	}
	return len(chunk), false, nil
}

// wireMessage is a JSON-RPC message as the go-sdk decodes it, except that
// the id is kept as written, to be read exactly by ParseID.
type wireMessage struct {
	VersionTag string          `json:"jsonrpc"`
	ID         json.RawMessage `json:"id,omitempty"`
	Method     json.RawMessage `json:"method"`
	Params     json.RawMessage `json:"params,omitempty"`
	Result     json.RawMessage `json:"result,omitempty"`
	Error      *jsonrpc.Error  `json:"error,omitempty"`
}

// parseJSON decodes data into v with the parser and settings the go-sdk
// uses (case-sensitive field names), called directly. A json.RawMessage in
// v (a params or result) is a slice of data, not a copy: every caller hands
// over a buffer of its own (a fresh frame, an event's data) and never
// writes to it again.
func parseJSON(data []byte, v any) error {
	rest, err := sjson.Parse(data, v, sjson.DontMatchCaseInsensitiveStructFields|sjson.DontCopyRawMessage)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(rest)) > 0 {
		return fmt.Errorf("invalid character %q after top-level value", rest[0])
	}
	return nil
}

// badIDError is decodeMessage's error for a message whose id ParseID
// refuses: the message is well formed, and is refused, not the stream.
type badIDError struct {
	request bool // it is a request (it has a method), not a response
	reason  string
}

func (e *badIDError) Error() string { return e.reason }

// decodeMessage is jsonrpc.DecodeMessage without its per-message decoder,
// and with exact ids: where DecodeMessage would rewrite the id (1.5 → 1),
// it returns a *badIDError instead.
func decodeMessage(data []byte) (jsonrpc.Message, error) {
	w, err := decodeWire(data)
	if err != nil {
		return nil, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
	}
	if w.VersionTag != "2.0" {
		return nil, fmt.Errorf("invalid message version tag %q; expected %q", w.VersionTag, "2.0")
	}
	id, idErr := ParseID(w.ID)
	if len(w.Method) > 0 {
		method, err := methodOf(w.Method)
		if err != nil {
			return nil, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
		}
		if method == "" {
			// The go-sdk reads a method key of "" (or null) as a request,
			// and writes a request without its method when it is "", which
			// a peer then reads as a response: what was judged a request
			// would arrive as an answer. No MCP method is empty.
			return nil, errors.New("unmarshaling jsonrpc message: the method is empty")
		}
		if idErr != nil {
			return nil, &badIDError{request: true, reason: idErr.Error()}
		}
		return &jsonrpc.Request{ID: id, Method: method, Params: w.Params}, nil
	}
	if idErr != nil {
		return nil, &badIDError{reason: idErr.Error()}
	}
	if !id.IsValid() {
		return nil, errors.New("JSON RPC invalid request: a response without an id")
	}
	resp := &jsonrpc.Response{ID: id, Result: w.Result}
	if w.Error != nil {
		resp.Error = w.Error
	}
	return resp, nil
}

// methodOf decodes a message's method (raw, as written, already parsed
// once with the message). A method of plain ASCII, as every MCP method is,
// is its own text; anything else is decoded by the parser.
func methodOf(raw json.RawMessage) (string, error) {
	if n := len(raw); n >= 2 && raw[0] == '"' && raw[n-1] == '"' {
		if inner := []byte(raw[1 : n-1]); jsontext.RunOf(inner, true) == len(inner) {
			return string(inner), nil
		}
	}
	var method string
	err := parseJSON(raw, &method)
	return method, err
}

// maxExactID is the largest integer id the go-sdk's jsonrpc.ID holds
// exactly: jsonrpc.MakeID takes a float64, and 2^53-1 is also the largest
// integer I-JSON (RFC 7493) and JavaScript peers keep exact.
const maxExactID = 1<<53 - 1

// ParseID reads a JSON-RPC id as written (raw; empty when there is none,
// which makes a request a notification). It accepts only ids that pass
// through unchanged: a string, or an integer written plainly
// (-?(0|[1-9][0-9]*), not -0) within ±maxExactID. Anything else is an
// error, because the go-sdk's jsonrpc.ID would hold it rewritten: 1.5, 1.0
// and 1e3 would become 1, 1 and 1000, -0 would become 0, 2^53+1 would
// become 2^53, and a null id would make a request a notification. MCP
// allows only strings and integers, and never null.
func ParseID(raw json.RawMessage) (jsonrpc.ID, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return jsonrpc.ID{}, nil
	}
	switch c := raw[0]; {
	case c == '"':
		if !exactString(raw) {
			return jsonrpc.ID{}, fmt.Errorf("the id %s is not valid UTF-8 (it would be rewritten)", raw)
		}
		var s string
		if err := parseJSON(raw, &s); err != nil {
			return jsonrpc.ID{}, fmt.Errorf("the id %s: %w", raw, err)
		}
		return jsonrpc.MakeID(s)
	case c == '-' || c >= '0' && c <= '9':
		if !plainInteger(raw) {
			return jsonrpc.ID{}, fmt.Errorf("the id %s is not an integer written plainly, and ids are passed on only unchanged", raw)
		}
		n, err := strconv.ParseInt(string(raw), 10, 64)
		if err != nil || n > maxExactID || n < -maxExactID {
			return jsonrpc.ID{}, fmt.Errorf("the id %s is beyond ±(2^53-1), the integers passed on unchanged", raw)
		}
		if n == 0 && c == '-' {
			return jsonrpc.ID{}, errors.New("the id -0 would be passed on as 0")
		}
		return jsonrpc.MakeID(float64(n))
	case c == 'n':
		return jsonrpc.ID{}, errors.New("the id is null; MCP ids are strings or integers")
	default:
		return jsonrpc.ID{}, fmt.Errorf("the id %s is not a string or an integer", raw)
	}
}

// plainInteger reports whether b is a JSON number with no fraction or
// exponent.
func plainInteger(b []byte) bool {
	if len(b) > 0 && b[0] == '-' {
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 1 && b[0] == '0' {
		return false
	}
	for _, d := range b {
		if d < '0' || d > '9' {
			return false
		}
	}
	return true
}

// exactString reports whether the JSON string literal b decodes to the
// text it spells: valid UTF-8, and no \u escape of half a surrogate pair.
// A decoder turns either into U+FFFD, so two different ids could become one.
func exactString(b []byte) bool {
	if !utf8.Valid(b) {
		return false
	}
	high := false // the last escape was a high surrogate
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' {
			if high {
				return false
			}
			continue
		}
		i++
		if i >= len(b) || b[i] != 'u' {
			if high {
				return false
			}
			continue
		}
		if i+4 >= len(b) {
			return false
		}
		v, err := strconv.ParseUint(string(b[i+1:i+5]), 16, 16)
		if err != nil {
			return false
		}
		i += 4
		switch {
		case v >= 0xD800 && v < 0xDC00:
			if high {
				return false
			}
			high = true
		case v >= 0xDC00 && v < 0xE000:
			if !high {
				return false
			}
			high = false
		default:
			if high {
				return false
			}
		}
	}
	return !high
}

// IDText is an id as JSON, for messages.
func IDText(id jsonrpc.ID) string { return string(AppendID(nil, id)) }

// AppendID appends id as JSON, as json.Marshal writes its value (null for
// no id): the one way the pump writes an id, on the wire and in an audit
// line.
func AppendID(buf []byte, id jsonrpc.ID) []byte {
	switch v := id.Raw().(type) {
	case int64:
		return strconv.AppendInt(buf, v, 10)
	case string:
		return jsontext.AppendQuoted(buf, v)
	}
	return append(buf, "null"...)
}

// Stdio returns the Conn to the client on the process's stdin and stdout.
// Closing it closes stdin only: stdout stays open for whatever is still
// written after the session, as with the go-sdk's stdio transport. Where
// they are pipes, they are grown as the server's are (see pipeSize).
func Stdio() *Conn { return NewConn(os.Stdin, writerOnly{os.Stdout}) }
