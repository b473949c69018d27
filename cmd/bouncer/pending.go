package main

import (
	"fmt"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/bouncer-mcp/bouncer/internal/approval"
)

// cmdPending lists the open approval codes, oldest first, one a line: code,
// age, server, tool, argument, destination. Fields are escaped for the
// terminal, so a line is always one line and its columns can be split on
// runs of spaces up to the destination, which comes last.
func cmdPending(args []string) int {
	fs, home := newFlags("pending", "bouncer pending [--home DIR]\n\n"+
		"Lists open one-time approval codes: code, age, server, tool, argument, destination.")
	ops, done, status := parseOperands(fs, args)
	if done {
		return status
	}
	if len(ops) != 0 {
		return usageError(fmt.Sprintf("pending: unexpected argument %q", ops[0]))
	}
	dir, err := stateDir(*home)
	if err != nil {
		errorf("pending: %v", err)
		return exitUsage
	}
	codes, err := approval.Open(filepath.Join(dir, "pending.json"), nil).List()
	if err != nil {
		errorf("pending: %v", err)
		return exitUsage
	}
	if len(codes) == 0 {
		fmt.Fprintln(os.Stderr, "no open codes")
		return exitOK
	}
	now := time.Now()
	tw := tabwriter.NewWriter(os.Stdout, 0, 8, 2, ' ', 0)
	for _, c := range codes {
		p := func(s string) string { v, _ := approval.Printable(s); return v }
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", p(c.Code), age(now.Sub(c.Issued)), p(c.Server), p(c.Tool), p(c.Param), p(c.Destination))
	}
	if err := tw.Flush(); err != nil {
		errorf("pending: %v", err)
		return exitFail
	}
	return exitOK
}
