// Package record writes a proxy session down as `bouncer check` replays it
// (`bouncer run --record FILE`): every tools/call the engine judged, every
// output of the server that was recorded as untrusted (or, for a tool the
// policy trusts, as vouching), and every yes a human gave through the
// client, one JSON line each, in the order the session lived them. A
// policy can then be tried on a real session offline, and a replay under
// the same policy gives the session's verdicts.
//
// The file holds what the servers returned, which may be secret (mail,
// files, tokens a tool printed): it is created 0600, and an existing file
// that other users can read is refused, as the audit log's is.
package record

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/bouncer-mcp/bouncer/internal/statefile"

	"github.com/bouncer-mcp/bouncer/internal/engine"
)

// MaxLine is the size of a call's params or an output above which its line
// holds them elided as the audit log elides large arguments (every string
// over 1 KiB replaced by its start, length and SHA-256), and says so with
// "elided": true. It is larger than the audit log's limit (64 KiB), because
// an output's text is what taint is replayed from: a destination in an
// elided string is not in the record.
const MaxLine = 1 << 20

// Tape is an open record file. It is safe for concurrent use, and several
// processes may append to one file: each line is one write to a file
// opened for appending, so the proxies of one client can share a record
// and it replays as their client session.
type Tape struct {
	server string
	warn   func(string)

	mu     sync.Mutex
	f      *os.File
	failed bool
}

// Open opens (creating 0600) the record file at path for appending lines
// about server. warn is told, once, if a line can't be written: the
// session goes on without its record.
func Open(path, server string, warn func(string)) (*Tape, error) {
	f, err := statefile.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("record %s: %w", path, err)
	}
	if err := private(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("record %s: %w", path, err)
	}
	return &Tape{server: server, warn: warn, f: f}, nil
}

// private refuses a file that is not a regular file of this user's that
// only this user can read: the record holds the servers' outputs.
func private(f *os.File) error { return statefile.CheckPrivate(f) }

// line is one line of the record, in `bouncer check`'s session format.
type line struct {
	Output  json.RawMessage `json:"output,omitempty"`
	Call    json.RawMessage `json:"call,omitempty"`
	Approve *approve        `json:"approve,omitempty"`
	Server  string          `json:"server"`
	Tool    string          `json:"tool,omitempty"`
	Elided  bool            `json:"elided,omitempty"`
}

type approve struct {
	Tool        string `json:"tool"`
	Param       string `json:"param"`
	Destination string `json:"destination"`
}

// Output records doc, something the server sent that was recorded as its
// output; tool names the tool whose call it answers, if it answers one.
func (t *Tape) Output(doc json.RawMessage, tool string) {
	if len(doc) == 0 {
		return
	}
	doc, elided := bounded(doc)
	t.write(line{Output: doc, Tool: tool, Elided: elided})
}

// Call records the params of a tools/call as the client sent them, before
// the engine judges them.
func (t *Tape) Call(params json.RawMessage) {
	if len(params) == 0 {
		params = json.RawMessage("{}")
	}
	params, elided := bounded(params)
	t.write(line{Call: params, Elided: elided})
}

// Approve records a human's yes to a destination of a tool's calls, which
// holds for the rest of the session.
func (t *Tape) Approve(tool, param, dest string) {
	t.write(line{Approve: &approve{tool, param, dest}})
}

// bounded is doc, elided if it is larger than MaxLine.
func bounded(doc json.RawMessage) (json.RawMessage, bool) {
	if len(doc) <= MaxLine {
		return doc, false
	}
	return engine.ElideJSON(doc), true
}

func (t *Tape) write(l line) {
	l.Server = t.server
	b, err := encode(l)
	if err != nil {
		// A doc that is not JSON (it was recorded as output all the
		// same): as one string.
		if l.Output != nil {
			l.Output, l.Elided = engine.ElideJSON(l.Output), true
		} else if l.Call != nil {
			l.Call, l.Elided = engine.ElideJSON(l.Call), true
		}
		if b, err = encode(l); err != nil {
			t.fail(err)
			return
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.failed || t.f == nil {
		return
	}
	if _, err := t.f.Write(b); err != nil {
		t.failLocked(err)
	}
}

// encode is l as one line, its text as the server wrote it (no HTML
// escapes).
func encode(l line) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(l); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func (t *Tape) fail(err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.failLocked(err)
}

func (t *Tape) failLocked(err error) {
	if t.failed {
		return
	}
	t.failed = true
	if t.warn != nil {
		t.warn(fmt.Sprintf("record %s: %v; the rest of this session is not recorded", t.f.Name(), err))
	}
}

// Close closes the file; lines written after it are dropped.
func (t *Tape) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.f == nil {
		return nil
	}
	err := t.f.Close()
	t.f = nil
	return err
}

var _ io.Closer = (*Tape)(nil)
