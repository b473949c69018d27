package serve

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"sync"
	"time"
)

// drainWait bounds how long the server waits, after stdin ends, for the
// answers to requests it has already read. The tools answer in
// milliseconds; the bound only matters if one hangs.
const drainWait = 30 * time.Second

// stdio is the server's stdin and stdout, arranged so that the end of stdin
// does not cut off answers: `printf '...requests...' | bouncer serve` gets
// a response to every request it sent. The SDK ends the session as soon as
// its reader sees EOF, dropping replies still being written; so EOF is held
// back until every request read (a message with a method and an id) has had
// its response written (a message with an id and no method), or drainWait
// passes.
type stdio struct {
	in  *bufio.Reader
	out io.Writer

	mu       sync.Mutex
	cond     *sync.Cond
	requests int    // requests read from stdin
	answered int    // responses written to stdout
	partial  []byte // output not yet ended by a newline

	rest    []byte // input read but not yet handed to the SDK
	line    []byte // the input line being classified
	tooLong bool   // it outgrew maxClassify
}

func newStdio(in io.Reader, out io.Writer) *stdio {
	s := &stdio{in: bufio.NewReaderSize(in, 64<<10), out: out}
	s.cond = sync.NewCond(&s.mu)
	return s
}

// kind classifies one JSON-RPC line: a request needing an answer, a
// response, or anything else (notifications, batches, junk).
func kind(line []byte) (request, response bool) {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method *string         `json:"method"`
	}
	if json.Unmarshal(bytes.TrimSpace(line), &m) != nil {
		return false, false
	}
	hasID := len(m.ID) > 0 && string(m.ID) != "null"
	return hasID && m.Method != nil, hasID && m.Method == nil
}

// maxClassify bounds the bytes of one line kept to classify it: the SDK
// refuses longer lines anyway (mcp.DefaultMaxLineLength).
const maxClassify = 16 << 20

// Read hands stdin to the SDK as it arrives, counting the requests among
// the lines that pass through.
func (s *stdio) Read(p []byte) (int, error) {
	if len(s.rest) == 0 {
		chunk, err := s.in.ReadSlice('\n')
		if len(chunk) == 0 {
			if err == io.EOF {
				s.drain()
			}
			return 0, err
		}
		// chunk lives in bufio's buffer only until the next read.
		s.rest = append(s.rest[:0], chunk...)
		s.classify(chunk, chunk[len(chunk)-1] == '\n' || err == io.EOF)
	}
	n := copy(p, s.rest)
	s.rest = s.rest[n:]
	return n, nil
}

// classify collects one line's bytes and counts it once it is complete.
func (s *stdio) classify(b []byte, end bool) {
	if len(s.line)+len(b) <= maxClassify {
		s.line = append(s.line, b...)
	} else {
		s.tooLong = true
	}
	if !end {
		return
	}
	if !s.tooLong {
		if req, _ := kind(s.line); req {
			s.mu.Lock()
			s.requests++
			s.mu.Unlock()
		}
	}
	s.line, s.tooLong = s.line[:0], false
}

// drain waits until every request read has been answered, or drainWait.
func (s *stdio) drain() {
	timer := time.AfterFunc(drainWait, func() {
		s.mu.Lock()
		s.answered = s.requests
		s.mu.Unlock()
		s.cond.Broadcast()
	})
	defer timer.Stop()
	s.mu.Lock()
	for s.answered < s.requests {
		s.cond.Wait()
	}
	s.mu.Unlock()
}

// Write passes the SDK's output to stdout, counting complete responses.
func (s *stdio) Write(p []byte) (int, error) {
	n, err := s.out.Write(p)
	s.mu.Lock()
	s.partial = append(s.partial, p[:n]...)
	for {
		i := bytes.IndexByte(s.partial, '\n')
		if i < 0 {
			break
		}
		if _, resp := kind(s.partial[:i]); resp {
			s.answered++
		}
		s.partial = s.partial[i+1:]
	}
	s.mu.Unlock()
	s.cond.Broadcast()
	return n, err
}

// Close is a no-op: the process's stdin and stdout outlive the session.
func (s *stdio) Close() error { return nil }
