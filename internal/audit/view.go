package audit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/bouncer-mcp/bouncer/internal/display"
	"github.com/bouncer-mcp/bouncer/internal/statefile"
)

// Filter selects audit lines for a person to read. Zero fields select all.
type Filter struct {
	Server  string
	Verdict string // allow, deny or ask
	Since   time.Time
}

// Match reports whether e passes the filter.
func (f Filter) Match(e Entry) bool {
	return (f.Server == "" || e.Server == f.Server) &&
		(f.Verdict == "" || e.Verdict == f.Verdict) &&
		(f.Since.IsZero() || !e.TS.Before(f.Since))
}

// Human renders one line as a person reads it: time, server, tool,
// verdict, destination, reason. An agent or a server chose most of these
// values, and a log must neither redraw the terminal it is read on nor let
// a value pass for another column, so every value goes through the one
// display escaper: server, tool, argument and destination as display.Show
// tokens (escaped, and quoted when they hold a space), the reason escaped
// with display.Printable. Columns are set apart by two spaces or more, and
// no escaped value holds two spaces in a row, so a line splits exactly on
// runs of two or more spaces (as bouncer pending's lines do).
//
// The reason is escaped like every other value, so an escape that the
// engine wrote into it when it quoted a value (\u202e) is shown with its
// backslash doubled (\\u202e): what the line shows is always what the log
// holds, with nothing left to trust.
func Human(e Entry) string {
	verdict := e.Verdict
	if e.Observed() {
		// Observe mode: decided, not enforced; the call went through.
		verdict = "would " + verdict
		if e.Verdict == "allow" {
			verdict = "allow"
		}
	}
	dest := "-"
	switch {
	case e.Taint != nil:
		dest = token(e.Taint.Param) + "=" + token(e.Taint.Destination)
	case len(e.Dests) > 0:
		dest = token(e.Dests[0].Param) + "=" + token(e.Dests[0].Value)
		if v := e.Dests[0].Vouch; v != "" {
			// What vouched for it: a prompt, a directory, an anchored
			// record... so the ways to allow can be told apart.
			dest += " (" + token(v) + ")"
		}
		if len(e.Dests) > 1 {
			dest += fmt.Sprintf(" (+%d)", len(e.Dests)-1)
		}
	}
	rule, _ := display.Printable(e.Rule)
	reason, _ := display.Printable(e.Reason)
	if reason == "" {
		reason = "(" + rule + ")"
	} else if rule != "" {
		reason = "[" + rule + "] " + reason
	}
	return fmt.Sprintf("%s  %-12s  %-22s  %-10s  %-32s  %s",
		e.TS.UTC().Format("2006-01-02 15:04:05"), token(e.Server), token(e.Tool), verdict, dest, reason)
}

// token is display.Show without its second result.
func token(s string) string {
	t, _ := display.Show(s)
	return t
}

// Follow calls fn for each whole line of the log at path, from the start,
// and then for each line appended later, until ctx ends. A line still being
// written (no newline yet) waits for its newline. A log that does not exist
// yet is waited for.
func Follow(ctx context.Context, path string, poll time.Duration, fn func(line []byte) error) error {
	var f *os.File
	for f == nil {
		var err error
		f, err = statefile.Open(path)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		if f == nil {
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(poll):
			}
		}
	}
	defer f.Close()
	var pending []byte
	buf := make([]byte, 64<<10)
	for {
		n, err := f.Read(buf)
		if n > 0 {
			pending = append(pending, buf[:n]...)
			for {
				i := bytes.IndexByte(pending, '\n')
				if i < 0 {
					break
				}
				if ferr := fn(pending[:i]); ferr != nil {
					return ferr
				}
				pending = pending[i+1:]
			}
			continue
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(poll):
		}
	}
}
