package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/term"

	"github.com/bouncer-mcp/bouncer/internal/approval"
	"github.com/bouncer-mcp/bouncer/internal/audit"
	"github.com/bouncer-mcp/bouncer/internal/mcpconfig"
	"github.com/bouncer-mcp/bouncer/internal/misconfig"
	"github.com/bouncer-mcp/bouncer/internal/policy"
	"github.com/bouncer-mcp/bouncer/internal/proxy"
	"github.com/bouncer-mcp/bouncer/internal/record"
	"github.com/bouncer-mcp/bouncer/internal/report"
	"github.com/bouncer-mcp/bouncer/internal/sandbox"
	"github.com/bouncer-mcp/bouncer/internal/session"
	"github.com/bouncer-mcp/bouncer/internal/setup"
	"github.com/bouncer-mcp/bouncer/internal/statefile"
	"github.com/bouncer-mcp/bouncer/internal/transport"
)

const runSynopsis = `bouncer run [--policy FILE]... [--policy-dir DIR] [--name NAME] [--pack PACK] [--sandbox auto|strict|off] [--trust FILE] [--observe] [--record FILE] -- COMMAND [ARG]...
       bouncer run [--policy FILE]... [--name NAME] --url URL [--header-file FILE] [--header 'Name: value']... [--transport auto|streamable|sse]
       bouncer run --config FILE --server NAME [--policy FILE]... [other flags]`

// stopGrace is how long the upstream gets after its stdin closes, and again
// after SIGTERM, before the next step.
const stopGrace = 2 * time.Second

// runFlags are bouncer run's flags.
type runFlags struct {
	policyFlags
	home, name, sandbox             string
	configFile, serverName, project string
	remoteURL, transport            string
	record                          string
	observe                         bool
	// pack is the built-in pack written for the server: --pack, else
	// the one policy.Recognize knows the upstream's command by, else "".
	pack                 string
	headers, headerFiles multiFlag
	rest                 []string
	// base is where a relative --config was found, which a relative
	// --policy is resolved against (policyFlags.sources); "" without
	// --config.
	base string
	// launch is the config --config names, for setup: its files are
	// Bouncer's own; nil without --config.
	launch *setup.Launch
}

// cmdRun proxies one MCP server on stdio, enforcing the policy.
//
// A configuration it can't run under (a policy or trust file that does
// not load, a config entry it can't launch: exit status 2) stops it before
// the upstream starts. On a terminal it exits at once, as the contract
// says. Started by an MCP client (stdin not a terminal), it serves the
// error instead (package misconfig) until the client goes, and then exits
// 2: a client shows a server that exits at once only as "Failed to
// connect", and keeps stderr out of sight.
func cmdRun(args []string) error {
	f, err := parseRunFlags(args)
	if err == nil && f != nil {
		err = f.run()
	}
	if status(err) != exitUsage || term.IsTerminal(int(os.Stdin.Fd())) {
		return err
	}
	// --name is set from --server only once the entry loads; a problem
	// with the entry itself still names the server the client knows.
	name := "(unnamed)"
	switch {
	case f == nil:
	case f.name != "":
		name = f.name
	case f.serverName != "":
		name = f.serverName
	}
	errorf("%v", err)
	errorf("run: serving this error to the MCP client as the one tool of server %s (%s), and in every call's result; no upstream is started and nothing is forwarded", show(name), misconfig.ToolName)
	signal.Ignore(syscall.SIGPIPE)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer stop()
	serr := misconfig.Serve(ctx, &mcp.StdioTransport{}, misconfig.Problem{
		Server: name, Err: err, Version: version, BlockedPrefix: proxy.BlockedPrefix,
		Fix: "Fix what it names, then restart the MCP client or reconnect this server in it " +
			"(in a terminal, bouncer check --policy FILE checks a policy file, and this bouncer run command prints the same error)",
	})
	if serr != nil && !errors.Is(serr, context.Canceled) {
		errorf("run: serving the error: %v", serr)
	}
	return silently(exitUsage)
}

// run is bouncer run once its flags are read.
func (f *runFlags) run() error {
	up, err := f.upstream()
	if err != nil {
		return err
	}
	// All policy is verified and loaded before anything starts.
	dir, err := stateDir(f.home)
	if err != nil {
		return badInput(err)
	}
	if err := ensureStateDir(dir); err != nil {
		return failed(err)
	}
	dec, err := f.loadPolicy(dir, up)
	if err != nil {
		return err
	}
	f.recognize(up)
	// Before the sandbox: finding the client reads other processes' /proc.
	dec.JoinClient(dir, func(msg string) { errorf("%s", msg) })
	// The sandboxed proxy may write files in its state directory but not
	// make directories there: make the one for the pinned tool list now.
	pinned := filepath.Dir(report.PinnedPath(dir, f.name))
	if err := statefile.Dir(pinned); err != nil {
		return failed(fmt.Errorf("%s: %w", pinned, err))
	}
	launch, err := prepareUpstream(f.sandbox, dec.Policy, dir, dec.Own, up)
	if err != nil {
		return err
	}
	// Opened before the sandbox, which would keep the proxy from opening
	// it; the upstream does not inherit it.
	tape, err := f.openRecord()
	if err != nil {
		return err
	}
	if tape != nil {
		defer tape.Close()
	}

	// A client that vanishes must not kill us with SIGPIPE before the
	// upstream is stopped; a client that signals us stops the session.
	signal.Ignore(syscall.SIGPIPE)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer stop()

	up.cmd.Name = f.name // for the warnings about its stdout
	conn, reach, closeUp, err := startUpstream(ctx, up, dir, f.sandbox != "off", launch)
	if err != nil {
		return failed(err)
	}
	defer closeUp()
	// Opened while the upstream starts up (nothing is forwarded before the
	// log is open, and a log that can't be opened stops the session).
	auditLog, err := audit.Open(filepath.Join(dir, "audit.jsonl"))
	if err != nil {
		return failed(err)
	}
	defer auditLog.Close()
	applied, err := confineProxy(f.sandbox, dec.Policy, dir, reach, launch)
	if err != nil {
		return badInput(err)
	}
	errorf("sandbox: %s", applied)
	if reach.Seal != nil && f.sandbox != "off" {
		reach.Seal()
	}
	if f.observe {
		errorf("OBSERVE MODE: every call is decided and audited (enforced: false) but forwarded whatever the verdict, and nobody is asked. Nothing is blocked. bouncer log shows what would have been.")
	}
	cfg := f.proxyConfig(dec, dir, auditLog)
	if tape != nil {
		cfg.Tape = tape
	}
	p := proxy.New(cfg)
	return up.ended(p.Run(ctx, transport.Stdio(), conn))
}

// openRecord opens --record's file, or returns nil without one.
func (f *runFlags) openRecord() (*record.Tape, error) {
	if f.record == "" {
		return nil, nil
	}
	tape, err := record.Open(f.record, f.name, func(msg string) { errorf("warning: %s", msg) })
	if err != nil {
		return nil, badInput(fmt.Errorf("--record: %v", err))
	}
	return tape, nil
}

// parseRunFlags reads the flags. A nil runFlags with a nil error means
// --help was printed.
func parseRunFlags(args []string) (*runFlags, error) {
	fs, f, home := runFlagSet()
	if done, err := parseFlags(fs, args); done {
		return nil, err
	}
	f.home, f.rest = *home, fs.Args()
	switch f.sandbox {
	case "auto", "strict", "off":
	default:
		return nil, usageErr("--sandbox %q: must be auto, strict or off", f.sandbox)
	}
	if f.pack != "" {
		if err := policy.CheckPack(f.pack); err != nil {
			return nil, usageErr("--pack: %v", err)
		}
	}
	switch f.transport {
	case "", transport.Auto, transport.Streamable, transport.SSE:
	default:
		return nil, usageErr("--transport %q: must be auto, streamable or sse", f.transport)
	}
	if f.remoteURL == "" && (len(f.headers) > 0 || len(f.headerFiles) > 0 || f.transport != "") && f.configFile == "" {
		return nil, usageErr("--header, --header-file and --transport go with --url (or a --config entry with a url)")
	}
	return f, nil
}

// runFlagSet is run's flag set, with the runFlags and --home it fills.
func runFlagSet() (*flag.FlagSet, *runFlags, *string) {
	f := &runFlags{}
	fs, home := newFlags("run", runSynopsis)
	f.register(fs)
	fs.StringVar(&f.name, "name", "", "server `NAME` in audit lines and approval codes (default: the config's server name, else the command's base name)")
	fs.StringVar(&f.sandbox, "sandbox", "auto", "confinement `MODE`: auto (what the kernel offers), strict (exit 2 without Landlock and seccomp) or off")
	fs.BoolVar(&f.observe, "observe", false, "decide and audit every call as enforcing would (enforced: false), but forward it anyway and ask nobody: for rolling out")
	fs.StringVar(&f.configFile, "config", "", "MCP client config `FILE` whose server entry was wrapped by bouncer init")
	fs.StringVar(&f.serverName, "server", "", "server `NAME` in --config")
	fs.StringVar(&f.project, "project", "", "with --config: the server is in the config's projects[`DIR`].mcpServers (Claude Code's ~/.claude.json)")
	fs.StringVar(&f.remoteURL, "url", "", "reach the remote MCP server at `URL` (streamable HTTP, or the older HTTP+SSE) instead of starting a command")
	fs.Var(&f.headers, "header", "with --url: send `'Name: value'` with every request (repeatable; values are kept out of logs and messages; ${VAR} is taken from the environment, so quote it for the shell; a credential written out here is visible to other users: use --header-file)")
	fs.Var(&f.headerFiles, "header-file", "with --url: send the headers of `FILE` (one \"Name: value\" a line; yours, mode 0600) with every request")
	fs.StringVar(&f.transport, "transport", "", "with --url: the `TRANSPORT`: auto (streamable HTTP, falling back to HTTP+SSE; the default), streamable or sse")
	fs.StringVar(&f.pack, "pack", "", "the built-in `PACK` written for this server (gmail, filesystem, ...), when bouncer does not know it by its command (a remote server, a local build); "+
		"a pack applies to the server it was written for only")
	fs.StringVar(&f.record, "record", "", "append the session to `FILE` as bouncer check replays it: every call judged, every server output, every approval. "+
		"The outputs may hold secrets (mail, files, tokens): the file is 0600; keep it as you keep that data")
	return fs, f, home
}

// upstreamSpec is the server bouncer run proxies: a command to start, or
// a remote server to reach.
type upstreamSpec struct {
	cmd    transport.Command
	remote *transport.RemoteConfig
	proc   *transport.Process // once started
}

// upstream decides the upstream from the flags: --config and --server,
// --url, or -- COMMAND. It sets the default --name.
func (f *runFlags) upstream() (*upstreamSpec, error) {
	up := &upstreamSpec{}
	switch {
	case f.configFile != "" || f.serverName != "":
		if f.configFile == "" || f.serverName == "" {
			return nil, usageErr("--config and --server go together")
		}
		if len(f.rest) > 0 || f.remoteURL != "" {
			return nil, usageErr("give one of --config/--server, --url or -- COMMAND")
		}
		state, err := stateDir(f.home)
		if err != nil {
			return nil, badInput(err)
		}
		c, rc, r, err := upstreamFromConfig(f.configFile, f.project, f.serverName, state)
		if err != nil {
			return nil, badInput(err)
		}
		base := r.Base
		f.launch = &setup.Launch{File: r.File, Project: f.project, Base: base, Sources: runArgsSources}
		up.cmd, up.remote = c, rc
		if rc == nil && (len(f.headers) > 0 || len(f.headerFiles) > 0 || f.transport != "") {
			return nil, usageErr("--header, --header-file and --transport go with a remote server; %q in %s has a command", f.serverName, f.configFile)
		}
		if rc != nil {
			if err := f.addHeaders(rc.Headers, base); err != nil {
				return nil, err
			}
			if f.transport != "" {
				rc.Transport = f.transport
			}
		}
		// A relative --policy is relative to where a relative --config
		// was found (the project's root): see policyFlags.sources.
		f.base = base
		if f.name == "" {
			f.name = f.serverName
		}
	case f.project != "":
		return nil, usageErr("--project goes with --config and --server")
	case f.remoteURL != "":
		if len(f.rest) > 0 {
			return nil, usageErr("give either --url or -- COMMAND, not both")
		}
		if u, err := url.Parse(f.remoteURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, usageErr("--url: give the server's MCP endpoint as an http:// or https:// URL")
		}
		up.remote = &transport.RemoteConfig{URL: f.remoteURL, Headers: http.Header{}, Transport: f.transport}
		if err := f.addHeaders(up.remote.Headers, ""); err != nil {
			return nil, err
		}
		if f.name == "" {
			f.name = remoteName(f.remoteURL)
		}
	case len(f.rest) == 0:
		return nil, usageErr("no upstream: give -- COMMAND [ARG]..., --url URL, or --config FILE --server NAME")
	default:
		up.cmd = transport.Command{Path: f.rest[0], Args: f.rest[1:]}
		if f.name == "" {
			f.name = filepath.Base(f.rest[0])
		}
	}
	return up, nil
}

// addHeaders adds the --header-file and --header flags to h, in that
// order. A relative --header-file is relative to base ("" for the
// working directory), as a relative --policy is.
func (f *runFlags) addHeaders(h http.Header, base string) error {
	for _, p := range f.headerFiles {
		if base != "" && !filepath.IsAbs(p) {
			p = filepath.Join(base, p)
		}
		if err := addHeaderFile(h, p); err != nil {
			return badInput(err)
		}
	}
	if err := addHeaders(h, f.headers, os.LookupEnv); err != nil {
		return usageErr("%v", err)
	}
	return nil
}

// loadPolicy loads the policy in force (setup.LoadPolicy: the trust
// configuration, an installed set, then the --policy files, each file's
// exact bytes verified before they are parsed), and refuses --observe
// where a trust file says enforce: true.
func (f *runFlags) loadPolicy(dir string, up *upstreamSpec) (*setup.Decider, error) {
	workDir := up.cmd.Dir
	if workDir == "" {
		workDir, _ = os.Getwd()
	}
	dec, err := setup.Load(setup.Config{Sources: f.sources(dir, f.base), WorkDir: workDir, Launch: f.launch})
	if err != nil {
		return nil, badInput(err)
	}
	if f.observe && dec.Trust != nil {
		if file, on := dec.Trust.Enforce(); on {
			return nil, usageErr("--observe: %s sets enforce: true, so this machine enforces its policy; observe mode is for a rollout that has not reached it (remove --observe)", file)
		}
	}
	return dec, nil
}

// prepareUpstream readies a stdio upstream's command (found in PATH) and
// plans its start (planUpstreamSandbox), or says that the sandbox key does
// not apply to a remote one. In strict mode it
// refuses before anything starts if the kernel can't confine the proxy.
func prepareUpstream(mode string, pol *policy.Policy, dir string, own []string, up *upstreamSpec) (*launchPlan, error) {
	if up.remote != nil {
		if pol.Sandbox != nil {
			errorf("warning: %s: sandbox: the key confines a server bouncer starts; this one is remote, so it does not apply", pol.Sandbox.Source)
		}
		// No policy: there is no server process to confine, only the
		// strict mode's check that the kernel can confine the proxy.
		l, err := planUpstreamSandbox(mode, nil, dir, nil, &up.cmd)
		return l, badInputIf(err)
	}
	if err := resolveCommand(&up.cmd); err != nil {
		return nil, badInput(err)
	}
	if pol.Sandbox != nil && mode != "off" {
		if why := sandbox.Unworkable(up.cmd.Path, up.cmd.Args, setup.Confinement(pol, dir, own)); why != "" {
			errorf("warning: %s: sandbox: %s", pol.Sandbox.Source, why)
		}
	}
	l, err := planUpstreamSandbox(mode, pol, dir, own, &up.cmd)
	return l, badInputIf(err)
}

func badInputIf(err error) error {
	if err == nil {
		return nil
	}
	return badInput(err)
}

// startUpstream starts the command, or dials the remote server.
func startUpstream(ctx context.Context, up *upstreamSpec, dir string, sandboxed bool, plan *launchPlan) (transport.Upstream, upstreamReach, func(), error) {
	if up.remote == nil {
		proc, err := startLocal(up.cmd, plan)
		if err != nil {
			return nil, upstreamReach{}, nil, err
		}
		up.proc = proc
		return proc, upstreamReach{Pid: proc.Pid()}, func() { proc.Stop(stopGrace) }, nil
	}
	rem, r, err := dialRemote(ctx, up.remote, dir, sandboxed)
	if err != nil {
		return nil, upstreamReach{}, nil, err
	}
	return rem, r, func() { rem.Close() }, nil
}

// recognize decides which built-in pack applies to the server (f.pack),
// and says so: --pack, else the pack whose server the upstream's command
// starts (policy.Recognize), else none. A remote server is known only by
// --pack.
func (f *runFlags) recognize(up *upstreamSpec) {
	switch {
	case f.pack != "":
		errorf("pack %s applies to this server (--pack)", f.pack)
		return
	case up.remote == nil:
		if pack, _, ok := policy.Recognize(up.cmd.Path, up.cmd.Args); ok {
			f.pack = pack
			errorf("pack %s applies to this server: its command starts the server the pack was written for", pack)
			return
		}
	}
	errorf("no built-in pack applies to this server (none was written for it; --pack NAME says it is one's): its tools get the policy files' entries and the fallback")
}

// proxyConfig is the pump's configuration for this run.
func (f *runFlags) proxyConfig(dec *setup.Decider, dir string, auditLog *audit.Log) proxy.Config {
	eng, _ := dec.Engine(f.name, f.pack) // f.pack is a pack: --pack was checked, Recognize names one
	pol := eng.Policy()
	return proxy.Config{
		Server:  f.name,
		Engine:  eng,
		Store:   dec.Session.Output(f.name),
		Trusted: dec.Session.TrustedOutput(f.name),
		Directory: func(kind string) proxy.Recorder {
			return dec.Session.Directory(kind)
		},
		Anchors: func(text bool) proxy.Recorder { return dec.Session.Anchors(text) },
		Observe: f.observe,
		Policy:  pol.Digest(version),
		OnPinned: func(tools []json.RawMessage) {
			if err := report.SavePinned(dir, f.name, f.pack, tools); err != nil {
				errorf("could not keep the pinned tool list for bouncer report: %v", err)
			}
			for _, w := range policy.Lint(pol, toolNames(tools)) {
				errorf("warning: %s", w)
			}
		},
		Remember: func(dest string) error {
			return session.OpenRemembered(dir).Add(f.name, dest, "client", time.Now())
		},
		Audit:     auditLog,
		Approvals: approval.Open(filepath.Join(dir, "pending.json"), nil),
		Session:   newSessionID(),
		Log:       os.Stderr,
	}
}

// ended turns how the pump ended into the command's outcome.
func (up *upstreamSpec) ended(runErr error) error {
	var ended *transport.EndedError
	switch {
	case runErr == nil:
		return nil // the client closed stdin
	case errors.Is(runErr, context.Canceled):
		return nil // SIGTERM/SIGINT/SIGHUP: an ordinary stop
	case up.remote != nil && errors.As(runErr, &ended):
		return failed(errors.New(ended.Why))
	case up.remote != nil:
		return failed(fmt.Errorf("the remote server's session ended: %v; restart the MCP client (or reconnect this server in it) to start a new one", runErr))
	case errors.Is(runErr, transport.ErrUpstreamOutput):
		return failed(fmt.Errorf("upstream %s wrote something that is not an MCP message on its stdout (%s). "+
			"An MCP server must write only JSON-RPC messages to stdout, and its logs to stderr: check its command, arguments and log settings; the session is closed",
			up.cmd.Path, strings.TrimPrefix(runErr.Error(), transport.ErrUpstreamOutput.Error()+": ")))
	case errors.Is(runErr, proxy.ErrUpstreamExited):
		select {
		case <-up.proc.Done():
		case <-time.After(stopGrace):
		}
		status := "it is still running"
		if e := up.proc.ExitError(); e == nil {
			status = "exit status 0"
		} else {
			status = e.Error()
		}
		return failed(fmt.Errorf("upstream %s stopped unexpectedly (%s): %v", up.cmd.Path, status, runErr))
	}
	return failed(runErr)
}

// resolveCommand finds the upstream program in PATH (the entry's PATH, if
// its env sets one, as the client would have used it) so that a missing
// program is reported before anything runs.
func resolveCommand(c *transport.Command) error {
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

// upstreamFromConfig returns the upstream of the original entry of server
// name in a client config (in its projects[project] block when project is
// set): its x-bouncer-upstream member, or the entry init kept in the state
// directory state for a client that refuses that key, with the client's ${...} variables expanded from our
// environment, which is the one the client gave us: for a stdio server its
// command and args, its env laid over ours (as the client would have done)
// and its cwd; for a remote one (an entry with a url) its url, headers and
// transport (rc is then set). r says where the config was found: its
// Base is the directory relative --policy files are resolved against. A
// client that keeps its originals in the state directory state has them
// found there (mcpconfig.Kept).
func upstreamFromConfig(file, project, name, state string) (c transport.Command, rc *transport.RemoteConfig, r mcpconfig.Resolved, err error) {
	r, err = mcpconfig.Resolve(mcpconfig.Lookup{File: file, Project: project, Server: name, Getenv: os.LookupEnv, Kept: mcpconfig.Kept{State: state}})
	if err != nil {
		return transport.Command{}, nil, r, err
	}
	c, rc = entryUpstream(r.Entry)
	return c, rc, r, nil
}

// entryUpstream is the upstream of an expanded config entry: a stdio
// server's command and args, its env laid over ours (as the client would
// have done) and its cwd; or, for an entry with a url and no command, a
// remote server's url, headers and transport (rc is then set).
func entryUpstream(e mcpconfig.Entry) (c transport.Command, rc *transport.RemoteConfig) {
	if e.Command == "" {
		rc = &transport.RemoteConfig{URL: e.URL, Headers: http.Header{}, Transport: transportOf(e.Type)}
		for k, v := range e.Headers {
			rc.Headers.Add(k, v)
		}
		return transport.Command{}, rc
	}
	c = transport.Command{Path: e.Command, Args: e.Args, Dir: e.Cwd}
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
	return c, nil
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
