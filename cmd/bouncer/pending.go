package main

import (
	"fmt"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"golang.org/x/term"

	"github.com/bouncer-mcp/bouncer/internal/approval"
	"github.com/bouncer-mcp/bouncer/internal/display"
)

// cmdPending lists the open approval codes, oldest first, one a line: code,
// age, server, tool, argument, destination, under a header line naming
// the columns when stdout is a terminal (a pipe gets the lines alone, as
// the contract has them). Each value is one token
// (display.Show: escaped for the terminal, quoted if it holds a space, is
// empty or starts with "("), so a line is always one line and its columns
// can be split on runs of two or more spaces. A call naming no destination
// shows (none) for argument and destination. Entries of the file that were
// skipped as invalid are reported on stderr; the rest are still listed.
func cmdPending(args []string) error {
	fs, home := newFlags("pending", "bouncer pending [--home DIR]\n\n"+
		"Lists open one-time approval codes: code, age, server, tool, argument, destination.")
	ops, done, err := parseOperands(fs, args)
	if done {
		return err
	}
	if len(ops) != 0 {
		return usageErr("%s", fmt.Sprintf("pending: unexpected argument %q", ops[0]))
	}
	dir, err := stateDir(*home)
	if err != nil {
		return badInput(fmt.Errorf("pending: %v", err))
	}
	store := approval.Open(filepath.Join(dir, "pending.json"), nil)
	codes, invalid, err := store.Pending()
	if err != nil {
		return badInput(fmt.Errorf("pending: %v", err))
	}
	for _, e := range invalid {
		errorf("pending: %s: skipped an invalid entry, which approves nothing (it is dropped at the next change): %s", store.Path(), printable(e.Error()))
	}
	if len(codes) == 0 {
		fmt.Fprintln(os.Stderr, "no open codes")
		return nil
	}
	now := time.Now()
	tw := tabwriter.NewWriter(os.Stdout, 0, 8, 2, ' ', 0)
	if term.IsTerminal(int(os.Stdout.Fd())) {
		fmt.Fprintln(tw, "CODE\tAGE\tSERVER\tTOOL\tARGUMENT\tDESTINATION")
	}
	for _, c := range codes {
		p := func(s string) string { v, _ := display.Show(s); return v }
		param, dest := "(none)", "(none)"
		if !c.NoDestination() {
			param, dest = p(c.Param), p(c.Destination)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", p(c.Code), age(now.Sub(c.Issued)), p(c.Server), p(c.Tool), param, dest)
	}
	if err := tw.Flush(); err != nil {
		return failed(fmt.Errorf("pending: %v", err))
	}
	return nil
}
