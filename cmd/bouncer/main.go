// Command bouncer is an MCP proxy that stops a prompt-injected agent from
// sending data to destinations that reached it through untrusted tool output.
//
// This file only dispatches subcommands; each lives in a file of its own and
// wires the internal packages together.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/bouncer-mcp/bouncer/internal/oauth"
	"github.com/bouncer-mcp/bouncer/internal/sandbox"
	"github.com/bouncer-mcp/bouncer/internal/statefile"
)

// command is one subcommand: it gets its arguments (without its name) and
// returns the process exit status.
type command struct {
	run    func(args []string) error
	short  string
	hidden bool
}

var commands = map[string]command{
	"run":     {run: cmdRun, short: "proxy an MCP server on stdio, enforcing the policy"},
	"listen":  {run: cmdListen, short: "serve MCP servers over streamable HTTP to many clients, one judged session each"},
	"check":   {run: cmdCheck, short: "replay a recorded session against a policy, offline"},
	"approve": {run: cmdApprove, short: "approve a blocked destination by its one-time code (needs a terminal)"},
	"pending": {run: cmdPending, short: "list open approval codes"},
	"audit":   {run: cmdAudit, short: "verify the audit log's hash chain (audit verify), or ship it to a collector (audit ship)"},
	"init":    {run: cmdInit, short: "wrap the MCP servers (stdio and remote) of your clients' configs; --undo puts them back"},
	"status":  {run: cmdStatus, short: "show, per client config, which servers are wrapped, their policy, the hook, and what is unprotected"},
	"report":  {run: cmdReport, short: "write the Markdown review pack"},
	"serve":   {run: cmdServe, short: "Bouncer's own MCP server for policy authors (the default)"},
	"verify":  {run: cmdVerify, short: "verify policy files against their Sigstore bundles"},
	"sign":    {run: cmdSign, short: "sign policy files with a local key"},
	"policy":  {run: cmdPolicy, short: "push, pull (signed policy via an OCI registry), digest, suggest (from the audit log)"},
	"doctor":  {run: cmdDoctor, short: "show what sandboxing this machine offers"},
	"log":     {run: cmdLog, short: "show the audit log as a person reads it (-f follows)"},
	"trust":   {run: cmdTrust, short: "list, add (needs a terminal) or remove remembered destinations"},
	"hook":    {run: cmdHook, short: "record what the user typed (the client's prompt-submit hook: hook prompt)"},
	"version": {run: cmdVersion, short: "print version, commit and build date"},
}

func main() { os.Exit(dispatch(os.Args[1:])) }

func dispatch(args []string) int {
	defer startProfile()()
	if len(args) == 0 {
		return finish(cmdServe(nil))
	}
	name := args[0]
	switch name {
	case "-h", "-help", "--help", "help":
		usage(os.Stdout)
		return exitOK
	}
	if c, ok := hiddenCommands[name]; ok {
		return c(args[1:])
	}
	c, ok := commands[name]
	if !ok {
		if strings.HasPrefix(name, "-") {
			return finish(usageErr("flags go after a subcommand; try 'bouncer --help'"))
		}
		return finish(usageErr("unknown command %q; try 'bouncer --help'", name))
	}
	return finish(c.run(args[1:]))
}

// hiddenCommands are internal entry points, not listed in help: the
// sandbox launcher and the OAuth sign-in helper that bouncer run
// re-executes itself as.
var hiddenCommands = map[string]func(args []string) int{
	sandbox.LauncherName: sandbox.RunLauncher,
	oauth.HelperName:     oauth.RunHelper,
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "Bouncer: a hardened MCP proxy that denies sends to destinations taken from untrusted tool output.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Usage: bouncer COMMAND [FLAGS] [ARGS]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Commands:")
	names := make([]string, 0, len(commands))
	for n, c := range commands {
		if !c.hidden {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-8s %s\n", n, commands[n].short)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Run 'bouncer COMMAND --help' for a command's flags. With no command, bouncer serves its own MCP server on stdio.")
}

// errorf prints "bouncer: ..." to stderr.
func errorf(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "bouncer: "+format+"\n", a...)
}

// newFlags makes a FlagSet for a subcommand. Every subcommand takes --home.
// Its usage text goes to stdout on --help; parse errors are reported by
// parseFlags as a single line.
func newFlags(name, synopsis string) (*flag.FlagSet, *string) {
	fs := flag.NewFlagSet("bouncer "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	home := fs.String("home", "", "state directory (default $BOUNCER_HOME, else ~/.bouncer)")
	fs.Usage = func() {
		fmt.Fprintf(os.Stdout, "Usage: %s\n\nFlags:\n", synopsis)
		fs.SetOutput(os.Stdout)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
	return fs, home
}

// parseFlags parses args into fs. It returns done=true when the command
// must stop: with nil after --help (the usage printed on stdout), with a
// usage error otherwise: one line naming the command and where its flags
// are, and nothing on stdout (run's stdout is the client's MCP stream).
func parseFlags(fs *flag.FlagSet, args []string) (done bool, err error) {
	show := fs.Usage
	fs.Usage = func() {}
	err = fs.Parse(args)
	fs.Usage = show
	switch {
	case err == nil:
		return false, nil
	case errors.Is(err, flag.ErrHelp):
		show()
		return true, nil
	default:
		return true, usageErr("%s: %v; see '%s --help'", strings.TrimPrefix(fs.Name(), "bouncer "), err, fs.Name())
	}
}

// stateDir returns the state directory: --home, else $BOUNCER_HOME, else
// ~/.bouncer. It does not create it.
func stateDir(flagValue string) (string, error) {
	dir := flagValue
	if dir == "" {
		dir = os.Getenv("BOUNCER_HOME")
	}
	if dir == "" {
		h, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("no home directory; set BOUNCER_HOME or pass --home: %w", err)
		}
		dir = filepath.Join(h, ".bouncer")
	}
	return filepath.Abs(dir)
}

// ensureStateDir creates the state directory 0700 if it is missing, and
// refuses one that is another user's or that other users may write
// (statefile.Dir). An unusable one is an error that says where to choose
// another.
func ensureStateDir(dir string) error {
	err := statefile.Dir(dir)
	if err == nil {
		// Writable? A read-only home or a directory of another user is
		// found here, not at the first audit line.
		var f *os.File
		if f, err = os.CreateTemp(dir, ".probe-*"); err == nil {
			f.Close()
			os.Remove(f.Name())
			return nil
		}
	}
	return fmt.Errorf("state directory %s can't be used (%v); choose a writable one with --home DIR or the BOUNCER_HOME environment variable", dir, err)
}

// multiFlag is a repeatable string flag (--policy A --policy B).
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }
