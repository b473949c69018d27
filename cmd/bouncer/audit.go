package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/bouncer-mcp/bouncer/internal/audit"
	"github.com/bouncer-mcp/bouncer/internal/statefile"
)

// cmdAudit runs an audit subcommand: verify or ship.
func cmdAudit(args []string) error {
	const synopsis = "bouncer audit verify [--home DIR] [--audit FILE]... [--after sha256:HEX] [--expect-head sha256:HEX] [--no-head]"
	const usage = synopsis + " | " + shipSynopsis
	if len(args) == 0 {
		return usageErr("%s", "audit: missing subcommand; usage: "+usage)
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Printf("Usage:\n  %s\n  %s\n\nverify checks the audit log's hash chain and its head file, and prints its head hash.\n"+
			"ship sends the audit log to the collectors named by audit_ship in the trust configuration.\n"+
			"Run 'bouncer audit verify --help' or 'bouncer audit ship --help' for their flags.\n", synopsis, shipSynopsis)
		return nil
	case "verify":
		return cmdAuditVerify(args[1:], synopsis)
	case "ship":
		return cmdAuditShip(args[1:])
	}
	return usageErr("%s", fmt.Sprintf("audit: unknown subcommand %q; usage: %s", args[0], usage))
}

var headRE = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// cmdAuditVerify checks the chain, and the log against its head file, and
// prints the head hash, which the user can keep elsewhere: the head file is
// on this machine, beside the log, and anyone who can rewrite both can
// forge both. Several logs (rotated ones, oldest first, then the current
// one) are checked as one chain: each one's first line must continue the
// one before.
func cmdAuditVerify(args []string, synopsis string) error {
	fs, home := newFlags("audit verify", synopsis+"\n\n"+
		"Checks that no line of the audit log was edited, removed or reordered, and that the\n"+
		"log is the one bouncer wrote: its head file (the log's name with .head added, which\n"+
		"bouncer rewrites with every line) must record its first line, its length and its\n"+
		"last line. Prints the hash of the last line. Keep that hash somewhere the agent can't\n"+
		"write, and pass it later as --expect-head to check that nothing was cut from the end since.\n"+
		"Give --audit more than once to check logs rotated away (oldest first) and the current\n"+
		"one as one chain: each log's first line must continue the one before.")
	var files multiFlag
	fs.Var(&files, "audit", "audit `FILE` (default audit.jsonl in the state directory); repeat it for rotated logs, oldest first, the current one last")
	head := fs.String("expect-head", "", "a head hash printed by an earlier verify; it must still be in the log")
	after := fs.String("after", "", "the head hash (`sha256:HEX`) of the log rotated away before the first one given: its first line must continue it")
	noHead := fs.Bool("no-head", false, "check the chain alone, without the head file (a copy of a log made without it, or a rotated-away log)")
	ops, done, err := parseOperands(fs, args)
	if done {
		return err
	}
	if len(ops) != 0 {
		return usageErr("%s", fmt.Sprintf("audit verify: unexpected argument %q", ops[0]))
	}
	want := strings.ToLower(strings.TrimSpace(*head))
	if want != "" && !headRE.MatchString(want) {
		return usageErr("%s", fmt.Sprintf("audit verify: --expect-head %q is not sha256: and 64 hex digits", *head))
	}
	start := strings.ToLower(strings.TrimSpace(*after))
	if start != "" && !headRE.MatchString(start) {
		return usageErr("%s", fmt.Sprintf("audit verify: --after %q is not sha256: and 64 hex digits", *after))
	}
	if len(files) == 0 {
		dir, err := stateDir(*home)
		if err != nil {
			return badInput(fmt.Errorf("audit verify: %v", err))
		}
		files = multiFlag{filepath.Join(dir, "audit.jsonl")}
	}
	var pins []string
	if want != "" {
		pins = append(pins, want)
	}
	found := false // the expected head, in one of the logs
	for i, path := range files {
		// Logs before the last were rotated away: their head files, if
		// any, describe the current log, not them.
		noHeadWhy := ""
		switch {
		case *noHead:
			noHeadWhy = "--no-head"
		case i < len(files)-1:
			noHeadWhy = "a log rotated away: the head file describes the current log"
		}
		rep, err := verifyOne(path, start, noHeadWhy, pins)
		if err != nil {
			return err
		}
		if n := rep.HasHead(want); want != "" && n > 0 {
			found = true
			where := fmt.Sprintf("line %d", n)
			if len(files) > 1 {
				where = path + " " + where
			}
			fmt.Printf("expected head found at %s; %d lines were added since\n", where, rep.Lines-n)
		}
		start = rep.Head
	}
	if want != "" && !found {
		return failed(fmt.Errorf("audit %s: the expected head %s is not in the log: lines were removed from its end, or it was rewritten", strings.Join(files, ", "), want))
	}
	return nil
}

// verifyOne checks the log at path, as cmdAuditVerify does each: chained
// on from after (the head of the log given before it; "" for none), and
// against its head file unless noHeadWhy says why not. It prints what it
// found, and fails on a problem.
func verifyOne(path, after, noHeadWhy string, pins []string) (*audit.Report, error) {
	var rep *audit.Report
	var err error
	switch {
	case noHeadWhy != "":
		rep, err = verifyChainOnly(path, after, pins)
	case after != "":
		rep, err = audit.VerifyFileAfter(path, after, pins...)
	default:
		rep, err = audit.VerifyFileReport(path, pins...)
	}
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			if _, statErr := os.Stat(path); errors.Is(statErr, os.ErrNotExist) {
				return nil, badInput(fmt.Errorf("audit verify: %s does not exist: no audit log there yet (bouncer run writes it at the first call it judges), or give --home DIR or --audit FILE", path))
			}
			return nil, badInput(err)
		}
		return nil, failed(err)
	}
	for _, n := range rep.Notes {
		fmt.Printf("%s: note: %s\n", path, n)
	}
	if !rep.OK() {
		for _, p := range rep.Problems {
			if p.Line == 0 {
				fmt.Printf("%s: %s\n", path, p.Msg)
			} else {
				fmt.Printf("%s:%d: %s\n", path, p.Line, p.Msg)
			}
		}
		first := rep.Problems[0]
		if !first.Anchor {
			return nil, failed(fmt.Errorf("audit %s: chain broken at line %d (%d problem(s) in %d lines)", path, first.Line, len(rep.Problems), rep.Lines))
		}
		return nil, failed(fmt.Errorf("audit %s: not the log bouncer wrote, by its head file %s (%d problem(s) in %d lines); what changed is above", path, rep.HeadFile, len(rep.Problems), rep.Lines))
	}
	fmt.Printf("%s: %d lines, chain intact\n", path, rep.Lines)
	if after != "" {
		fmt.Printf("line 1 continues the log that ended with %s\n", after)
	}
	fmt.Printf("head %s (line %d)\n", rep.Head, rep.Lines)
	switch {
	case noHeadWhy != "":
		fmt.Printf("head file not checked (%s): a log replaced whole by another chain would verify too\n", noHeadWhy)
	case rep.Anchor != nil:
		fmt.Printf("head file %s: records %d lines; the first and line %d are as recorded\n", rep.HeadFile, rep.Anchor.Lines, rep.Anchor.Lines)
	}
	if rep.Unanchored {
		return nil, failed(fmt.Errorf("audit %s: no head file records this log (%s is missing or empty), so nothing shows it is the log bouncer wrote: a log replaced whole by another chain verifies too. "+
			"bouncer run records the head with every line it writes; for a copy of a log made without its head file, check the chain alone with --no-head", path, rep.HeadFile))
	}
	return rep, nil
}

// verifyChainOnly checks the chain of the log at path, without its head
// file (--no-head, or a log rotated away), its first line continuing
// after ("" for the genesis value).
func verifyChainOnly(path, after string, pins []string) (*audit.Report, error) {
	f, err := statefile.Open(path)
	if err != nil {
		return nil, fmt.Errorf("audit %s: %w", path, err)
	}
	defer f.Close()
	if after == "" {
		after = audit.Genesis
	}
	rep, err := audit.VerifyAfter(f, after, pins...)
	if err != nil {
		return nil, fmt.Errorf("audit %s: %w", path, err)
	}
	return rep, nil
}
