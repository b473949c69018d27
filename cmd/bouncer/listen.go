package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/bouncer-mcp/bouncer/internal/audit"
	"github.com/bouncer-mcp/bouncer/internal/listen"
	"github.com/bouncer-mcp/bouncer/internal/mcpconfig"
	"github.com/bouncer-mcp/bouncer/internal/policy"
	"github.com/bouncer-mcp/bouncer/internal/proxy"
	"github.com/bouncer-mcp/bouncer/internal/sandbox"
	"github.com/bouncer-mcp/bouncer/internal/session"
	"github.com/bouncer-mcp/bouncer/internal/setup"
	"github.com/bouncer-mcp/bouncer/internal/transport"
)

const listenSynopsis = `bouncer listen --config FILE [--addr HOST:PORT] [--metrics-addr HOST:PORT] [--policy FILE]... [--policy-dir DIR] [--trust FILE] [--sandbox auto|strict|off] [--drain-timeout DURATION]`

// listenFlags are bouncer listen's flags.
type listenFlags struct {
	policyFlags
	home, config, addr, metricsAddr, sandbox string
	drain                                    time.Duration
}

// cmdListen serves the config's servers over streamable HTTP, one judged
// session per MCP session (internal/listen; docs/listen.md).
func cmdListen(args []string) error {
	f := &listenFlags{}
	fs, home := newFlags("listen", listenSynopsis)
	f.register(fs)
	fs.StringVar(&f.config, "config", "", "client config `FILE` whose mcpServers are served (and whose x-bouncer-listen object configures the listener)")
	fs.StringVar(&f.addr, "addr", "127.0.0.1:8080", "`HOST:PORT` to serve MCP on")
	fs.StringVar(&f.metricsAddr, "metrics-addr", "", "`HOST:PORT` to serve Prometheus metrics on (none without it)")
	fs.StringVar(&f.sandbox, "sandbox", "auto", "how each server process is confined: auto, strict or off (see bouncer run)")
	fs.DurationVar(&f.drain, "drain-timeout", 30*time.Second, "on SIGTERM, how long calls in flight get to finish")
	if done, err := parseFlags(fs, args); done {
		return err
	}
	f.home = *home
	if fs.NArg() > 0 {
		return usageErr("listen takes no arguments; the servers come from --config")
	}
	if f.config == "" {
		return usageErr("listen needs --config FILE: a client config whose mcpServers are served")
	}
	switch f.sandbox {
	case "auto", "strict", "off":
	default:
		return usageErr("--sandbox %q: must be auto, strict or off", f.sandbox)
	}
	l, replica, closeLog, err := buildListener(f)
	if err != nil {
		return err
	}
	defer closeLog()
	return serveListener(l, f, replica)
}

// buildListener loads everything listen needs (the config, the policy,
// the audit log) and makes the listener; nothing is started yet. closeLog
// closes the audit log and stops the spawner, if there is one, with every
// server it started.
func buildListener(f *listenFlags) (l *listen.Listener, replica string, closeLog func(), err error) {
	dir, err := stateDir(f.home)
	if err != nil {
		return nil, "", nil, badInput(err)
	}
	if err := ensureStateDir(dir); err != nil {
		return nil, "", nil, failed(err)
	}
	cfgFile, err := filepath.Abs(f.config)
	if err != nil {
		return nil, "", nil, badInput(err)
	}
	data, err := os.ReadFile(cfgFile)
	if err != nil {
		return nil, "", nil, badInput(err)
	}
	lc, err := listen.ParseConfig(cfgFile, data)
	if err != nil {
		return nil, "", nil, badInput(err)
	}
	auth, err := listenAuth(lc, f.addr)
	if err != nil {
		return nil, "", nil, err
	}
	edge, err := listenEdge(lc, f.addr)
	if err != nil {
		return nil, "", nil, err
	}
	edge.MaxBody, edge.ReadHeaderTimeout, edge.ReadTimeout = lc.MaxBody, lc.HeaderTimeout, lc.ReadTimeout
	// The config (it starts every server) and the token files (each a
	// user's credential, which approves that user's codes too) are
	// Bouncer's own, as run's launching config is: no server reaches them.
	launch := &setup.Launch{File: cfgFile, Base: filepath.Dir(cfgFile), Sources: runArgsSources, Files: slices.Sorted(maps.Values(lc.Tokens))}
	dec, err := setup.Load(setup.Config{Sources: f.sources(dir, ""), WorkDir: filepath.Dir(cfgFile), Launch: launch})
	if err != nil {
		return nil, "", nil, badInput(err)
	}
	// One spawner starts every confined server (sandbox.Spawner says
	// why); where it can't work, each starts as bouncer run starts its own.
	var spawner *sandbox.Spawner
	if f.sandbox != "off" && sandbox.SpawnerUnavailable() == "" {
		spawner = &sandbox.Spawner{}
	}
	backends, packs, err := listenBackends(cfgFile, f.sandbox, dec, dir, spawner)
	if err != nil {
		return nil, "", nil, err
	}
	closeSpawner := func() {
		if spawner != nil {
			_ = spawner.Close()
		}
	}
	replica = lc.Replica
	if replica == "" {
		replica = defaultReplica()
	}
	auditLog, err := audit.Open(filepath.Join(dir, "audit.jsonl"))
	if err != nil {
		closeSpawner()
		return nil, "", nil, failed(err)
	}
	l, err = listen.New(listen.Options{
		Backends:      backends,
		NewJudge:      newJudge(dec, dir, packs),
		Auth:          auth,
		Edge:          edge,
		Limits:        lc.Limits,
		Replica:       replica,
		StateDir:      filepath.Join(dir, "listen", replica),
		Audit:         auditLog,
		AuditWritable: auditLog.Writable,
		Log:           os.Stderr,
	})
	if err != nil {
		auditLog.Close()
		closeSpawner()
		return nil, "", nil, badInput(err)
	}
	return l, replica, func() { auditLog.Close(); closeSpawner() }, nil
}

// serveListener serves until SIGTERM or SIGINT, then drains: readiness
// fails at once, calls in flight get --drain-timeout to finish, then
// everything stops and the command exits 0.
func serveListener(l *listen.Listener, f *listenFlags, replica string) error {
	signal.Ignore(syscall.SIGPIPE)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	ln, err := net.Listen("tcp", f.addr)
	if err != nil {
		return failed(fmt.Errorf("--addr %s: %v", f.addr, err))
	}
	srv := l.HTTPServer()
	var msrv *http.Server
	if f.metricsAddr != "" {
		mln, err := net.Listen("tcp", f.metricsAddr)
		if err != nil {
			ln.Close()
			return failed(fmt.Errorf("--metrics-addr %s: %v", f.metricsAddr, err))
		}
		msrv = &http.Server{Handler: l.Metrics(), ReadHeaderTimeout: 10 * time.Second}
		go msrv.Serve(mln)
	}
	l.Start()
	errorf("listen: serving MCP on http://%s (replica %s); /livez, /readyz", ln.Addr(), replica)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		l.Close()
		return failed(err)
	case <-ctx.Done():
	}
	stop()
	errorf("listen: draining (readiness fails now; calls in flight get %v)", f.drain)
	dctx, cancel := context.WithTimeout(context.Background(), f.drain)
	defer cancel()
	l.Drain(dctx)
	sctx, cancel2 := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel2()
	_ = srv.Shutdown(sctx)
	if msrv != nil {
		_ = msrv.Shutdown(sctx)
	}
	return nil
}

// listenAuth makes the authenticator x-bouncer-listen asks for. With no
// auth key, none is allowed only on a loopback address.
func listenAuth(lc *listen.FileConfig, addr string) (listen.Authenticator, error) {
	switch lc.Auth {
	case "", "none":
		if !loopbackAddr(addr) {
			return nil, usageErr("--addr %s is not a loopback address, so %s.auth must be token or oauth (none lets anyone who reaches the port in)", addr, listen.ConfigKey)
		}
		return listen.None{User: "local"}, nil
	case "token":
		t, err := listen.LoadTokens(lc.Tokens)
		if err != nil {
			return nil, badInput(err)
		}
		return t, nil
	case "oauth":
		if lc.OAuth == nil || lc.Resource == "" {
			return nil, badInput(fmt.Errorf("%s: auth oauth needs oauth.issuer and resource (this listener's public URL, the tokens' audience)", listen.ConfigKey))
		}
		o, err := listen.NewOAuth(*lc.OAuth, lc.Resource)
		if err != nil {
			return nil, badInput(err)
		}
		return o, nil
	}
	return nil, badInput(fmt.Errorf("%s.auth: %q", listen.ConfigKey, lc.Auth))
}

// listenEdge is the Host and Origin lists: the config's, or on a loopback
// address the loopback names and their origins on its port.
func listenEdge(lc *listen.FileConfig, addr string) (listen.Edge, error) {
	e := listen.Edge{Hosts: lc.Hosts, Origins: lc.Origins}
	if len(e.Hosts) > 0 {
		return e, nil
	}
	if !loopbackAddr(addr) {
		return e, usageErr("--addr %s is not a loopback address: list the names clients reach the listener by in %s.hosts (DNS rebinding protection), or [\"*\"] behind a proxy that checks Host", addr, listen.ConfigKey)
	}
	e.Hosts = listen.LoopbackHosts
	if len(e.Origins) == 0 {
		_, port, _ := net.SplitHostPort(addr)
		for _, h := range []string{"localhost", "127.0.0.1", "[::1]"} {
			e.Origins = append(e.Origins, "http://"+h+":"+port)
		}
	}
	return e, nil
}

// loopbackAddr reports whether HOST:PORT is on a loopback address.
func loopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// defaultReplica names this replica: $BOUNCER_REPLICA, else the host name
// (a StatefulSet's pod name), else r0.
func defaultReplica() string {
	for _, c := range []string{os.Getenv("BOUNCER_REPLICA"), hostname()} {
		c = strings.ToLower(c)
		if listen.ValidReplica(c) == nil {
			return c
		}
	}
	return "r0"
}

func hostname() string {
	h, _ := os.Hostname()
	h, _, _ = strings.Cut(h, ".")
	return h
}

// listenBackends makes a Backend of each server of the config: a stdio
// one is prepared as bouncer run prepares it (prepareUpstream: found in
// PATH, and wrapped in the sandbox launcher when the policy confines
// servers), once; each session then starts its own process of it. A
// remote one is dialed anew for each session, with the entry's own
// headers and nothing of the client's.
func listenBackends(file, sandboxMode string, dec *setup.Decider, dir string, spawner *sandbox.Spawner) (backends []listen.Backend, packs map[string]string, err error) {
	c, err := mcpconfig.Load(file, mcpconfig.Kept{State: dir})
	if err != nil {
		return nil, nil, badInput(err)
	}
	servers, err := c.Servers("")
	if err != nil {
		return nil, nil, badInput(err)
	}
	if len(servers) == 0 {
		return nil, nil, badInput(fmt.Errorf("%s: no servers in mcpServers (or servers)", file))
	}
	home, _ := os.UserHomeDir()
	x := mcpconfig.Expander{Client: c.Client, Workspace: mcpconfig.Workspace(file, home), Home: home, Getenv: os.LookupEnv}
	var out []listen.Backend
	packs = map[string]string{}
	// A spawner that fails fails alike for every session: said once per
	// reason, not per session.
	var warnMu sync.Mutex
	warned := map[string]bool{}
	warnSpawn := func(err error) {
		warnMu.Lock()
		defer warnMu.Unlock()
		if !warned[err.Error()] {
			warned[err.Error()] = true
			errorf("warning: %v; confined servers start without the spawner, as bouncer run starts its one", err)
		}
	}
	for _, s := range servers {
		if strings.ContainsAny(s.Name, "/?#%") || s.Name == "" {
			return nil, nil, badInput(fmt.Errorf("%s: server %q: a name served at /servers/NAME/mcp can't hold / ? # or %%", file, s.Name))
		}
		e, err := expandLaunch(file, s.Name, s.Launch, x)
		if err != nil {
			return nil, nil, err
		}
		cmd, rc := entryUpstream(e)
		switch {
		case rc == nil:
			cmd.Name = s.Name
			// A built-in pack applies to the server it was written for
			// only, known by its command as bouncer run knows it; a
			// remote server gets none (listen has no --pack).
			if pack, _, ok := policy.Recognize(cmd.Path, cmd.Args); ok {
				packs[s.Name] = pack
			}
			up := &upstreamSpec{cmd: cmd}
			if _, err := prepareUpstream(sandboxMode, dec.Policy, dir, dec.Own, up); err != nil {
				return nil, nil, err
			}
			prepared := up.cmd
			var once sync.Once
			out = append(out, listen.Backend{Name: s.Name, Process: true, Start: func(context.Context) (transport.Upstream, error) {
				// Every process starts as run starts its one (startLocal:
				// the sandbox key's launcher, and the strongest form that
				// keeps it off Bouncer's own files), from a plan of its
				// own: a plan holds one start's launcher status and the
				// forms it fell back from.
				c := prepared
				plan, err := planUpstreamSandbox(sandboxMode, dec.Policy, dir, dec.Own, &c)
				if err != nil {
					return nil, err
				}
				plan.spawner, plan.spawnWarn = spawner, warnSpawn
				proc, err := startLocal(c, plan)
				if err != nil {
					return nil, err
				}
				if plan.launch != nil {
					once.Do(func() { errorf("server %q: %s", s.Name, plan.launch.OwnNote()) })
				}
				return proc, nil
			}})
		default:
			u, err := url.Parse(rc.URL)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return nil, nil, badInput(fmt.Errorf("%s: server %q: url must be an http:// or https:// URL", file, s.Name))
			}
			pins := transport.NewPins()
			if err := pins.Add(context.Background(), originHostPort(u)); err != nil {
				return nil, nil, failed(fmt.Errorf("server %q: %v", s.Name, err))
			}
			// One pool of connections for all the server's sessions: a
			// session starts on a connection already open, and an idle
			// one holds none of its own.
			pool, err := transport.NewRemotePool(rc.URL, pins.Dial, nil)
			if err != nil {
				return nil, nil, badInput(fmt.Errorf("%s: server %q: %v", file, s.Name, err))
			}
			out = append(out, listen.Backend{Name: s.Name, Start: func(context.Context) (transport.Upstream, error) {
				// Only the entry's headers: the client's Authorization,
				// Cookie and the rest never reach the upstream.
				cfg := *rc
				cfg.Headers, cfg.Pool, cfg.Log = rc.Headers.Clone(), pool, os.Stderr
				return transport.DialRemote(cfg)
			}})
		}
	}
	return out, packs, nil
}

// expandLaunch expands the client's ${...} variables in a config entry,
// as bouncer run --config does, into the entry it starts: a stdio
// server's (with a relative cwd taken from the file's directory) or a
// remote one's.
func expandLaunch(file, name string, la mcpconfig.Launch, x mcpconfig.Expander) (mcpconfig.Entry, error) {
	var err error
	exp := func(what, v string) string {
		if err != nil {
			return ""
		}
		out, xerr := x.Expand(v)
		if xerr != nil {
			err = badInput(fmt.Errorf("%s: server %q: %s: %v", file, name, what, xerr))
		}
		return out
	}
	if la.Command == "" && la.URL == "" {
		return mcpconfig.Entry{}, badInput(fmt.Errorf("%s: server %q: give a command (a stdio server) or a url (a remote one)", file, name))
	}
	e := mcpconfig.Entry{Type: la.Type, Command: exp("command", la.Command), URL: exp("url", la.URL), Cwd: exp("cwd", la.Cwd)}
	if la.Command != "" {
		e.URL = ""
	}
	for i, a := range la.Args {
		e.Args = append(e.Args, exp(fmt.Sprintf("args[%d]", i), a))
	}
	if len(la.Env) > 0 {
		e.Env = map[string]string{}
		for k, v := range la.Env {
			e.Env[k] = exp("env."+k, v)
		}
	}
	if len(la.Headers) > 0 {
		e.Headers = map[string]string{}
		for k, v := range la.Headers {
			e.Headers[k] = exp("headers."+k, v)
		}
	}
	if e.Cwd != "" && !filepath.IsAbs(e.Cwd) {
		e.Cwd = filepath.Join(filepath.Dir(file), e.Cwd)
	}
	return e, err
}

// listenJudge judges one listen session: one engine, one history, one
// proxy configuration, a new pump for each upstream the session has.
type listenJudge struct {
	cfg   proxy.Config
	leave func()
}

func (j *listenJudge) Pump() listen.Pump { return proxy.New(j.cfg) }
func (j *listenJudge) Close()            { j.leave() }

// newJudge builds each session's judge from the policy in force: the
// session's own history in its user's group (the taint check sees the
// user's other live sessions), the user's remembered destinations and the
// operator's, the user's budget beside the session's, the session's codes
// and audit identity.
func newJudge(dec *setup.Decider, dir string, packs map[string]string) func(listen.SessionSpec) (listen.Judge, error) {
	operator := session.OpenRemembered(dir)
	digest := dec.Policy.Digest(version) // the same for every session: hashed once
	return func(spec listen.SessionSpec) (listen.Judge, error) {
		var sess *session.Session
		leave := func() {}
		d := *dec
		if spec.Scope != nil {
			sess = spec.Scope.Taint.New()
			leave = func() { spec.Scope.Taint.Leave(sess) }
			d.Budget = spec.Scope.Budget
		} else {
			sess = session.New() // the listener's own session that takes the pin
		}
		sess.SetRemembered(operator)
		if spec.Scope != nil {
			sess.AddRemembered(spec.Scope.Remembered)
		}
		d.Session = sess
		eng, err := d.Engine(spec.Server, packs[spec.Server])
		if err != nil {
			leave()
			return nil, err
		}
		cfg := proxy.Config{
			Server:  spec.Server,
			Engine:  eng,
			Store:   sess.Output(spec.Server),
			Trusted: sess.TrustedOutput(spec.Server),
			Directory: func(kind string) proxy.Recorder {
				return sess.Directory(kind)
			},
			Anchors:  func(text bool) proxy.Recorder { return sess.Anchors(text) },
			Policy:   digest,
			OnPinned: func(tools []json.RawMessage) { spec.Pinned(eng, tools) },
			Audit:    spec.Audit,
			Session:  spec.ID,
			Log:      os.Stderr,
		}
		if spec.Log != nil {
			cfg.Log = spec.Log
		}
		if spec.Approvals != nil {
			cfg.Approvals = spec.Approvals
		}
		if spec.Scope != nil {
			cfg.Remember = func(dest string) error {
				return spec.Scope.Remember(spec.Server, dest, time.Now())
			}
		}
		return &listenJudge{cfg: cfg, leave: leave}, nil
	}
}
