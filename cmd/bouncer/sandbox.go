package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/bouncer-mcp/bouncer/internal/policy"
	"github.com/bouncer-mcp/bouncer/internal/protect"
	"github.com/bouncer-mcp/bouncer/internal/sandbox"
	"github.com/bouncer-mcp/bouncer/internal/setup"
	"github.com/bouncer-mcp/bouncer/internal/transport"
)

// This file is bouncer run's use of internal/sandbox: the launcher that
// confines a stdio upstream, planned before it starts, and the proxy's own
// confinement, applied once the upstream runs.

// launchPlan is what planUpstreamSandbox planned: the launcher, if the
// upstream starts through one, and the line that says so.
type launchPlan struct {
	launch *sandbox.Launch
	note   string
	source string // the sandbox key's FILE:LINE
	// spawner, when set, starts the upstream in the namespace form
	// (bouncer listen's sessions); spawnWarn is told when it fails and
	// the upstream starts without it.
	spawner   *sandbox.Spawner
	spawnWarn func(error)
}

// planUpstreamSandbox plans how the upstream starts: through the launcher
// when the policy has a sandbox: key, and kept off Bouncer's own files
// (own, with the state directory) by the strongest form the policy's
// own_files key and the kernel allow (startLocal tries them). In strict
// mode it refuses before the upstream starts if the kernel can't confine
// the proxy. A nil policy is a remote upstream: there is nothing to start.
func planUpstreamSandbox(mode string, pol *policy.Policy, stateDir string, own []string, cmd *transport.Command) (*launchPlan, error) {
	m, err := sandbox.ParseMode(mode)
	if err != nil {
		return nil, err
	}
	if m == sandbox.Strict {
		if err := sandbox.CheckStrict(); err != nil {
			return nil, err
		}
	}
	plan := &launchPlan{}
	if pol == nil {
		return plan, nil
	}
	l := sandbox.Direct(cmd.Path, cmd.Args)
	if pol.Sandbox != nil {
		plan.source = pol.Sandbox.Source
		if m == sandbox.Off {
			plan.note = fmt.Sprintf("the upstream is NOT confined: --sandbox off overrides the sandbox key at %s", pol.Sandbox.Source)
		} else {
			c, err := sandbox.LauncherArgs(m, setup.Confinement(pol, stateDir, own), cmd.Path, cmd.Args, cmd.Dir)
			if err != nil {
				return nil, err
			}
			l, plan.note = &c, c.String()
		}
	}
	dir := cmd.Dir
	if dir != "" {
		if dir, err = filepath.Abs(dir); err != nil {
			return nil, err
		}
	}
	g := sandbox.Guarding{Files: sandbox.NewOwnFiles(stateDir, own), Max: sandbox.OwnNamespace, Dir: dir,
		Strict: m == sandbox.Strict, Around: protect.Around}
	switch {
	case m == sandbox.Off:
		g.Max, g.Why = sandbox.OwnArguments, "--sandbox off"
	case pol.OwnFiles != nil:
		if g.Max, err = sandbox.ParseOwnForm(pol.OwnFiles.Form); err != nil {
			return nil, fmt.Errorf("%s: %w", pol.OwnFiles.Source, err)
		}
		if g.Max != sandbox.OwnNamespace {
			g.Why = fmt.Sprintf("own_files: %s at %s", pol.OwnFiles.Form, pol.OwnFiles.Source)
		}
	}
	l.Guard(g)
	plan.launch = l
	return plan, nil
}

// startLocal starts the upstream command as planned, with the strongest
// own-files form that works: when the launcher can't set one up (a user
// namespace refused by the kernel or an LSM, say), it says why and exits,
// and the next weaker form is tried; the start line says which one holds
// and why no stronger one does.
func startLocal(c transport.Command, plan *launchPlan) (*transport.Process, error) {
	if plan == nil || plan.launch == nil {
		return transport.Start(c, os.Stderr)
	}
	l := plan.launch
	spawner := plan.spawner
	for {
		cmd := c
		path, args, setup, err := l.Command()
		if err != nil {
			return nil, err
		}
		cmd.Path, cmd.Args, cmd.Setup = path, args, setup
		if sp := spawner; sp != nil && l.Form() == sandbox.OwnNamespace {
			cmd.Spawn = func(c *exec.Cmd) (transport.Child, error) {
				ch, err := sp.Spawn(c)
				if err != nil {
					return nil, err
				}
				return ch, nil
			}
		}
		proc, err := transport.Start(cmd, os.Stderr)
		if err == nil {
			if err = l.Started(); err == nil {
				return proc, nil
			}
			_ = proc.Stop(stopGrace)
		} else {
			l.Abandon()
			if cmd.Spawn != nil {
				// The spawner failed, not the form: the same form once
				// more, started as run starts it.
				if plan.spawnWarn != nil {
					plan.spawnWarn(err)
				}
				spawner = nil
				continue
			}
		}
		if !l.Fallback(err) {
			return nil, err
		}
	}
}

// confineProxy restricts the proxy itself once the upstream runs: it
// keeps its state directory and stdio, and loses exec, the network (but
// a remote upstream's pinned ports) and every other file. It returns what
// it applied, for one line on stderr.
func confineProxy(mode string, pol *policy.Policy, stateDir string, up upstreamReach, plan *launchPlan) (string, error) {
	m, err := sandbox.ParseMode(mode)
	if err != nil {
		return "", err
	}
	if plan != nil && plan.launch != nil {
		if r, _ := plan.launch.Reaches(stateDir); r {
			return "", fmt.Errorf("%s: sandbox: the upstream could reach the state directory %s; list narrower paths", plan.source, stateDir)
		}
	}
	r, err := sandbox.Restrict(m, sandbox.Config{StateDir: stateDir, ListDirs: prefixDirs(pol), Upstream: up.Pid,
		Remote: up.Remote, ConnectPorts: up.Ports})
	if err != nil {
		return "", err
	}
	s := r.String()
	if plan != nil && plan.note != "" {
		s += "; " + plan.note
	}
	switch {
	case up.Remote:
		s += "; own files: the server is remote, so there is no process of it here to keep off them"
	case plan != nil && plan.launch != nil:
		s += "; " + plan.launch.OwnNote()
	}
	return s, nil
}

// prefixDirs are the directories the restricted proxy may still list: for
// each allowed path prefix, the prefix or its nearest existing ancestor.
// The path check lists the directory where a new name would be made, to
// rule out a Unicode look-alike of it (fsresolve); listing reads no file.
func prefixDirs(pol *policy.Policy) []string {
	seen := map[string]bool{}
	var out []string
	for _, name := range pol.Names() {
		t, _ := pol.Lookup(name)
		for _, p := range t.AllowedPathPrefixes {
			for d := p; ; d = filepath.Dir(d) {
				if fi, err := os.Stat(d); err == nil && fi.IsDir() {
					if !seen[d] {
						seen[d] = true
						out = append(out, d)
					}
					break
				}
				if d == filepath.Dir(d) {
					break
				}
			}
		}
	}
	return out
}
