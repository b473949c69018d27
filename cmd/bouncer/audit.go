package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/bouncer-mcp/bouncer/internal/audit"
)

// cmdAudit runs an audit subcommand: verify or ship.
func cmdAudit(args []string) error {
	const synopsis = "bouncer audit verify [--home DIR] [--audit FILE] [--expect-head sha256:HEX]"
	const usage = synopsis + " | " + shipSynopsis
	if len(args) == 0 {
		return usageErr("%s", "audit: missing subcommand; usage: "+usage)
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Printf("Usage:\n  %s\n  %s\n\nverify checks the audit log's hash chain and prints its head hash.\n"+
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

// cmdAuditVerify checks the chain and prints the head hash, which the user
// can keep elsewhere: the chain alone can't show lines cut from the end.
func cmdAuditVerify(args []string, synopsis string) error {
	fs, home := newFlags("audit verify", synopsis+"\n\n"+
		"Checks that no line of the audit log was edited, removed or reordered, and prints the\n"+
		"hash of the last line. Keep that hash somewhere the agent can't write, and pass it\n"+
		"later as --expect-head to check that nothing was cut from the end since.")
	file := fs.String("audit", "", "audit log (default audit.jsonl in the state directory)")
	head := fs.String("expect-head", "", "a head hash printed by an earlier verify; it must still be in the log")
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
	path := *file
	if path == "" {
		dir, err := stateDir(*home)
		if err != nil {
			return badInput(fmt.Errorf("audit verify: %v", err))
		}
		path = filepath.Join(dir, "audit.jsonl")
	}
	var pins []string
	if want != "" {
		pins = append(pins, want)
	}
	rep, err := audit.VerifyFileReport(path, pins...)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return badInput(err)
		}
		return failed(err)
	}
	if !rep.OK() {
		for _, p := range rep.Problems {
			fmt.Printf("%s:%d: %s\n", path, p.Line, p.Msg)
		}
		return failed(fmt.Errorf("audit %s: chain broken at line %d (%d problem(s) in %d lines)", path, rep.Problems[0].Line, len(rep.Problems), rep.Lines))
	}
	fmt.Printf("%s: %d lines, chain intact\n", path, rep.Lines)
	fmt.Printf("head %s (line %d)\n", rep.Head, rep.Lines)
	if want != "" {
		n := rep.HasHead(want)
		if n == 0 {
			return failed(fmt.Errorf("audit %s: the expected head %s is not in the log: lines were removed from its end, or it was rewritten", path, want))
		}
		fmt.Printf("expected head found at line %d; %d lines were added since\n", n, rep.Lines-n)
	}
	return nil
}
