package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/bouncer-mcp/bouncer/internal/mcpconfig"
)

const initSynopsis = `bouncer init --config FILE [--server NAME]... [--yes]
       bouncer init --undo --config FILE [--server NAME]... [--yes]`

// cmdInit wraps (or, with --undo, unwraps) the stdio servers of an MCP
// client config. It shows the new file and asks before writing; the answer
// is read from stdin, terminal or not, because wrapping a config is the
// user's own setup step, not an approval the agent could forge.
func cmdInit(args []string) int {
	fs, _ := newFlags("init", initSynopsis)
	configFile := fs.String("config", "", "the client config `FILE` (.mcp.json, mcp.json, claude_desktop_config.json, .vscode/mcp.json)")
	var servers multiFlag
	fs.Var(&servers, "server", "wrap only server `NAME` (repeatable; default: every stdio server)")
	yes := fs.Bool("yes", false, "write without asking")
	undo := fs.Bool("undo", false, "restore the original entries kept under x-bouncer-upstream")
	if done, st := parseFlags(fs, args); done {
		return st
	}
	if fs.NArg() > 0 {
		return usageError(fmt.Sprintf("init: unexpected argument %q", fs.Arg(0)))
	}
	if *configFile == "" {
		return usageError("init: --config FILE is required")
	}
	cfg, err := mcpconfig.Load(*configFile)
	if err != nil {
		errorf("%v", err)
		return exitUsage
	}

	var out []byte
	var changes []mcpconfig.Change
	var notes []string
	if *undo {
		out, changes, err = cfg.Undo("", servers)
	} else {
		abs, aerr := filepath.Abs(*configFile)
		if aerr != nil {
			errorf("%s: %v", *configFile, aerr)
			return exitUsage
		}
		command, note := bouncerCommand()
		if note != "" {
			notes = append(notes, note)
		}
		out, changes, err = cfg.Wrap(mcpconfig.WrapOptions{Servers: servers, Command: command, ConfigArg: abs})
	}
	if err != nil {
		errorf("%v", err)
		return exitUsage
	}

	changed := false
	for _, c := range changes {
		if c.Status == mcpconfig.Wrapped || c.Status == mcpconfig.Restored {
			changed = true
		}
	}
	if !changed {
		printChanges(changes)
		if *undo {
			fmt.Println("No changes: no wrapped server to restore.")
		} else {
			fmt.Println("No changes: every stdio server is already wrapped, or none matched.")
		}
		return exitOK
	}

	os.Stdout.Write(out)
	if len(out) > 0 && out[len(out)-1] != '\n' {
		fmt.Println()
	}
	fmt.Println()
	printChanges(changes)
	for _, n := range notes {
		fmt.Println(n)
	}
	if !*yes {
		fmt.Printf("Write %s? [y/N] ", *configFile)
		line, rerr := bufio.NewReader(os.Stdin).ReadString('\n')
		if rerr != nil && line == "" {
			fmt.Println()
		}
		if a := strings.ToLower(strings.TrimSpace(line)); a != "y" && a != "yes" {
			fmt.Println("Not written.")
			return exitFail
		}
	}
	if err := cfg.Write(out); err != nil {
		errorf("%v", err)
		return exitFail
	}
	fmt.Printf("Wrote %s (the previous version is in %s.bak). Restart your client.\n", *configFile, *configFile)
	return exitOK
}

func printChanges(changes []mcpconfig.Change) {
	for _, c := range changes {
		fmt.Printf("  %s.%s\n", c.Block, c)
	}
}

// bouncerCommand is the command a wrapped entry launches: "bouncer" when a
// PATH lookup finds it, else this binary's absolute path, because desktop
// clients start servers without the shell's PATH and would not find it.
func bouncerCommand() (command, note string) {
	if _, err := exec.LookPath("bouncer"); err == nil {
		return "bouncer", ""
	}
	exe, err := os.Executable()
	if err != nil {
		return "bouncer", "Note: bouncer is not on PATH and its own path is unknown; the entries launch \"bouncer\", which your client must find."
	}
	if r, err := filepath.EvalSymlinks(exe); err == nil {
		exe = r
	}
	return exe, fmt.Sprintf("Note: bouncer is not on PATH, so the entries launch %s by its absolute path (desktop clients don't see your shell's PATH). Run init again if you move the binary.", exe)
}
