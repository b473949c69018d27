package proxy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sjson "github.com/segmentio/encoding/json"
)

// maxDepth is the deepest nesting a frame may have, the go-sdk's limit.
const maxDepth = 1000

// Conn is one side of the pump: newline-delimited JSON-RPC over a byte
// stream, read and written exactly as the go-sdk's stdio transport does
// (the same framing rules, message decoding and batch handling), but without
// its reader goroutine and the three parses and 32 KiB decoder buffers it
// spends on every message, which dominated the proxy's CPU and garbage on a
// small call. Read must not be called concurrently with itself; Write may
// be.
type Conn struct {
	r      *bufio.Reader
	w      io.Writer
	closer []io.Closer

	queue []jsonrpc.Message // the rest of the last batch read

	writeMu sync.Mutex

	// batches maps the calls of a batch read from this side to the batch,
	// so that their answers go back as one array (JSON-RPC 2.0, 2025-03-26).
	batchMu sync.Mutex
	batches map[jsonrpc.ID]*msgBatch

	closeOnce sync.Once
	closeErr  error
}

type msgBatch struct {
	unresolved map[jsonrpc.ID]int
	responses  []*jsonrpc.Response
}

// NewConn returns a Conn reading r and writing w; Close closes r and w if
// they are closers.
func NewConn(r io.Reader, w io.Writer) *Conn {
	c := &Conn{r: bufio.NewReaderSize(r, 64<<10), w: w}
	if rc, ok := r.(io.Closer); ok {
		c.closer = append(c.closer, rc)
	}
	if wc, ok := w.(io.Closer); ok {
		c.closer = append(c.closer, wc)
	}
	return c
}

// SessionID is empty: stdio has no sessions.
func (c *Conn) SessionID() string { return "" }

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

// Read returns the next message. Any error ends the stream: a peer that sent
// something that is not JSON-RPC is not read further.
func (c *Conn) Read(ctx context.Context) (jsonrpc.Message, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(c.queue) > 0 {
		m := c.queue[0]
		c.queue = c.queue[1:]
		return m, nil
	}
	frame, err := c.readFrame()
	if err != nil {
		return nil, err
	}
	if frame[0] != '[' {
		return decodeMessage(frame)
	}
	var raws []json.RawMessage
	if err := parseJSON(frame, &raws); err != nil {
		return nil, fmt.Errorf("unmarshaling jsonrpc batch: %w", err)
	}
	if len(raws) == 0 {
		return nil, errors.New("empty batch")
	}
	msgs := make([]jsonrpc.Message, len(raws))
	var b *msgBatch
	for i, raw := range raws {
		m, err := decodeMessage(raw)
		if err != nil {
			return nil, err
		}
		msgs[i] = m
		if req, ok := m.(*jsonrpc.Request); ok && req.IsCall() {
			if b == nil {
				b = &msgBatch{unresolved: map[jsonrpc.ID]int{}}
			}
			if _, dup := b.unresolved[req.ID]; dup {
				return nil, fmt.Errorf("duplicate message ID %v in a batch", req.ID.Raw())
			}
			b.unresolved[req.ID] = len(b.responses)
			b.responses = append(b.responses, nil)
		}
	}
	if b != nil {
		if err := c.addBatch(b); err != nil {
			return nil, err
		}
	}
	c.queue = msgs[1:]
	return msgs[0], nil
}

// Write sends one message, or, for the last answer owed to a batch, the
// batch's answers as one array.
func (c *Conn) Write(ctx context.Context, m jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	var data []byte
	if resp, ok := m.(*jsonrpc.Response); ok {
		if batch, inBatch := c.completeBatch(resp); inBatch {
			if batch == nil {
				return nil // more answers are owed to this batch
			}
			data = append(data, '[')
			for i, r := range batch {
				enc, err := jsonrpc.EncodeMessage(r)
				if err != nil {
					return fmt.Errorf("encoding batch message: %w", err)
				}
				if i > 0 {
					data = append(data, ',')
				}
				data = append(data, enc...)
			}
			data = append(data, ']', '\n')
			_, err := c.w.Write(data)
			return err
		}
	}
	data, err := jsonrpc.EncodeMessage(m)
	if err != nil {
		return fmt.Errorf("marshaling message: %w", err)
	}
	data = append(data, '\n')
	_, err = c.w.Write(data)
	return err
}

// addBatch records the calls of a batch just read, so that their answers
// can be gathered; a call whose ID is still owed an answer is refused.
func (c *Conn) addBatch(b *msgBatch) error {
	c.batchMu.Lock()
	defer c.batchMu.Unlock()
	for id := range b.unresolved {
		if _, seen := c.batches[id]; seen {
			return fmt.Errorf("invalid request: batch contains previously seen request %v", id.Raw())
		}
	}
	if c.batches == nil {
		c.batches = map[jsonrpc.ID]*msgBatch{}
	}
	for id := range b.unresolved {
		c.batches[id] = b
	}
	return nil
}

// completeBatch records resp in the batch its call came in, if any. It
// reports whether resp belongs to a batch, and returns the batch's answers
// once the last one is in.
func (c *Conn) completeBatch(resp *jsonrpc.Response) ([]*jsonrpc.Response, bool) {
	c.batchMu.Lock()
	defer c.batchMu.Unlock()
	b, ok := c.batches[resp.ID]
	if !ok {
		return nil, false
	}
	b.responses[b.unresolved[resp.ID]] = resp
	delete(b.unresolved, resp.ID)
	delete(c.batches, resp.ID)
	if len(b.unresolved) > 0 {
		return nil, true
	}
	return b.responses, true
}

// readFrame returns the next JSON value on the stream, as a fresh slice.
// Like the go-sdk's reader, whitespace between values is skipped, a value may
// span lines, and a value must be followed by a line end, not more data on
// the same line. It also enforces the nesting limit while it scans.
func (c *Conn) readFrame() ([]byte, error) {
	// Skip whitespace (blank lines, a \r left by a CRLF line end).
	for {
		b, err := c.r.ReadByte()
		if err != nil {
			return nil, err // io.EOF: the peer is done
		}
		if b != ' ' && b != '\t' && b != '\r' && b != '\n' {
			_ = c.r.UnreadByte()
			break
		}
	}
	var (
		frame []byte
		sc    scanner
	)
	for {
		if c.r.Buffered() == 0 {
			if _, err := c.r.Peek(1); err != nil {
				if errors.Is(err, io.EOF) {
					if sc.scalar {
						return frame, nil // a bare scalar ends the stream
					}
					return nil, io.ErrUnexpectedEOF
				}
				return nil, err
			}
		}
		buf, _ := c.r.Peek(c.r.Buffered())
		end, done, err := sc.feed(buf)
		if err != nil {
			return nil, err
		}
		frame = append(frame, buf[:end]...)
		_, _ = c.r.Discard(end)
		if !done {
			continue
		}
		// What follows the value (as far as it has arrived) must end the
		// line; the line end itself is skipped by the next read.
		if c.r.Buffered() > 0 {
			next, _ := c.r.Peek(1)
			if next[0] != '\n' && next[0] != '\r' {
				return nil, errors.New("invalid trailing data at the end of stream")
			}
		}
		return frame, nil
	}
}

// scanner finds where a JSON value ends, byte by byte, across chunks.
type scanner struct {
	started  bool
	scalar   bool // the value is not an object or array
	depth    int
	inString bool
	escaped  bool
}

// feed scans chunk. It returns the index just past the value's end and true
// once the value is complete.
func (s *scanner) feed(chunk []byte) (int, bool, error) {
	for i, b := range chunk {
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
				return 0, false, fmt.Errorf("json: exceeded maximum nesting depth of %d", maxDepth)
			}
		case '}', ']':
			s.depth--
			if s.depth == 0 {
				return i + 1, true, nil
			}
		}
	}
	return len(chunk), false, nil
}

// wireMessage is a JSON-RPC message as the go-sdk decodes it.
type wireMessage struct {
	VersionTag string          `json:"jsonrpc"`
	ID         any             `json:"id,omitempty"`
	Method     json.RawMessage `json:"method"`
	Params     json.RawMessage `json:"params,omitempty"`
	Result     json.RawMessage `json:"result,omitempty"`
	Error      *jsonrpc.Error  `json:"error,omitempty"`
}

// parseJSON decodes data into v with the parser and settings the go-sdk
// uses (case-sensitive field names), called directly.
func parseJSON(data []byte, v any) error {
	rest, err := sjson.Parse(data, v, sjson.DontMatchCaseInsensitiveStructFields)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(rest)) > 0 {
		return fmt.Errorf("invalid character %q after top-level value", rest[0])
	}
	return nil
}

// decodeMessage is jsonrpc.DecodeMessage without its per-message decoder.
func decodeMessage(data []byte) (jsonrpc.Message, error) {
	var w wireMessage
	if err := parseJSON(data, &w); err != nil {
		return nil, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
	}
	if w.VersionTag != "2.0" {
		return nil, fmt.Errorf("invalid message version tag %q; expected %q", w.VersionTag, "2.0")
	}
	id, err := jsonrpc.MakeID(w.ID)
	if err != nil {
		return nil, err
	}
	if len(w.Method) > 0 {
		var method string
		if err := parseJSON(w.Method, &method); err != nil {
			return nil, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
		}
		return &jsonrpc.Request{ID: id, Method: method, Params: w.Params}, nil
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

// Stdio returns the Conn to the client on the process's stdin and stdout.
// Closing it closes stdin only: stdout stays open for whatever is still
// written after the session, as with the go-sdk's stdio transport.
func Stdio() *Conn { return NewConn(os.Stdin, writerOnly{os.Stdout}) }

// writerOnly hides a writer's Close.
type writerOnly struct{ io.Writer }
