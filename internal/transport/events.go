package transport

import (
	"bufio"
	"bytes"
	"io"
	"strconv"
	"time"
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
