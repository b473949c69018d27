// Package initplan is what `bouncer init` decides and says, apart from
// asking: which bouncer the wrapped entries and the prompt hook launch,
// and why (Launcher); which policy file a config's entries name, and how
// (Plan.PolicyFile, ProjectArg); which paths no filesystem server may
// write and which directories confine those servers' writes
// (Plan.Guarded, Plan.Confine: never another server's policy); what init
// added to each hook file, kept in the state directory so that --undo
// removes that and nothing the user had (Record); the closing summary of
// what is enforced and what is left unprotected (Summary); and `bouncer
// status`, which reads the same per-server state (Summary.Status).
//
// cmd/bouncer's init parses the flags, asks each yes/no question, and
// wires this package to internal/mcpconfig (the clients' configs),
// internal/hooks (the prompt hook) and internal/protect (the policy's
// content). The policy run would load is cmd/bouncer's to say (run's own
// flags), so the summary is handed it (Loader).
package initplan

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/bouncer-mcp/bouncer/internal/mcpconfig"
	"github.com/bouncer-mcp/bouncer/internal/pathtree"
)

// Plan is where one run of init works: what it names paths relative to,
// where its own files go, and what the user asked for.
type Plan struct {
	// Cwd is the directory init runs in (the project), Home the user's
	// home directory ($HOME; "" when unset).
	Cwd, Home string
	// State is Bouncer's state directory.
	State string
	// Policy is --policy, absolute; "" for the defaults.
	Policy string
	// Servers is --server: only these servers; empty for all.
	Servers []string
	// Policies are the policy files of every config init found
	// (FindPolicies): no filesystem server may be given a prefix that
	// holds one but its own (Guarded). Configs are those configs.
	Policies, Configs []string
}

// Kept is where the original entries of a KeepsOriginal client's wrapped servers
// are kept: in the state directory.
func (p *Plan) Kept() mcpconfig.Kept { return mcpconfig.Kept{State: p.State} }

// Show names a path as the user would type it: relative to the working
// directory when below it, ~/... when below the home directory.
func (p *Plan) Show(path string) string {
	if r, ok := pathtree.Below(path, p.Cwd); ok {
		return r
	}
	if p.Home != "" {
		if r, ok := pathtree.Below(path, p.Home); ok {
			return filepath.Join("~", r)
		}
	}
	return path
}

// Label names a config as init lists it: "Claude Code (project): .mcp.json".
func (p *Plan) Label(t mcpconfig.Found) string {
	name, scope := kind(t)
	return fmt.Sprintf("%s (%s): %s", name, scope, p.Show(t.Path))
}

// kind names the client that reads t and whose file it is.
func kind(t mcpconfig.Found) (client, scope string) {
	scope = "user"
	if t.Workspace != "" {
		scope = "project"
	}
	client = string(t.Client)
	if client == "" {
		client = "MCP client"
	}
	return client, scope
}

// selected reports whether --server selects the server name.
func (p *Plan) selected(name string) bool {
	if len(p.Servers) == 0 {
		return true
	}
	for _, s := range p.Servers {
		if s == name {
			return true
		}
	}
	return false
}

// ProjectArg is how a project's own file names a path of the project: by
// ${workspaceFolder} where the client expands it (VS Code, Cursor), else
// relative to the project, which bouncer run resolves from where it finds
// the config. A user's file names it absolutely.
func ProjectArg(t mcpconfig.Found, abs string) string {
	if t.Workspace == "" {
		return abs
	}
	rel, ok := pathtree.Below(abs, t.Workspace)
	if !ok {
		return abs
	}
	rel = filepath.ToSlash(rel)
	if t.Client == mcpconfig.VSCode || t.Client == mcpconfig.Cursor {
		return "${workspaceFolder}/" + rel
	}
	return rel
}

// PolicyFile is the policy file the entries of config t load: --policy,
// else bouncer.yaml beside a project's config (a team commits it), else
// policy.yaml in the state directory.
func (p *Plan) PolicyFile(t mcpconfig.Found) string {
	switch {
	case p.Policy != "":
		return p.Policy
	case t.Workspace != "":
		return filepath.Join(t.Workspace, "bouncer.yaml")
	}
	return filepath.Join(p.State, "policy.yaml")
}

// Write writes a file init made or extends (a policy file, a hook file):
// whole, replacing old with a .bak of it (mcpconfig.Replace), or, when
// old is nil, as a new file that is 0600 in a directory of 0700 for a
// user's own (user) and 0644 in one of 0755 in a project, which a team
// commits.
func Write(path string, old, data []byte, user bool) error {
	if old != nil {
		return mcpconfig.Replace(path, old, data)
	}
	perm, dirPerm := os.FileMode(0o644), os.FileMode(0o755)
	if user {
		perm, dirPerm = 0o600, 0o700
	}
	return mcpconfig.Create(path, data, perm, dirPerm)
}
