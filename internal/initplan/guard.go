package initplan

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/bouncer-mcp/bouncer/internal/hooks"
	"github.com/bouncer-mcp/bouncer/internal/mcpconfig"
	"github.com/bouncer-mcp/bouncer/internal/pathtree"
	"github.com/bouncer-mcp/bouncer/internal/protect"
)

// Guarded returns the paths no prefix init writes for config t's
// filesystem servers may hold (protect.Around): the state directory (the
// audit log and its head, approvals, remembered destinations, the user's
// trust file and policy, installed policy sets) and every policy file but
// polFile, the one those servers load (Plan.Policies: another proxy's
// policy, which this proxy does not count as its own state, so a server
// that could write it could loosen another server's rules).
//
// The servers' own files (polFile, the config that launches them, its
// hook file) are not among them: a server can't reach those whatever its
// prefix says, by construction where the kernel allows (bouncer run
// starts it with them read-only or hidden) and by the engine's argument
// guard everywhere. So a server rooted at a project is confined to the
// project itself, and a new file at its top is no surprise.
func (p *Plan) Guarded(polFile string) []string {
	g := append([]string{p.State}, p.Policies...)
	own, _ := filepath.Abs(polFile)
	seen := map[string]bool{}
	out := g[:0:0]
	for _, f := range g {
		if abs, err := filepath.Abs(f); err == nil {
			f = abs // a relative --home, against the working directory
		}
		if mcpconfig.SamePath(f, own) || seen[f] {
			continue
		}
		seen[f] = true
		out = append(out, f)
	}
	return out
}

// FindPolicies sets p.Policies: the policy files the wrapped entries of
// configs name (as bouncer run would load them, by load: run's own
// flags), and those init is to write for them (PolicyFile), absolute.
// configs are those init found, and those of this user and project it
// could find besides: a policy any of them names is another server's.
// p.Configs are all of those configs.
func (p *Plan) FindPolicies(configs []mcpconfig.Found, load Loader) {
	seen := map[string]bool{}
	add := func(f string) {
		if abs, err := filepath.Abs(f); err == nil && !seen[abs] {
			seen[abs] = true
			p.Policies = append(p.Policies, abs)
		}
	}
	configs = append(configs, mcpconfig.Discover(mcpconfig.Where{Home: p.Home, Dir: p.Cwd, GOOS: runtime.GOOS, ConfigHome: os.Getenv("XDG_CONFIG_HOME")})...)
	for _, t := range configs {
		p.Configs = append(p.Configs, t.Path)
		cfg, err := mcpconfig.Load(t.Path, p.Kept())
		if err != nil {
			continue // said when init comes to it
		}
		servers, err := cfg.Servers(t.Project)
		if err != nil || len(servers) == 0 {
			continue
		}
		add(p.PolicyFile(t))
		for _, srv := range servers {
			if !srv.Wrapped {
				continue
			}
			args, base := p.runArgs(t, cfg, srv)
			_, files, _ := load(args, base)
			for _, f := range files {
				if !filepath.IsAbs(f) {
					f = filepath.Join(base, f)
				}
				add(f)
			}
		}
	}
}

// Keep is what a client's own file tools are to be kept off, where the
// client has rules for that (hooks.EditRules): the state directory,
// every policy file (Policies), every MCP config of this user and project
// (Configs) and each one's hook file. An agent that could edit those
// could loosen a policy, forge what Bouncer remembers, unwrap a server, or
// take these very rules out.
func (p *Plan) Keep() []hooks.Keep {
	keep := []hooks.Keep{{Path: p.State, Dir: true}}
	for _, f := range p.Policies {
		keep = append(keep, hooks.Keep{Path: f})
	}
	for _, c := range p.Configs {
		if abs, err := filepath.Abs(c); err == nil {
			c = abs
		}
		keep = append(keep, hooks.Keep{Path: c})
		if h, _, ok := hooks.File(c, p.Home); ok {
			keep = append(keep, hooks.Keep{Path: h})
		}
	}
	return keep
}

// runArgs are the wrapped entry's arguments as the client passes them to
// bouncer run (its variables expanded; one that can't be is left as
// written), and the directory run resolves a relative --policy against:
// the project for a project's file, else the working directory.
func (p *Plan) runArgs(t mcpconfig.Found, cfg *mcpconfig.Config, srv mcpconfig.Server) (args []string, base string) {
	x := mcpconfig.Expander{Client: cfg.Client, Workspace: t.Workspace, Home: p.Home, Getenv: os.LookupEnv}
	args = make([]string, len(srv.Args))
	for i, a := range srv.Args {
		if v, err := x.Expand(a); err == nil {
			args[i] = v
		} else {
			args[i] = a
		}
	}
	base = t.Workspace
	if base == "" {
		base = p.Cwd
	}
	return args, base
}

// Confined is what confines a config's filesystem servers (Plan.Confine).
type Confined struct {
	// Confinement is what the policy file is to say (protect.Extend): the
	// prefixes as it names them, the guarded paths, whether some
	// directory was listed around guarded paths (Listed), and whether the
	// servers' directories held nothing but guarded paths, so that no
	// prefix is left to give (Refuse).
	protect.Confinement
	// Notes say, per server, each directory that can't be named in the
	// policy file, and why.
	Notes []string
	// KeptOut is, per server, what of its directories its writes are kept
	// from (another server's policy, the state directory), as Show names
	// them.
	KeptOut map[string][]string
}

// Confine returns the prefixes that confine the filesystem servers among
// servers (those of config t, read as cfg): their directories, or, for a
// directory that holds a guarded path, what it holds but those
// (protect.Around); and a note for each directory that can't be named in
// polFile.
func (p *Plan) Confine(t mcpconfig.Found, cfg *mcpconfig.Config, servers []mcpconfig.Server, polFile string, guarded []string) Confined {
	c := Confined{Confinement: protect.Confinement{Guarded: guarded}}
	x := mcpconfig.Expander{Client: cfg.Client, Workspace: t.Workspace, Home: p.Home, Getenv: os.LookupEnv}
	seen := map[string]bool{}
	emptied := false // a directory held nothing but guarded paths
	for _, s := range servers {
		if !p.selected(s.Name) || s.Remote || s.Launch.Command == "" {
			continue
		}
		pack, rest, ok := protect.Recognize(s.Launch)
		if !ok || pack != protect.FilesystemPack {
			continue
		}
		if len(protect.Dirs(rest)) == 0 {
			c.Notes = append(c.Notes, fmt.Sprintf("%s: names no directory (it takes them from the client's roots), so its writes are not confined; give it its directories as arguments", s.Name))
		}
		for _, d := range protect.Dirs(rest) {
			v, err := x.Expand(d)
			if err != nil {
				c.Notes = append(c.Notes, fmt.Sprintf("%s: directory %s: %v; its writes there are not confined", s.Name, d, err))
				continue
			}
			asWritten := filepath.IsAbs(v) && v == d
			switch {
			case v == "~" || strings.HasPrefix(v, "~/"):
				v = filepath.Join(p.Home, strings.TrimPrefix(v, "~"))
			case !filepath.IsAbs(v) && t.Workspace != "":
				v = filepath.Join(t.Workspace, v) // project servers start in the project
			case !filepath.IsAbs(v):
				c.Notes = append(c.Notes, fmt.Sprintf("%s: directory %q is relative to wherever the client starts it, so its writes are not confined; give it an absolute path", s.Name, d))
				continue
			}
			v = filepath.Clean(v)
			cover, left := protect.Around(v, guarded)
			c.Listed = c.Listed || len(left) > 0 && len(cover) > 0
			for _, l := range left {
				if c.KeptOut == nil {
					c.KeptOut = map[string][]string{}
				}
				c.KeptOut[s.Name] = append(c.KeptOut[s.Name], p.Show(l))
			}
			if len(cover) == 0 {
				emptied = true
				c.Notes = append(c.Notes, fmt.Sprintf("%s: directory %s is Bouncer's state directory or another server's policy, or lies in one, which it must not write; its writes there are refused", s.Name, d))
				continue
			}
			for _, cv := range cover {
				name := cv
				if t.Workspace != "" {
					// A project's policy is committed: a path of the
					// project is named relative to the policy file, one
					// outside it only as the config itself names it.
					if r, ok := pathtree.Below(cv, filepath.Dir(polFile)); ok {
						name = filepath.ToSlash(r)
					} else if !asWritten {
						c.Notes = append(c.Notes, fmt.Sprintf("%s: directory %s is outside the project, and a project's policy names no path of one person's machine; add %s to allowed_path_prefixes of write_file, edit_file, create_directory and move_file in your own policy to confine it", s.Name, d, cv))
						continue
					}
				}
				if !seen[name] {
					seen[name] = true
					c.Dirs = append(c.Dirs, name)
				}
			}
		}
	}
	c.Refuse = emptied && len(c.Dirs) == 0
	return c
}
