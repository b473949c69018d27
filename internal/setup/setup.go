// Package setup assembles what decides calls (the policy in force, the
// client session's history and the engines over them) the same way for
// bouncer run, check and serve, so that the three give the same verdict for
// the same call and history; and it is the one owner of which policy is in
// force (LoadPolicy), for them and for every command that describes it.
//
// A difference between them was a hole: check once allowed a call that run
// refused, and accepted a sandbox path that run refused; report and check
// once read a policy file that run refused as unsigned. Whatever a command
// adds (serve's policy text) goes through Config; which files are in force
// and how they are verified is LoadPolicy's; how calls are parsed and
// judged is engine.ParseCall and Engine.Decide for all three.
package setup

import (
	"fmt"
	"os"

	"github.com/bouncer-mcp/bouncer/internal/engine"
	"github.com/bouncer-mcp/bouncer/internal/fsresolve"
	"github.com/bouncer-mcp/bouncer/internal/policy"
	"github.com/bouncer-mcp/bouncer/internal/sandbox"
	"github.com/bouncer-mcp/bouncer/internal/session"
	"github.com/bouncer-mcp/bouncer/internal/vouch"
)

// Config says where the policy comes from and what the session's
// surroundings are.
type Config struct {
	// Sources are the policy flags, resolved by LoadPolicy as for every
	// command.
	Sources
	// Extra are policy documents layered after the files (serve's
	// policy_yaml, a set pull or push is judging).
	Extra []policy.Source
	// WorkDir is the upstream's working directory.
	WorkDir string
	// Session is the client session the servers belong to; nil makes one
	// in memory (check and serve: all servers of one run share it).
	Session *session.Session
	// Launch is the client config that launched this proxy (run
	// --config); nil for none. Its files are Bouncer's own (LaunchFiles).
	Launch *Launch
}

// Decider is the assembled policy and client session; Engine makes the
// engine of each server of the session.
type Decider struct {
	// InForce is the policy, its files and the trust configuration they
	// were checked under (LoadPolicy).
	*InForce
	Session *session.Session
	// Own is Bouncer's own state as the engines protect it (OwnPaths),
	// as it is known when the upstream starts: what the sandbox keeps it
	// from. The engines ask for it again on every call (own), so that
	// what another proxy of the client session publishes later is
	// protected too.
	Own []string
	own *ownState
	// Budget, when set, is counted against by every engine Engine makes,
	// besides its own count (engine.Options.Budget): bouncer listen's
	// budget of one user across sessions.
	Budget  engine.Budget
	workDir string
	home    string
}

// JoinClient makes the decider's session the one shared by the proxies of
// the MCP client that started this process (see session.Join), with the
// destinations humans remembered in stateDir, unless the policy opts the
// server out (shared_session: false). A session that can't be joined is
// said once through log, and this process keeps its own history. Either
// way the proxy tells the client's other proxies which files are its own,
// and protects theirs (ownState): a server kept apart in its history is
// not kept apart from their policies.
func (d *Decider) JoinClient(stateDir string, log func(string)) {
	s, err := session.Join(stateDir, log)
	if d.Policy.Isolated {
		log("shared_session: false: this server keeps its own history, apart from the client's other servers")
	} else {
		if err != nil {
			log(fmt.Sprintf("%v; this proxy keeps its own history, so a destination another server's output held is asked about, not denied", err))
		}
		d.Session = s
	}
	if err == nil {
		if err := d.own.join(s); err != nil {
			log(err.Error())
		}
	}
	own, _ := d.own.OwnPaths()
	d.Own = ownPathList(own)
	d.Session.SetRemembered(session.OpenRemembered(stateDir))
}

// Engine returns a new engine for server: its own pins and budgets, the
// session's shared history, and the policy as it applies to that server
// (ForServer: pack is the built-in pack written for it, "" for none). Its
// store records the server's untrusted output into the session.
func (d *Decider) Engine(server, pack string) (*engine.Engine, error) {
	pol, err := d.Policy.ForServer(pack)
	if err != nil {
		return nil, err
	}
	return engine.New(pol, d.Session.Output(server), engine.Options{
		Resolve: fsresolve.Existing, WorkDir: d.workDir, Session: d.Session, Server: server,
		Own: d.own, Home: d.home, Budget: d.Budget,
	}), nil
}

// Load loads the policy in force (LoadPolicy), checks its sandbox key and
// builds the engine over it. Errors are the policy's own (*filepos.Error,
// naming file, line and key), a trust or signature check's, or the sandbox
// key's; each means the command must stop with exit status 2.
func Load(c Config) (*Decider, error) {
	in, err := LoadPolicy(c.Sources, c.Extra...)
	if err != nil {
		return nil, err
	}
	pol := in.Policy
	// The trust files and their keys are Bouncer's own state in every
	// command: a write to them that run denies, check denies too. So is
	// the directory --policy-dir names, whole, wherever it is: besides the
	// set's files it holds the rollback floor (high-water.json), the
	// current link and the sets kept beside, which a tool that could
	// write would lower, move back, or break. So are the files of the
	// client config that launched run, and the configs and hook files
	// init wrote. The sandbox keeps the upstream from writing the same
	// paths.
	home, _ := os.UserHomeDir()
	src := OwnSources{StateDir: c.StateDir, InForce: in.OwnFiles(), Vouch: vouch.Files(c.StateDir)}
	if src.Init, err = InitFiles(c.StateDir); err != nil {
		return nil, err
	}
	if c.Launch != nil {
		if src.Launch, err = LaunchFiles(*c.Launch, c.StateDir, home); err != nil {
			return nil, err
		}
	}
	sess := c.Session
	if sess == nil {
		sess = session.New()
	}
	own := &ownState{src: src, sess: sess}
	ownPaths, _ := own.OwnPaths()
	ownList := ownPathList(ownPaths)
	if pol.Sandbox != nil {
		if err := sandbox.Validate(Confinement(pol, c.StateDir, ownList)); err != nil {
			return nil, err
		}
	}
	if c.StateDir != "" {
		// The destinations humans remembered vouch in run, check and
		// serve alike: check once ignored them and disagreed with run.
		sess.SetRemembered(session.OpenRemembered(c.StateDir))
	}
	return &Decider{InForce: in, Session: sess, Own: ownList, own: own, workDir: c.WorkDir, home: home}, nil
}

// Confinement is the policy's sandbox key as the sandbox package takes it,
// with what the upstream must never reach: Bouncer's own state as the
// engine protects it (own, from OwnPaths: the policy and trust files, an
// installed policy set's directory, the state directory, the launching
// config and its hook files) is not writable,
// and the state directory (approvals, the audit log of every server) is
// not readable either. Nil policy sandbox gives the zero Confinement.
func Confinement(pol *policy.Policy, stateDir string, own []string) sandbox.Confinement {
	if pol == nil || pol.Sandbox == nil {
		return sandbox.Confinement{}
	}
	c := sandbox.Confinement{
		ReadWrite:  pol.Sandbox.ReadWrite,
		ReadOnly:   pol.Sandbox.ReadOnly,
		ConnectTCP: pol.Sandbox.ConnectTCP,
		Source:     pol.Sandbox.Source,
		NoWrite:    append(append([]string(nil), pol.Files...), own...),
	}
	if stateDir != "" {
		c.NoWrite = append(c.NoWrite, stateDir)
		c.NoRead = append(c.NoRead, stateDir)
	}
	return c
}
