package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/bouncer-mcp/bouncer/internal/policy"
	"github.com/bouncer-mcp/bouncer/internal/proxy"
	"github.com/bouncer-mcp/bouncer/internal/sandbox"
	"github.com/bouncer-mcp/bouncer/internal/setup"
)

// This file wires internal/sandbox into `bouncer run` through the hooks
// run.go declares, and registers the launcher that confines the upstream.
func init() {
	hiddenCommands[sandbox.LauncherName] = sandbox.RunLauncher
	prepareSandbox = prepareUpstreamSandbox
	applySandbox = applyProxySandbox
}

// launchNote is what prepareUpstreamSandbox planned, for applySandbox's
// report line, and launched the plan itself. run calls prepare and apply
// once each, in that order.
var (
	launchNote string
	launched   *sandbox.Launch
)

// prepareUpstreamSandbox rewrites the upstream command to start through the
// launcher when the policy has a sandbox: key.
func prepareUpstreamSandbox(mode string, pol *policy.Policy, stateDir string, cmd *proxy.Command) error {
	m, err := sandbox.ParseMode(mode)
	if err != nil {
		return err
	}
	launchNote, launched = "", nil
	if m == sandbox.Strict {
		// Refuse before the upstream starts, not after.
		if err := sandbox.CheckStrict(); err != nil {
			return err
		}
	}
	if pol == nil || pol.Sandbox == nil {
		return nil
	}
	if m == sandbox.Off {
		launchNote = fmt.Sprintf("the upstream is NOT confined: --sandbox off overrides the sandbox key at %s", pol.Sandbox.Source)
		return nil
	}
	c := setup.Confinement(pol, stateDir)
	l, err := sandbox.LauncherArgs(m, c, cmd.Path, cmd.Args, cmd.Dir)
	if err != nil {
		return err
	}
	cmd.Path, cmd.Args = l.Path, l.Args
	launchNote = l.String()
	launched = &l
	return nil
}

// applyProxySandbox restricts the proxy itself once the upstream runs: it
// keeps its state directory and stdio, and loses exec, the network and
// every other file.
func applyProxySandbox(mode string, pol *policy.Policy, stateDir string, up *proxy.Process) (string, error) {
	m, err := sandbox.ParseMode(mode)
	if err != nil {
		return "", err
	}
	if launched != nil {
		if r, _ := launched.Reaches(stateDir); r {
			return "", fmt.Errorf("%s: sandbox: the upstream could reach the state directory %s; list narrower paths", pol.Sandbox.Source, stateDir)
		}
	}
	r, err := sandbox.Restrict(m, sandbox.Config{StateDir: stateDir, ListDirs: prefixDirs(pol), Upstream: up.Pid()})
	if err != nil {
		return "", err
	}
	s := r.String()
	if launchNote != "" {
		s += "; " + launchNote
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
