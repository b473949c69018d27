package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/bouncer-mcp/bouncer/internal/audit"
	"github.com/bouncer-mcp/bouncer/internal/statefile"
)

const logSynopsis = `bouncer log [-f] [--json] [--server NAME] [--verdict allow|deny|ask] [--since DURATION|DATE] [--audit FILE]

Shows the audit log as a person reads it, one verdict a line: time (UTC), server, tool,
verdict, destination, [rule] reason. -f follows new lines; --json prints the lines as stored.
--since takes a duration back from now (90m, 2h, 7d) or a date (2026-12-01, or RFC 3339).

Values are escaped as bouncer approve shows them: control and invisible characters as \x1b,
\u202e, a backslash as \\, a space at either end or next to another as \x20; a server, tool
or destination holding a space is quoted. Columns are set apart by two or more spaces, which
no value holds, so a line splits exactly on runs of two or more spaces.`

func cmdLog(args []string) error {
	fs, home := newFlags("log", logSynopsis)
	follow := fs.Bool("f", false, "follow: keep printing lines as they are appended (Ctrl-C stops)")
	asJSON := fs.Bool("json", false, "print the lines as stored")
	server := fs.String("server", "", "only lines of server `NAME`")
	verdict := fs.String("verdict", "", "only lines with this verdict: allow, deny or ask")
	since := fs.String("since", "", "only lines from `DURATION` ago (2h, 7d) or a DATE (2026-12-01) on")
	auditFile := fs.String("audit", "", "the audit log (default STATE_DIR/audit.jsonl)")
	if done, err := parseFlags(fs, args); done {
		return err
	}
	if fs.NArg() > 0 {
		return usageErr("%s", fmt.Sprintf("log: unexpected argument %q", fs.Arg(0)))
	}
	f := audit.Filter{Server: *server, Verdict: *verdict}
	switch *verdict {
	case "", "allow", "deny", "ask":
	default:
		return usageErr("%s", fmt.Sprintf("log: --verdict %q: must be allow, deny or ask", *verdict))
	}
	if *since != "" {
		t, err := parseSince(*since, time.Now())
		if err != nil {
			return usageErr("%s", "log: --since: "+err.Error())
		}
		f.Since = t
	}
	path := *auditFile
	if path == "" {
		dir, err := stateDir(*home)
		if err != nil {
			return badInput(fmt.Errorf("log: %v", err))
		}
		path = filepath.Join(dir, "audit.jsonl")
	}
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	bad := 0
	show := func(line []byte) error {
		e, err := audit.Parse(line)
		if err != nil {
			bad++
			return nil
		}
		if !f.Match(e) {
			return nil
		}
		if *asJSON {
			out.Write(line)
			out.WriteByte('\n')
		} else {
			fmt.Fprintln(out, audit.Human(e))
		}
		if *follow {
			return out.Flush()
		}
		return nil
	}
	if *follow {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		if err := audit.Follow(ctx, path, 200*time.Millisecond, show); err != nil {
			return failed(fmt.Errorf("log: %s: %v", path, err))
		}
		return nil
	}
	file, err := statefile.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return failed(fmt.Errorf("log: %s does not exist yet: no call has been decided with this state directory (--home or BOUNCER_HOME chooses another)", path))
	}
	if err != nil {
		return failed(fmt.Errorf("log: %v", err))
	}
	defer file.Close()
	sc := bufio.NewScanner(file)
	sc.Buffer(make([]byte, 64<<10), 1<<30)
	for sc.Scan() {
		show(sc.Bytes())
	}
	if err := sc.Err(); err != nil {
		return failed(fmt.Errorf("log: %s: %v", path, err))
	}
	if bad > 0 {
		out.Flush()
		errorf("log: %d lines of %s are not audit lines and were skipped (bouncer audit verify says which)", bad, path)
	}
	return nil
}

// parseSince reads a duration back from now (90m, 2h, 7d) or a date
// (2006-01-02, or RFC 3339).
func parseSince(s string, now time.Time) (time.Time, error) {
	if n, ok := strings.CutSuffix(s, "d"); ok {
		if d, err := strconv.Atoi(n); err == nil && d >= 0 {
			return now.Add(-time.Duration(d) * 24 * time.Hour), nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	if t, err := time.Parse("2006-01-02", s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("%q is neither a duration (90m, 2h, 7d) nor a date (2026-12-01)", s)
}
