package setup

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/bouncer-mcp/bouncer/internal/engine"
	"github.com/bouncer-mcp/bouncer/internal/hooks"
	"github.com/bouncer-mcp/bouncer/internal/initplan"
	"github.com/bouncer-mcp/bouncer/internal/mcpconfig"
	"github.com/bouncer-mcp/bouncer/internal/session"
)

// OwnSources are where Bouncer's own files are listed, one field per
// source; OwnPaths makes the list the engines and the sandbox protect
// from them. A new kind of own file is one more field here.
type OwnSources struct {
	// StateDir is the state directory, whole: approvals, remembered
	// destinations, the audit log and its head, the client sessions,
	// init's record.
	StateDir string
	// InForce are the files of the policy this proxy enforces: the policy
	// files, the trust files and their keys, and the --policy-dir
	// directory, whole (InForce.OwnFiles).
	InForce []string
	// Launch are the files of the client config that launched this proxy:
	// the config itself, every policy file, trust file and --policy-dir its
	// wrapped entries name, for any of its servers, and the client's hook
	// file (LaunchFiles).
	Launch []string
	// Init are the files init's record in the state directory says it
	// wrote (InitFiles): the hook files, and every MCP config whose
	// servers it wrapped, for every proxy however it was launched.
	Init []string
	// Vouch are what the ways to vouch read (vouch.Files): a server that
	// could write them would vouch for itself.
	Vouch []string
	// Session are what the other proxies of this client session published
	// (session.Session.OwnFiles): their own lists, so that a server of one
	// proxy can't rewrite what another loads at its next start.
	Session []string
}

// OwnPaths is Bouncer's own state as the engines protect it: the paths of
// every source, each as an absolute path and, where it differs, as its
// symlinks resolve (a state directory reached through a link is the same
// directory); a directory is marked so, as what lies in it is protected
// too. Relative paths (policy documents that are not files, such as
// serve's text, have none) are left out.
func OwnPaths(s OwnSources) []engine.OwnPath {
	var out []engine.OwnPath
	seen := map[string]bool{}
	add := func(p string) {
		if p == "" || !filepath.IsAbs(p) {
			return
		}
		p = filepath.Clean(p)
		if seen[p] {
			return
		}
		seen[p] = true
		fi, err := os.Stat(p)
		out = append(out, engine.OwnPath{Path: p, Dir: err == nil && fi.IsDir()})
	}
	for _, list := range [][]string{{s.StateDir}, s.InForce, s.Vouch, s.Launch, s.Init, s.Session} {
		for _, f := range list {
			add(f)
			if real, err := filepath.EvalSymlinks(f); err == nil {
				add(real)
			}
		}
	}
	return out
}

// ownPathList is the paths alone, for the sandbox.
func ownPathList(own []engine.OwnPath) []string {
	out := make([]string, len(own))
	for i, o := range own {
		out[i] = o.Path
	}
	return out
}

// Launch is the client config that launched this proxy (bouncer run
// --config FILE --server NAME).
type Launch struct {
	// File is the config, as mcpconfig.Resolve found it: absolute.
	File string
	// Project is --project: the server is in the config's
	// projects[Project] block.
	Project string
	// Base is the directory a relative --policy of an entry is resolved
	// against (mcpconfig.Resolved.Base).
	Base string
	// Sources reads a wrapped entry's arguments ("run" first, the
	// client's variables expanded) as bouncer run reads its own, and
	// returns the policy sources they name, a relative --policy resolved
	// against base as run resolves it. It is bouncer run's flag parser.
	Sources func(args []string, base string) (Sources, error)
	// Files are more of the launch's own, besides the config's (bouncer
	// listen's token files: each a user's credential). Absolute.
	Files []string
}

// InitFiles are the files init's record in stateDir says it wrote
// (OwnSources.Init): every hook file it added to (the prompt hook
// vouches, the deny rules keep the agent from approving) and every MCP
// config whose servers it wrapped (a server of one config must not unwrap
// those of another). A record that can't be trusted is an error: what it
// would list is not known to be protected. No state directory, or no
// record, lists nothing.
func InitFiles(stateDir string) ([]string, error) {
	if stateDir == "" {
		return nil, nil
	}
	return initplan.Record{State: stateDir}.Files()
}

// LaunchFiles are the files of the config that launched a proxy that are
// Bouncer's own (OwnSources.Launch): the config itself (which launches
// bouncer run, and whose x-bouncer-upstream entries say what it starts);
// every policy file, trust file and --policy-dir that any of its wrapped
// entries names, in any of its blocks (a server of one entry must not
// rewrite the policy of another); and the hook file of its client. The
// original entries a client refuses in its own file are read from
// stateDir, as run reads them. An entry whose arguments bouncer run would
// refuse names no policy in force and is passed over; a config that can't
// be read is an error, as it is for run.
func LaunchFiles(l Launch, stateDir, home string) ([]string, error) {
	cfg, err := mcpconfig.Load(l.File, mcpconfig.Kept{State: stateDir})
	if err != nil {
		return nil, err
	}
	files := append([]string{l.File}, l.Files...)
	if h, _, ok := hooks.File(l.File, home); ok {
		files = append(files, h)
	}
	x := mcpconfig.Expander{Client: cfg.Client, Workspace: mcpconfig.Workspace(l.File, home), Home: home, Getenv: os.LookupEnv}
	type block struct{ project, base string }
	blocks := []block{{l.Project, l.Base}}
	for _, p := range cfg.OtherProjects(l.Project) {
		blocks = append(blocks, block{p.Dir, p.Dir})
	}
	for _, b := range blocks {
		servers, err := cfg.Servers(b.project)
		if err != nil {
			return nil, err
		}
		for _, srv := range servers {
			if !srv.Wrapped || l.Sources == nil {
				continue
			}
			args := make([]string, len(srv.Args))
			for i, a := range srv.Args {
				if args[i], err = x.Expand(a); err != nil {
					args[i] = a
				}
			}
			src, err := l.Sources(args, b.base)
			if err != nil {
				continue
			}
			for _, f := range append(append([]string(nil), src.Policies...), src.PolicyDir, src.Trust) {
				if f == "" {
					continue
				}
				if abs, err := filepath.Abs(f); err == nil {
					files = append(files, abs)
				}
			}
		}
	}
	return files, nil
}

// ownState answers the engines' question of which paths are Bouncer's
// own (engine.OwnState): OwnPaths of this proxy's sources and of what the
// other proxies of its client session published, made again only when
// they published something new.
type ownState struct {
	src OwnSources // Session left empty: the session is asked for it

	mu    sync.Mutex
	sess  *session.Session
	seen  uint64 // the session's version the paths were made at
	made  bool
	gen   uint64 // counts the lists made: the version the engines see
	paths []engine.OwnPath
}

// OwnPaths returns the paths in force and their version.
func (o *ownState) OwnPaths() ([]engine.OwnPath, uint64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	others, v := o.sess.OwnFiles()
	if !o.made || v != o.seen {
		src := o.src
		src.Session = others
		o.paths, o.seen, o.made = OwnPaths(src), v, true
		o.gen++
	}
	return o.paths, o.gen
}

// join publishes in sess, this proxy's client session, what this proxy
// protects, and makes the state answer from sess from now on.
func (o *ownState) join(sess *session.Session) error {
	o.mu.Lock()
	o.sess, o.made = sess, false
	o.mu.Unlock()
	if err := sess.PublishOwn(ownPathList(OwnPaths(o.src))); err != nil {
		return fmt.Errorf("%w; the client's other proxies don't protect this one's files", err)
	}
	return nil
}
