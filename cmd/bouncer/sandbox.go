package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/bouncer-mcp/bouncer/internal/policy"
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
}

// planUpstreamSandbox rewrites the upstream command to start through the
// launcher when the policy has a sandbox: key. In strict mode it refuses
// before the upstream starts if the kernel can't confine the proxy.
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
	if pol == nil || pol.Sandbox == nil {
		return plan, nil
	}
	plan.source = pol.Sandbox.Source
	if m == sandbox.Off {
		plan.note = fmt.Sprintf("the upstream is NOT confined: --sandbox off overrides the sandbox key at %s", pol.Sandbox.Source)
		return plan, nil
	}
	l, err := sandbox.LauncherArgs(m, setup.Confinement(pol, stateDir, own), cmd.Path, cmd.Args, cmd.Dir)
	if err != nil {
		return nil, err
	}
	cmd.Path, cmd.Args = l.Path, l.Args
	plan.launch, plan.note = &l, l.String()
	return plan, nil
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
