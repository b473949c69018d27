// Package setup assembles what decides calls (the policy, the taint store
// and the engine over them) the same way for bouncer run, check and serve,
// so that the three give the same verdict for the same call and history.
//
// A difference between them was a hole: check once allowed a call that run
// refused, and accepted a sandbox path that run refused. Whatever a command
// adds (run's signed-policy check, serve's policy text) goes through Config;
// how calls are parsed and judged is engine.ParseCall and Engine.Decide for
// all three.
package setup

import (
	"github.com/bouncer-mcp/bouncer/internal/engine"
	"github.com/bouncer-mcp/bouncer/internal/fsresolve"
	"github.com/bouncer-mcp/bouncer/internal/policy"
	"github.com/bouncer-mcp/bouncer/internal/sandbox"
	"github.com/bouncer-mcp/bouncer/internal/taint"
)

// Config says where the policy comes from and what the session's
// surroundings are.
type Config struct {
	// Policies are the --policy files, layered over the packs in order.
	Policies []string
	// Verify, if set, checks each policy file's exact bytes before they are
	// parsed (run verifies Sigstore bundles here).
	Verify func(file string, data []byte) error
	// Extra are policy documents layered after the files (serve's
	// policy_yaml).
	Extra []policy.Source
	// StateDir is Bouncer's state directory: no sandbox key may let the
	// upstream reach it.
	StateDir string
	// WorkDir is the upstream's working directory.
	WorkDir string
	// Store is the taint store to judge against; nil makes a new one.
	Store *taint.Store
}

// Decider is the assembled policy, store and engine of one session.
type Decider struct {
	Policy *policy.Policy
	Store  *taint.Store
	Engine *engine.Engine
}

// Load reads and checks the policy and builds the engine over it. Errors are
// the policy's own (*policy.Error, naming file, line and key), Verify's, or
// the sandbox key's; each means the command must stop with exit status 2.
func Load(c Config) (*Decider, error) {
	pol, err := policy.LoadFiles(c.Verify, c.Policies, c.Extra...)
	if err != nil {
		return nil, err
	}
	if pol.Sandbox != nil {
		if err := sandbox.Validate(Confinement(pol, c.StateDir)); err != nil {
			return nil, err
		}
	}
	store := c.Store
	if store == nil {
		store = taint.NewStore()
	}
	eng := engine.New(pol, store, engine.Options{Resolve: fsresolve.Existing, WorkDir: c.WorkDir})
	return &Decider{Policy: pol, Store: store, Engine: eng}, nil
}

// Confinement is the policy's sandbox key as the sandbox package takes it,
// with what the upstream must never reach: the policy files (a server that
// rewrote them would set the next session's rules) and the state directory
// (approvals, the audit log of every server). Nil policy sandbox gives the
// zero Confinement.
func Confinement(pol *policy.Policy, stateDir string) sandbox.Confinement {
	if pol == nil || pol.Sandbox == nil {
		return sandbox.Confinement{}
	}
	c := sandbox.Confinement{
		ReadWrite:  pol.Sandbox.ReadWrite,
		ReadOnly:   pol.Sandbox.ReadOnly,
		ConnectTCP: pol.Sandbox.ConnectTCP,
		Source:     pol.Sandbox.Source,
		NoWrite:    append([]string(nil), pol.Files...),
	}
	if stateDir != "" {
		c.NoWrite = append(c.NoWrite, stateDir)
		c.NoRead = append(c.NoRead, stateDir)
	}
	return c
}
