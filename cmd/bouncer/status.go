package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/bouncer-mcp/bouncer/internal/hooks"
	"github.com/bouncer-mcp/bouncer/internal/initplan"
	"github.com/bouncer-mcp/bouncer/internal/mcpconfig"
)

const statusSynopsis = `bouncer status [--config FILE] [--json]

For every MCP client config found for this user and the project in the
current directory (or FILE): which servers are wrapped, which policy each
loads, whether the prompt hook and the deny rules are in, and what is
left unprotected. It changes nothing.`

// cmdStatus reports what init set up, as it is now: the same reading of
// the configs, policies and hook files init's summary makes.
func cmdStatus(args []string) error {
	fs, home := newFlags("status", statusSynopsis)
	configFile := fs.String("config", "", "report on the client config `FILE` only (default: find them)")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	if done, err := parseFlags(fs, args); done {
		return err
	}
	if fs.NArg() > 0 {
		return usageErr("status: unexpected argument %q", fs.Arg(0))
	}
	state, err := stateDir(*home)
	if err != nil {
		return badInput(err)
	}
	cwd, err := os.Getwd()
	if err != nil {
		return badInput(err)
	}
	plan := &initplan.Plan{Cwd: cwd, Home: os.Getenv("HOME"), State: state}
	where := mcpconfig.Where{Home: plan.Home, Dir: cwd, GOOS: runtime.GOOS, ConfigHome: os.Getenv("XDG_CONFIG_HOME")}
	var configs []mcpconfig.Found
	if *configFile != "" {
		abs, err := filepath.Abs(*configFile)
		if err != nil {
			return badInput(err)
		}
		configs = []mcpconfig.Found{mcpconfig.FoundAt(abs, where)}
	} else {
		configs = mcpconfig.Discover(where)
	}
	plan.FindPolicies(configs, runPolicy)
	r := (&initplan.Summary{Plan: plan, Load: runPolicy}).Status(configs)
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(r); err != nil {
			return failed(fmt.Errorf("status: %v", err))
		}
		return nil
	}
	writeStatus(os.Stdout, plan, r)
	return nil
}

// writeStatus prints the report for a person: one block per config, one
// line per server, the hook file, and a last line naming what is left
// unprotected.
func writeStatus(w io.Writer, plan *initplan.Plan, r initplan.Report) {
	if len(r.Configs) == 0 {
		fmt.Fprintln(w, "No MCP client config found for this project or user; bouncer init lists where it looks.")
		return
	}
	for i, c := range r.Configs {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "%s (%s): %s\n", c.Client, c.Scope, plan.Show(c.Path))
		if c.Error != "" {
			fmt.Fprintf(w, "  does not read: %s\n", c.Error)
		}
		if c.Error == "" && len(c.Servers) == 0 {
			fmt.Fprintln(w, "  no MCP servers in it")
		}
		for _, s := range c.Servers {
			fmt.Fprintf(w, "  %s: %s\n", s.Name, serverLine(plan, s))
		}
		if len(c.Servers) == 0 {
			continue
		}
		switch h := c.Hook; {
		case h == nil && hooks.ByHand(mcpconfig.Client(c.Client)):
			fmt.Fprintf(w, "  prompt hook: not installed by init for %s (docs/clients.md shows it)\n", c.Client)
		case h == nil && mcpconfig.Client(c.Client) != mcpconfig.UnknownClient:
			fmt.Fprintf(w, "  prompt hook: none: %s has none that bouncer reads, so a destination typed there is asked about\n", c.Client)
		case h == nil:
		case h.Error != "":
			fmt.Fprintf(w, "  prompt hook: %s does not read: %s\n", plan.Show(h.File), h.Error)
		default:
			hook := "none"
			if h.Prompt != "" {
				hook = "runs `" + h.Prompt + "`"
			}
			fmt.Fprintf(w, "  prompt hook (%s): %s\n", plan.Show(h.File), hook)
			if len(h.MissingDeny) > 0 {
				fmt.Fprintf(w, "  permissions.deny lacks %s: run bouncer init to add them\n", strings.Join(h.MissingDeny, ", "))
			}
		}
		if !hooks.HasEditRules(mcpconfig.Client(c.Client)) {
			fmt.Fprintf(w, "  its agent's own file tools: %s has no rules to keep them off Bouncer's files\n", c.Client)
		}
	}
	fmt.Fprintln(w)
	if len(r.Unprotected) == 0 {
		fmt.Fprintln(w, "Every server found is wrapped.")
		return
	}
	fmt.Fprintf(w, "Left unprotected, with nothing enforced: %s.\n", strings.Join(r.Unprotected, "; "))
}

// serverLine says in one line how a server stands.
func serverLine(plan *initplan.Plan, s initplan.ServerState) string {
	if !s.Wrapped || s.Unprotected != "" && s.Original == "" {
		return "NOT PROTECTED: " + s.Unprotected
	}
	var b strings.Builder
	b.WriteString("wrapped, launches " + s.Launches)
	switch s.Original {
	case "state":
		b.WriteString(", original in " + plan.Show(plan.Kept().Path()))
	case "command line":
		b.WriteString(" in front of the command after --")
	}
	var pols []string
	for _, p := range s.Policy {
		pols = append(pols, plan.Show(p))
	}
	if len(pols) == 0 {
		// A built-in pack applies to its own server only (Enforced
		// says which, if any), not to every server.
		b.WriteString("; policy: no policy file")
	} else {
		b.WriteString("; policy: " + strings.Join(pols, ", "))
	}
	b.WriteString("; " + s.Enforced)
	return b.String()
}
