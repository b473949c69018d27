package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/bouncer-mcp/bouncer/internal/approval"
	"github.com/bouncer-mcp/bouncer/internal/audit"
	"github.com/bouncer-mcp/bouncer/internal/bundle"
	"github.com/bouncer-mcp/bouncer/internal/mcpconfig"
	"github.com/bouncer-mcp/bouncer/internal/policy"
	"github.com/bouncer-mcp/bouncer/internal/proxy"
	"github.com/bouncer-mcp/bouncer/internal/report"
	sandboxpkg "github.com/bouncer-mcp/bouncer/internal/sandbox"
	"github.com/bouncer-mcp/bouncer/internal/session"
	"github.com/bouncer-mcp/bouncer/internal/setup"
)

const runSynopsis = `bouncer run [--policy FILE]... [--name NAME] [--sandbox auto|strict|off] [--trust FILE] [--observe] -- COMMAND [ARG]...
       bouncer run --config FILE --server NAME [--policy FILE]... [other flags]`

// stopGrace is how long the upstream gets after its stdin closes, and again
// after SIGTERM, before the next step.
const stopGrace = 2 * time.Second

// Hooks for the packages that confine and verify. Their owners set them from
// an init function in their own cmd file; the defaults below fail closed
// where doing nothing would be a silent weakening.
var (
	// prepareSandbox may rewrite the upstream command before it starts
	// (the sandbox launcher re-execs itself around it), keeping the
	// upstream away from stateDir. An error exits 2.
	prepareSandbox = func(mode string, pol *policy.Policy, stateDir string, cmd *proxy.Command) error { return nil }

	// applySandbox confines the proxy itself once the upstream runs. It
	// returns what it applied, for one line on stderr. An error exits 2
	// (strict mode with no kernel support, say); the upstream is stopped.
	applySandbox = func(mode string, pol *policy.Policy, stateDir string, up *proxy.Process) (applied string, err error) {
		if mode == "strict" {
			return "", errors.New("--sandbox strict: sandboxing is not available in this build")
		}
		return "", nil
	}
)

// cmdRun proxies one MCP server on stdio, enforcing the policy.
func cmdRun(args []string) int {
	fs, home := newFlags("run", runSynopsis)
	var policies multiFlag
	fs.Var(&policies, "policy", "policy `FILE` (repeatable; later files override earlier ones)")
	name := fs.String("name", "", "server `NAME` in audit lines and approval codes (default: the config's server name, else the command's base name)")
	sandbox := fs.String("sandbox", "auto", "confinement: auto, strict or off")
	trust := fs.String("trust", "", "trust configuration `FILE` for signed policy")
	observe := fs.Bool("observe", false, "decide and audit every call as enforcing would (enforced: false), but forward it anyway and ask nobody: for rolling out")
	configFile := fs.String("config", "", "MCP client config `FILE` whose server entry was wrapped by bouncer init")
	serverName := fs.String("server", "", "server `NAME` in --config")
	project := fs.String("project", "", "with --config: the server is in the config's projects[`DIR`].mcpServers (Claude Code's ~/.claude.json)")
	if done, status := parseFlags(fs, args); done {
		return status
	}
	rest := fs.Args()
	switch *sandbox {
	case "auto", "strict", "off":
	default:
		return usageError(fmt.Sprintf("--sandbox %q: must be auto, strict or off", *sandbox))
	}
	var upCmd proxy.Command
	switch {
	case *configFile != "" || *serverName != "":
		if *configFile == "" || *serverName == "" {
			return usageError("--config and --server go together")
		}
		if len(rest) > 0 {
			return usageError("give either --config/--server or -- COMMAND, not both")
		}
		c, base, err := upstreamFromConfig(*configFile, *project, *serverName)
		if err != nil {
			errorf("%v", err)
			return exitUsage
		}
		upCmd = c
		// A relative --policy is relative to where a relative --config
		// was found (the project's root), so a wrapped entry a team
		// commits names both without an absolute path.
		for i, p := range policies {
			if !filepath.IsAbs(p) {
				policies[i] = filepath.Join(base, p)
			}
		}
		if *name == "" {
			*name = *serverName
		}
	case *project != "":
		return usageError("--project goes with --config and --server")
	case len(rest) == 0:
		return usageError("no upstream: give -- COMMAND [ARG]... or --config FILE --server NAME")
	default:
		upCmd = proxy.Command{Path: rest[0], Args: rest[1:]}
		if *name == "" {
			*name = filepath.Base(rest[0])
		}
	}

	// All policy is verified and loaded before anything starts.
	dir, err := stateDir(*home)
	if err != nil {
		errorf("%v", err)
		return exitUsage
	}
	if err := ensureStateDir(dir); err != nil {
		errorf("%v", err)
		return exitFail
	}
	// The trust configuration: the signed-policy check of each file's
	// exact bytes, and whether observe mode is allowed.
	var check func(file string, data []byte) error
	tr, err := bundle.LoadTrust(*trust, dir)
	switch {
	case errors.Is(err, bundle.ErrNoTrust):
		tr = nil
	case err != nil:
		errorf("%v", err)
		return exitUsage
	default:
		check = tr.CheckPolicy
	}
	if *observe && tr != nil {
		if file, on := tr.Enforce(); on {
			errorf("--observe: %s sets enforce: true, so this machine enforces its policy; observe mode is for a rollout that has not reached it (remove --observe)", file)
			return exitUsage
		}
	}
	workDir := upCmd.Dir
	if workDir == "" {
		workDir, _ = os.Getwd()
	}
	dec, err := setup.Load(setup.Config{Policies: policies, Verify: check, StateDir: dir, WorkDir: workDir})
	if err != nil {
		errorf("%v", err)
		return exitUsage
	}
	pol := dec.Policy
	// Before the sandbox: finding the client reads other processes' /proc.
	dec.JoinClient(dir, func(msg string) { errorf("%s", msg) })
	// The sandboxed proxy may write files in its state directory but not
	// make directories there: make the one for the pinned tool list now.
	if err := os.MkdirAll(filepath.Dir(report.PinnedPath(dir, *name)), 0o700); err != nil {
		errorf("%v", err)
		return exitFail
	}
	if err := resolveCommand(&upCmd); err != nil {
		errorf("%v", err)
		return exitUsage
	}
	if pol.Sandbox != nil && *sandbox != "off" {
		if why := sandboxpkg.Unworkable(upCmd.Path, upCmd.Args, setup.Confinement(pol, dir)); why != "" {
			errorf("warning: %s: sandbox: %s", pol.Sandbox.Source, why)
		}
	}
	if err := prepareSandbox(*sandbox, pol, dir, &upCmd); err != nil {
		errorf("%v", err)
		return exitUsage
	}
	// A client that vanishes must not kill us with SIGPIPE before the
	// upstream is stopped; a client that signals us stops the session.
	signal.Ignore(syscall.SIGPIPE)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer stop()

	up, err := proxy.Start(upCmd, os.Stderr)
	if err != nil {
		errorf("%v", err)
		return exitFail
	}
	defer up.Stop(stopGrace)
	// Opened while the upstream starts up (nothing is forwarded before the
	// log is open, and a log that can't be opened stops the session).
	auditLog, err := audit.Open(filepath.Join(dir, "audit.jsonl"))
	if err != nil {
		errorf("%v", err)
		return exitFail
	}
	defer auditLog.Close()
	applied, err := applySandbox(*sandbox, pol, dir, up)
	if err != nil {
		errorf("%v", err)
		return exitUsage
	}
	if applied != "" {
		errorf("sandbox: %s", applied)
	}
	if *observe {
		errorf("OBSERVE MODE: every call is decided and audited (enforced: false) but forwarded whatever the verdict, and nobody is asked. Nothing is blocked. bouncer log shows what would have been.")
	}

	p := proxy.New(proxy.Config{
		Server:  *name,
		Engine:  dec.Engine(*name),
		Store:   dec.Session.Output(*name),
		Trusted: dec.Session.TrustedOutput(*name),
		Observe: *observe,
		Policy:  pol.Digest(version),
		OnPinned: func(tools []json.RawMessage) {
			if err := report.SavePinned(dir, *name, tools); err != nil {
				errorf("could not keep the pinned tool list for bouncer report: %v", err)
			}
			for _, w := range policy.Lint(pol, toolNames(tools)) {
				errorf("warning: %s", w)
			}
		},
		Remember: func(dest string) error {
			return session.OpenRemembered(dir).Add(*name, dest, "client", time.Now())
		},
		Audit:     auditLog,
		Approvals: approval.Open(filepath.Join(dir, "pending.json"), nil),
		Session:   newSessionID(),
		Log:       os.Stderr,
	})
	runErr := p.Run(ctx, proxy.Stdio(), up)
	switch {
	case runErr == nil:
		return exitOK // the client closed stdin
	case errors.Is(runErr, context.Canceled):
		return exitOK // SIGTERM/SIGINT/SIGHUP: an ordinary stop
	case errors.Is(runErr, proxy.ErrUpstreamOutput):
		errorf("upstream %s wrote something that is not an MCP message on its stdout (%v). "+
			"An MCP server must write only JSON-RPC messages to stdout, and its logs to stderr: check its command, arguments and log settings. The session is closed.",
			upCmd.Path, strings.TrimPrefix(runErr.Error(), proxy.ErrUpstreamOutput.Error()+": "))
		return exitFail
	case errors.Is(runErr, proxy.ErrUpstreamExited):
		select {
		case <-up.Done():
		case <-time.After(stopGrace):
		}
		status := "it is still running"
		if e := up.ExitError(); e == nil {
			status = "exit status 0"
		} else {
			status = e.Error()
		}
		errorf("upstream %s stopped unexpectedly (%s): %v", upCmd.Path, status, runErr)
		return exitFail
	default:
		errorf("%v", runErr)
		return exitFail
	}
}

// resolveCommand finds the upstream program in PATH (the entry's PATH, if
// its env sets one, as the client would have used it) so that a missing
// program is reported before anything runs.
func resolveCommand(c *proxy.Command) error {
	if strings.Contains(c.Path, "/") {
		return nil // exec uses it as is (relative to Dir)
	}
	path, own := os.Getenv("PATH"), true
	for _, kv := range c.Env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path, own = v, false // the last one wins, as in exec
		}
	}
	if own {
		p, err := exec.LookPath(c.Path)
		if err != nil {
			return fmt.Errorf("upstream: %w", err)
		}
		c.Path = p
		return nil
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			dir = "."
		}
		cand := filepath.Join(dir, c.Path)
		if fi, err := os.Stat(cand); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			c.Path = cand
			return nil
		}
	}
	return fmt.Errorf("upstream: %q not found in the entry's PATH", c.Path)
}

// newSessionID returns 16 random hex digits naming this session.
func newSessionID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// upstreamFromConfig returns the command for the x-bouncer-upstream entry
// of server name in a client config (in its projects[project] block when
// project is set): its command and args, its env laid over ours (as the
// client would have done), and its cwd, with the client's ${...} variables
// expanded from our environment, which is the one the client gave us. base
// is the directory relative --policy files are resolved against.
func upstreamFromConfig(file, project, name string) (c proxy.Command, base string, err error) {
	r, err := mcpconfig.Resolve(mcpconfig.Lookup{File: file, Project: project, Server: name, Getenv: os.LookupEnv})
	if err != nil {
		return proxy.Command{}, "", err
	}
	e := r.Entry
	if e.Command == "" {
		return proxy.Command{}, "", fmt.Errorf("%s: server %q is a remote server (url %s); bouncer run can't reach remote servers yet", r.File, name, e.URL)
	}
	c = proxy.Command{Path: e.Command, Args: e.Args, Dir: e.Cwd}
	if len(e.Env) > 0 {
		c.Env = os.Environ()
		keys := make([]string, 0, len(e.Env))
		for k := range e.Env {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			c.Env = append(c.Env, k+"="+e.Env[k]) // exec keeps the last of duplicate keys
		}
	}
	return c, r.Base, nil
}

// toolNames lists the names in a tools/list result's tools.
func toolNames(tools []json.RawMessage) []string {
	names := make([]string, 0, len(tools))
	for _, raw := range tools {
		var t struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(raw, &t) == nil && t.Name != "" {
			names = append(names, t.Name)
		}
	}
	return names
}
