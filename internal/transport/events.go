package transport

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// event is one server-sent event.
type event struct {
	name  string
	id    string
	data  []byte
	retry time.Duration
}

// eventScanner reads server-sent events (the WHATWG event-stream format)
// from a stream: fields up to a blank line make an event; data lines are
// joined with line feeds; comments and unknown fields are skipped. An event
// has no size limit, as a stdio message has none.
type eventScanner struct {
	r *bufio.Reader
}

// newEventScanner reads r with bufio's default buffer (4 KiB): a session's
// event stream holds it for as long as the session lasts, mostly idle
// (bouncer listen holds one per session), and line reads a longer line in
// pieces.
func newEventScanner(r io.Reader) *eventScanner {
	return &eventScanner{r: bufio.NewReader(r)}
}

// newAnswerScanner reads a POST's event stream (answerBuffer).
func newAnswerScanner(r io.Reader) *eventScanner {
	return &eventScanner{r: bufio.NewReaderSize(r, answerBuffer)}
}

// answerBuffer is the read buffer of a POST's event stream, which lives
// only as long as its call and may carry a large answer: read in pieces
// of this size rather than 4 KiB, a 1 MiB answer takes 16 reads, not 256.
const answerBuffer = 64 << 10

// streamPos is where a reader of an event stream is: whether any event
// came, the id of the last one that had one (to resume after), and the
// delay the server asked for before a new try.
type streamPos struct {
	got    bool
	lastID string
	retry  time.Duration
}

// messages reads events until the stream ends, passing each message on
// them to deliver, which says whether to go on; pos follows the events.
// A message whose id can't pass unchanged is not passed (dropped says
// why); one that is not JSON-RPC ends the reading with its error.
func (s *eventScanner) messages(pos *streamPos, dropped func(reason string), deliver func(jsonrpc.Message) bool) error {
	for {
		ev, ok := s.next()
		if !ok {
			return nil
		}
		pos.got = true
		if ev.id != "" {
			pos.lastID = ev.id
		}
		if ev.retry > 0 {
			pos.retry = ev.retry
		}
		if len(ev.data) == 0 || (ev.name != "" && ev.name != "message") {
			continue // a priming event, or not a message
		}
		m, err := decodeMessage(ev.data)
		var bad *badIDError
		if errors.As(err, &bad) {
			dropped(bad.reason)
			continue
		}
		if err != nil {
			return err
		}
		if !deliver(m) {
			return nil
		}
	}
}

// next returns the next event; false when the stream ended (an event cut
// off by the end is dropped, as the format says).
func (s *eventScanner) next() (event, bool) {
	var ev event
	var data []byte // the first data line as it came (line returns a slice of its own); joined to the next ones if there are more
	hasData, any := false, false
	for {
		line, err := s.line()
		if err != nil {
			return event{}, false
		}
		if len(line) == 0 {
			if !any {
				continue
			}
			if hasData {
				ev.data = data
			}
			return ev, true
		}
		any = true
		if line[0] == ':' {
			continue // a comment
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "event":
			ev.name = string(value)
		case "data":
			if hasData {
				data = append(append(data, '\n'), value...)
			} else {
				data = value
			}
			hasData = true
		case "id":
			if bytes.IndexByte(value, 0) < 0 {
				ev.id = string(value)
			}
		case "retry":
			if n, err := strconv.ParseUint(string(value), 10, 32); err == nil {
				ev.retry = time.Duration(n) * time.Millisecond
			}
		}
	}
}

// line reads one line without its end (LF or CR LF).
func (s *eventScanner) line() ([]byte, error) {
	var out []byte
	for {
		chunk, err := s.r.ReadSlice('\n')
		out = append(out, chunk...)
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil && len(out) == 0 {
			return nil, err
		}
		if err != nil && err != io.EOF {
			return nil, err
		}
		if err == io.EOF {
			return nil, err // a line cut off by the end
		}
		break
	}
	out = bytes.TrimSuffix(out, []byte("\n"))
	out = bytes.TrimSuffix(out, []byte("\r"))
	return out, nil
}
