package audit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
	"unicode"
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
// verdict, destination, reason. Every value is escaped (control, format and
// other invisible characters as \u escapes), since an agent chose most of
// them and a log must not be able to redraw the terminal it is read on.
func Human(e Entry) string {
	verdict := e.Verdict
	if e.Observed() {
		// Observe mode: decided, not enforced; the call went through.
		verdict = "would " + verdict
		if e.Verdict == "allow" {
			verdict = "allow"
		}
	}
	dest := ""
	switch {
	case e.Taint != nil:
		dest = e.Taint.Param + "=" + e.Taint.Destination
	case len(e.Dests) > 0:
		dest = e.Dests[0].Param + "=" + e.Dests[0].Value
		if len(e.Dests) > 1 {
			dest += fmt.Sprintf(" (+%d)", len(e.Dests)-1)
		}
	}
	if dest == "" {
		dest = "-"
	}
	reason := e.Reason
	if reason == "" {
		reason = "(" + e.Rule + ")"
	} else if e.Rule != "" {
		reason = "[" + e.Rule + "] " + reason
	}
	return fmt.Sprintf("%s  %-12s %-22s %-10s %-32s %s",
		e.TS.UTC().Format("2006-01-02 15:04:05"), safe(e.Server), safe(e.Tool), verdict, safe(dest), safe(reason))
}

// safe escapes what must not reach a terminal raw.
func safe(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == unicode.ReplacementChar || !unicode.IsPrint(r) && r != ' ' || unicode.Is(unicode.Cf, r):
			if r > 0xffff {
				fmt.Fprintf(&b, `\U%08x`, r)
			} else {
				fmt.Fprintf(&b, `\u%04x`, r)
			}
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Follow calls fn for each whole line of the log at path, from the start,
// and then for each line appended later, until ctx ends. A line still being
// written (no newline yet) waits for its newline. A log that does not exist
// yet is waited for.
func Follow(ctx context.Context, path string, poll time.Duration, fn func(line []byte) error) error {
	var f *os.File
	for f == nil {
		var err error
		f, err = os.Open(path)
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
