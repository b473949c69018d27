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

// Guarded returns the paths no filesystem server's writes may reach
// (protect.Around): Bouncer's own files (the state directory, which holds
// the audit log and its head, the approvals, the remembered destinations,
// the user's trust file and policy, and installed policy sets; the policy
// file init writes) and the files that make the clients run Bouncer (every
// MCP config of this user and project, this one included, and their hook
// files), and the backups init keeps of them. The system trust file,
// /etc/bouncer/trust.yaml, is root's.
func (p *Plan) Guarded(t mcpconfig.Found, polFile string) []string {
	g := []string{p.State, polFile}
	if p.Policy != "" {
		g = append(g, p.Policy)
	}
	configs := []string{t.Path}
	for _, dir := range []string{p.Cwd, t.Workspace} {
		if dir == "" {
			continue
		}
		for _, c := range mcpconfig.Candidates(mcpconfig.Where{Home: p.Home, Dir: dir, GOOS: runtime.GOOS, ConfigHome: os.Getenv("XDG_CONFIG_HOME")}) {
			configs = append(configs, c.Path)
		}
	}
	for _, c := range configs {
		g = append(g, c)
		if h, _, ok := hooks.File(c, p.Home); ok {
			g = append(g, h)
		}
	}
	for _, f := range g[1:] {
		// The backup init's writes keep of each (mcpconfig.Replace): what
		// a user restores by hand.
		g = append(g, f+".bak")
	}
	seen := map[string]bool{}
	out := g[:0]
	for _, f := range g {
		if abs, err := filepath.Abs(f); err == nil {
			f = abs // a relative --home or --config, against the working directory
		}
		if !seen[f] {
			seen[f] = true
			out = append(out, f)
		}
	}
	return out
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
	// from (Bouncer's own files, the clients' configs), as Show names them.
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
				c.Notes = append(c.Notes, fmt.Sprintf("%s: directory %s holds nothing but Bouncer's own files and the MCP clients' configs, which it must not write; its writes there are refused", s.Name, d))
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
