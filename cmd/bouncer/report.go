package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/bouncer-mcp/bouncer/internal/audit"
	"github.com/bouncer-mcp/bouncer/internal/report"
	"github.com/bouncer-mcp/bouncer/internal/setup"
	"github.com/bouncer-mcp/bouncer/internal/statefile"
)

const reportSynopsis = `bouncer report [--policy FILE]... [--policy-dir DIR] [--trust FILE] [--tools FILE] [--audit FILE] [--name SERVER] [--since YYYY-MM-DD] [--until YYYY-MM-DD] [--date YYYY-MM-DD] [-o FILE]

Writes the Markdown review pack from the audit log: each server's tools and their controls,
the verdicts by server, what was enforced, findings, and the OWASP LLM Top 10 and AIUC-1
mappings. Without --policy it can only show what the audit lines say.`

// cmdReport writes the Markdown review pack from the policy, a saved
// tools/list result and the audit log.
func cmdReport(args []string) error {
	fs, home := newFlags("report", reportSynopsis)
	var pf policyFlags
	pf.register(fs)
	toolsFile := fs.String("tools", "", "a server's tools/list result as JSON (`FILE`, {\"tools\": [...]}), shown as --name's tools (default: the lists bouncer run pinned)")
	auditFile := fs.String("audit", "", "audit log `FILE` (default: audit.jsonl in the state directory)")
	name := fs.String("name", "", "summarise only the audit lines of server `NAME` (bouncer run's --name)")
	since := fs.String("since", "", "first day of the period, `YYYY-MM-DD` (UTC)")
	until := fs.String("until", "", "last day of the period, `YYYY-MM-DD` (UTC), inclusive")
	date := fs.String("date", "", "the pack's date, `YYYY-MM-DD` (default today, UTC), so that a pack can be reproduced")
	outFile := fs.String("o", "", "write the pack to `FILE` (default stdout)")
	if done, err := parseFlags(fs, args); done {
		return err
	}
	if fs.NArg() > 0 {
		return usageErr("%s", fmt.Sprintf("report: unexpected argument %q", fs.Arg(0)))
	}
	in := report.Input{Server: *name}
	var err error
	for _, d := range []struct {
		flag, val string
		to        *time.Time
	}{{"--since", *since, &in.Since}, {"--until", *until, &in.Until}, {"--date", *date, &in.Generated}} {
		if d.val == "" {
			continue
		}
		if *d.to, err = time.Parse("2006-01-02", d.val); err != nil {
			return usageErr("%s", fmt.Sprintf("report: %s %q: want YYYY-MM-DD", d.flag, d.val))
		}
	}
	if !in.Since.IsZero() && !in.Until.IsZero() && in.Until.Before(in.Since) {
		return usageErr("%s", "report: --until is before --since")
	}
	if in.Generated.IsZero() {
		in.Generated = time.Now().UTC()
	}

	dir, err := stateDir(*home)
	if err != nil {
		return badInput(fmt.Errorf("report: %v", err))
	}
	// The policy bouncer run puts in force for the same flags; without
	// any, the built-in packs alone, and the audit lines' digests say
	// which policy decided them.
	pol, err := setup.LoadPolicy(pf.sources(dir, ""))
	if err != nil {
		return badInput(fmt.Errorf("%v", err))
	}
	in.Policy, in.PolicyFiles = pol.Policy, pol.Files
	// The digest bouncer run writes in each line it decides under this
	// policy: lines with another were decided by another policy.
	in.PolicyDigest = pol.Policy.Digest(version)
	if *toolsFile != "" {
		data, err := statefile.ReadFile(*toolsFile, maxToolsFile)
		if err != nil {
			return badInput(fmt.Errorf("report: %v", err))
		}
		tools, err := report.ParseTools(data)
		if err != nil {
			return badInput(fmt.Errorf("%s: %v", *toolsFile, err))
		}
		in.Lists = []report.ToolList{{Server: *name, File: *toolsFile, Tools: tools}}
	}

	if *toolsFile == "" {
		// The tool lists bouncer run pinned: every tool each server offers.
		pinned, perr := report.LoadPinned(dir, *name)
		if perr != nil {
			errorf("report: %v", perr)
		}
		in.Lists = pinned
	}
	path := *auditFile
	explicit := path != ""
	if !explicit {
		path = filepath.Join(dir, "audit.jsonl")
	}
	entries, err := readAuditLenient(path)
	switch {
	case err == nil:
		in.AuditFile = path
		in.Audit = entries
		if in.Chain, err = audit.VerifyFileReport(path); err != nil {
			return failed(fmt.Errorf("%v", err))
		}
	case errors.Is(err, os.ErrNotExist) && !explicit:
		// No log yet: the pack shows the controls and says there is no
		// evidence; stderr says where it looked.
		errorf("report: note: no audit log at %s yet, so the pack shows the policy alone (bouncer run writes the log; --home or --audit names another)", path)
	default:
		return badInput(fmt.Errorf("report: %v", err))
	}

	pack := report.Write(in)
	if *outFile == "" {
		os.Stdout.Write(pack)
		return nil
	}
	if err := writeReportFile(*outFile, pack); err != nil {
		return failed(fmt.Errorf("report: %v", err))
	}
	return nil
}

// writeReportFile replaces path with data (statefile.WriteMode: a reader
// never sees half a pack). The pack names destinations and denial
// reasons taken from the audit log, which is private to its user; it is
// kept so too (0600) unless the file being replaced was already shared.
// It is the user's file, not a state file: nothing reads it back.
func writeReportFile(path string, data []byte) error {
	mode := statefile.Perm
	if fi, err := os.Stat(path); err == nil {
		mode = fi.Mode().Perm()
	}
	if err := statefile.WriteMode(path, data, mode); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// readAuditLenient parses every line of an audit log it can. A damaged log
// is exactly what a reviewer must see, so a line that doesn't parse is
// skipped here and reported through the hash chain's verification instead
// of stopping the pack.
func readAuditLenient(path string) ([]audit.Entry, error) {
	f, err := statefile.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, err
	}
	var out []audit.Entry
	for _, line := range bytes.Split(data, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if e, err := audit.Parse(line); err == nil {
			out = append(out, e)
		}
	}
	return out, nil
}
