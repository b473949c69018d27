package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"golang.org/x/term"

	"github.com/bouncer-mcp/bouncer/internal/filepos"
	"github.com/bouncer-mcp/bouncer/internal/serve"
)

const serveSynopsis = "bouncer serve [--policy FILE]... [--audit FILE]\n\n" +
	"Serves Bouncer's own MCP server on stdio, for writing and testing policy: check_call (a dry run\n" +
	"of the proxy's decision that writes no audit line), validate_policy, list_packs, audit_summary.\n" +
	"It never proxies anything. `bouncer` with no command runs this."

// cmdServe runs Bouncer's own MCP server. It only reads the state directory
// (the audit log), so it creates nothing there.
func cmdServe(args []string) error {
	fs, home := newFlags("serve", serveSynopsis)
	var policies multiFlag
	fs.Var(&policies, "policy", "policy file layered over the built-in packs for check_call (repeatable; re-read on every check)")
	auditFile := fs.String("audit", "", "the audit log audit_summary reads (default STATE_DIR/audit.jsonl)")
	if done, err := parseFlags(fs, args); done {
		return err
	}
	if fs.NArg() > 0 {
		return usageErr("%s", "serve takes no arguments")
	}
	dir, err := stateDir(*home)
	if err != nil {
		return badInput(fmt.Errorf("%v", err))
	}
	path := *auditFile
	if path == "" {
		path = filepath.Join(dir, "audit.jsonl")
	}
	if term.IsTerminal(int(os.Stdin.Fd())) {
		errorf("serving Bouncer's own MCP server on stdin and stdout, waiting for an MCP client's messages; " +
			"this is not an interactive prompt (Ctrl-D ends it). For the commands, run: bouncer --help")
	}
	wd, _ := os.Getwd()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err = serve.Run(ctx, serve.Options{Policies: policies, AuditPath: path, WorkDir: wd, Version: version, StateDir: dir})
	var pe *filepos.Error // the policy file's problem, FILE:LINE: KEY
	switch {
	case err == nil, errors.Is(err, context.Canceled):
		return nil
	case errors.As(err, &pe):
		return badInput(fmt.Errorf("%v", err))
	default:
		return failed(fmt.Errorf("serve: %v", err))
	}
}
