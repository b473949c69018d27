package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/bouncer-mcp/bouncer/internal/audit"
	"github.com/bouncer-mcp/bouncer/internal/fsresolve"
	"github.com/bouncer-mcp/bouncer/internal/hooks"
	"github.com/bouncer-mcp/bouncer/internal/mcpconfig"
	"github.com/bouncer-mcp/bouncer/internal/policy"
	"github.com/bouncer-mcp/bouncer/internal/report"
	"github.com/bouncer-mcp/bouncer/internal/setup"
	"github.com/bouncer-mcp/bouncer/internal/suggest"
	"github.com/bouncer-mcp/bouncer/internal/vouch"
)

const policySynopsis = `bouncer policy push (--key PRIVATE.pem | --set-bundle BUNDLE | --print-statement) [--version TIME] [--expires DURATION|TIME] [--trust FILE] [--plain-http] FILE... REF
       bouncer policy pull [--trust FILE] [--dir DIR] [--allow-downgrade] [--plain-http] [REF]
       bouncer policy digest [--policy FILE]... [--policy-dir DIR] [--trust FILE]
       bouncer policy suggest [--audit FILE] [--since DURATION|DATE] [--policy FILE]... [--policy-dir DIR] [--trust FILE] [--json]

push stores the policy files and one signature over the set (the files, their order and
digests, REF's repository and a version, by default the time of the push) as one OCI artifact
at REF (REGISTRY/REPOSITORY:TAG). pull resolves REF (default: policy_artifact in the trust
file) to a digest, fetches the artifact by it, verifies the set's signature under the trust
configuration and that the files are exactly the set it names, refuses a set older than the
one installed (unless --allow-downgrade) and an expired one (--expires, or the trust file's
max_age past its version), and only then installs the set atomically into DIR
(default $BOUNCER_HOME/policy). A failed pull changes nothing and exits 1. bouncer run
--policy-dir DIR loads the installed set, checked again.
digest prints the digest of the effective policy set, the value every audit line carries as
"policy" (the built-in packs, each file's bytes in load order, and this binary's version):
the policy bouncer run loads for the same --policy, --policy-dir and --trust, verified as
run verifies it.
suggest reads the audit log (bouncer run --observe writes the evidence) and prints a policy
file to load after the --policy files, that lets the observed legitimate work through; see
docs/rollout.md.`

func cmdPolicy(args []string) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		if len(args) > 0 && (args[0] == "--help" || args[0] == "-h" || args[0] == "-help") {
			fmt.Fprintf(os.Stdout, "Usage: %s\n", policySynopsis)
			return nil
		}
		return usageErr("%s", "policy: give push, pull, digest or suggest; see bouncer policy --help")
	}
	switch args[0] {
	case "push":
		return policyPush(args[1:])
	case "pull":
		return policyPull(args[1:])
	case "digest":
		return cmdPolicyDigest(args[1:])
	case "suggest":
		return cmdPolicySuggest(args[1:])
	}
	return usageErr("%s", fmt.Sprintf("policy: unknown %q; give push, pull, digest or suggest", args[0]))
}

func cmdPolicyDigest(args []string) error {
	fs, home := newFlags("policy digest", policySynopsis)
	var pf policyFlags
	pf.register(fs)
	if done, err := parseFlags(fs, args); done {
		return err
	}
	if fs.NArg() > 0 {
		return usageErr("%s", fmt.Sprintf("policy digest: unexpected argument %q", fs.Arg(0)))
	}
	pol, err := loadInForce(&pf, *home, "policy digest")
	if err != nil {
		return err
	}
	fmt.Println(pol.Digest(version))
	return nil
}

// loadInForce loads the policy run puts in force for the flags
// (setup.LoadPolicy), for a command that describes it.
func loadInForce(pf *policyFlags, home, cmd string) (*policy.Policy, error) {
	dir, err := stateDir(home)
	if err != nil {
		return nil, badInput(fmt.Errorf("%s: %v", cmd, err))
	}
	in, err := setup.LoadPolicy(pf.sources(dir, ""))
	if err != nil {
		return nil, badInput(fmt.Errorf("%v", err))
	}
	return in.Policy, nil
}

// suggestPolicy is the policy suggest starts from: the flags' when they
// name any policy, else the one `bouncer run` loads for the wrapped entries
// of this user's and this project's MCP configs whose servers the log
// names (all of them must load the same files; else the user says which
// with --policy). It also returns every config file found, and their hook
// files: Bouncer's own, which no suggested prefix may hold.
func suggestPolicy(pf *policyFlags, dir string, entries []audit.Entry) (*setup.InForce, []string, error) {
	cwd, _ := os.Getwd()
	homeDir, _ := os.UserHomeDir()
	var configs []string
	type loaded struct {
		in      *setup.InForce
		servers []string
	}
	byFiles := map[string]*loaded{}
	logged := map[string]bool{}
	for _, e := range entries {
		logged[e.Server] = true
	}
	for _, f := range mcpconfig.Candidates(mcpconfig.Where{Home: homeDir, Dir: cwd, GOOS: runtime.GOOS, ConfigHome: os.Getenv("XDG_CONFIG_HOME")}) {
		cfg, err := mcpconfig.Load(f.Path, mcpconfig.Kept{State: dir})
		if err != nil {
			continue // a config that isn't there, or can't be read
		}
		configs = append(configs, f.Path, f.Path+".bak")
		if h, _, ok := hooks.File(f.Path, homeDir); ok {
			configs = append(configs, h, h+".bak")
		}
		if pf.given() {
			continue
		}
		servers, err := cfg.Servers(f.Project)
		if err != nil {
			continue
		}
		x := mcpconfig.Expander{Client: cfg.Client, Workspace: f.Workspace, Home: homeDir, Getenv: os.LookupEnv}
		base := f.Workspace
		if base == "" {
			base = cwd
		}
		for _, srv := range servers {
			if !srv.Wrapped || !logged[srv.Name] {
				continue
			}
			args := make([]string, len(srv.Args))
			for i, a := range srv.Args {
				if v, err := x.Expand(a); err == nil {
					a = v
				}
				args[i] = a
			}
			in, err := runArgsPolicy(args, base)
			if err != nil {
				return nil, nil, badInput(fmt.Errorf("policy suggest: server %s of %s: its policy does not load (%v); fix it, or give --policy", srv.Name, f.Path, err))
			}
			k := strings.Join(in.Policy.Files, "\x00")
			if byFiles[k] == nil {
				byFiles[k] = &loaded{in: in}
			}
			byFiles[k].servers = append(byFiles[k].servers, srv.Name)
		}
	}
	if pf.given() {
		in, err := setup.LoadPolicy(pf.sources(dir, ""))
		if err != nil {
			return nil, nil, badInput(err)
		}
		return in, configs, nil
	}
	switch len(byFiles) {
	case 0:
		fmt.Fprintln(os.Stderr, "policy suggest: no wrapped entry of this user's or project's MCP configs runs a server of this log: starting from the built-in packs (give --policy to start from yours)")
		in, err := setup.LoadPolicy(pf.sources(dir, ""))
		if err != nil {
			return nil, nil, badInput(err)
		}
		return in, configs, nil
	case 1:
		for _, l := range byFiles {
			fmt.Fprintf(os.Stderr, "policy suggest: starting from the policy bouncer run loads for %s: %s\n", strings.Join(l.servers, ", "), describeFiles(l.in.Policy.Files))
			return l.in, configs, nil
		}
	}
	var ways []string
	for _, l := range byFiles {
		ways = append(ways, fmt.Sprintf("%s load %s", strings.Join(l.servers, ", "), describeFiles(l.in.Policy.Files)))
	}
	sort.Strings(ways)
	return nil, nil, usageErr("%s", "policy suggest: the log's servers load different policies ("+strings.Join(ways, "; ")+"); give the one to start from with --policy")
}

func describeFiles(files []string) string {
	if len(files) == 0 {
		return "the built-in packs alone"
	}
	return strings.Join(files, ", ")
}

func cmdPolicySuggest(args []string) error {
	fs, home := newFlags("policy suggest", policySynopsis)
	var pf policyFlags
	pf.register(fs)
	auditFile := fs.String("audit", "", "the audit log `FILE` (default STATE_DIR/audit.jsonl)")
	since := fs.String("since", "", "only lines from `DURATION` ago (7d, 48h) or a DATE (2026-12-01) on")
	asJSON := fs.Bool("json", false, "print the evidence as JSON, for a dashboard, instead of the policy file")
	if done, err := parseFlags(fs, args); done {
		return err
	}
	if fs.NArg() > 0 {
		return usageErr("%s", fmt.Sprintf("policy suggest: unexpected argument %q", fs.Arg(0)))
	}
	var from time.Time
	if *since != "" {
		t, err := parseSince(*since, time.Now())
		if err != nil {
			return usageErr("%s", "policy suggest: --since: "+err.Error())
		}
		from = t
	}
	path := *auditFile
	if path == "" {
		dir, err := stateDir(*home)
		if err != nil {
			return badInput(fmt.Errorf("policy suggest: %v", err))
		}
		path = filepath.Join(dir, "audit.jsonl")
	}
	entries, err := readAuditLenient(path)
	if errors.Is(err, os.ErrNotExist) {
		return failed(fmt.Errorf("policy suggest: %s does not exist: no audit log to read (run with --observe first, or give --audit FILE)", path))
	}
	if err != nil {
		return failed(fmt.Errorf("policy suggest: %v", err))
	}
	var in []audit.Entry
	for _, e := range entries {
		if from.IsZero() || !e.TS.Before(from) {
			in = append(in, e)
		}
	}
	// The policy in effect, as run loads it: the suggestion restates its
	// entries. Without --policy or --policy-dir, that is the policy the
	// wrapped entries of this user's and project's configs load for the
	// log's servers, as run loads it: the packs alone would drop what init
	// wrote (its path rules) from every entry restated.
	dir, err := stateDir(*home)
	if err != nil {
		return badInput(fmt.Errorf("policy suggest: %v", err))
	}
	inForce, configs, err := suggestPolicy(&pf, dir, in)
	if err != nil {
		return err
	}
	// The user's own home is never suggested as a prefix, wherever it lies;
	// nor is a prefix that holds Bouncer's own files, as run protects them,
	// or the client configs that launch it.
	var homes []string
	if h, err := os.UserHomeDir(); err == nil {
		homes = append(homes, h)
	}
	written, err := setup.InitFiles(dir)
	if err != nil {
		return failed(fmt.Errorf("policy suggest: %v", err))
	}
	var own []string
	for _, o := range setup.OwnPaths(setup.OwnSources{StateDir: dir, InForce: inForce.OwnFiles(), Vouch: vouch.Files(dir), Launch: configs, Init: written}) {
		own = append(own, o.Path)
	}
	// The pack each server's proxy applied, kept with its pinned tool list.
	packs := map[string]string{}
	lists, _ := report.LoadPinned(dir, "")
	for _, l := range lists {
		packs[l.Server] = l.Pack
	}
	res := suggest.Suggest(inForce.Policy, in, suggest.Options{Resolve: fsresolve.Existing, Homes: homes, Own: own, Packs: packs})
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		if err := enc.Encode(res); err != nil {
			return failed(fmt.Errorf("policy suggest: %v", err))
		}
		return nil
	}
	period := path
	if len(in) > 0 {
		period = fmt.Sprintf("%s, %s to %s", path, in[0].TS.UTC().Format(time.DateOnly), in[len(in)-1].TS.UTC().Format(time.DateOnly))
	}
	if err := res.WriteYAML(os.Stdout, period); err != nil {
		return failed(fmt.Errorf("policy suggest: %v", err))
	}
	return nil
}
