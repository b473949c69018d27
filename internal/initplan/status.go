package initplan

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"

	"github.com/bouncer-mcp/bouncer/internal/hooks"
	"github.com/bouncer-mcp/bouncer/internal/mcpconfig"
	"github.com/bouncer-mcp/bouncer/internal/statefile"
)

// Report is what `bouncer status` says: per client config found, its
// servers and its hook file; and every server left unprotected.
type Report struct {
	Configs     []ConfigState `json:"configs"`
	Unprotected []string      `json:"unprotected"`
}

// ConfigState is one client config as `bouncer status` reports it.
type ConfigState struct {
	Path   string `json:"path"`
	Client string `json:"client"`
	Scope  string `json:"scope"` // "project" or "user"
	// Error is why the file can't be read; its servers are then unknown.
	Error   string        `json:"error,omitempty"`
	Servers []ServerState `json:"servers"`
	// Hook is the client's hook file, where it has one init installs.
	Hook *HookState `json:"hook,omitempty"`
}

// HookState is what the client's hook file holds of Bouncer's.
type HookState struct {
	File string `json:"file"`
	// Prompt is the command of the prompt hook that runs `bouncer hook
	// prompt`; "" when there is none.
	Prompt string `json:"prompt_hook"`
	// MissingDeny are the permissions.deny rules init would write that
	// the file lacks (Claude Code).
	MissingDeny []string `json:"missing_deny,omitempty"`
	Error       string   `json:"error,omitempty"`
}

// Status reports on configs, as they are now. p.FindPolicies must have run
// over them: a server whose writes reach another server's policy is named,
// and the deny rules expected are those init would write.
func (s *Summary) Status(configs []mcpconfig.Found) Report {
	var r Report
	hookSeen := map[string]*HookState{}
	for _, t := range configs {
		name, scope := kind(t)
		cs := ConfigState{Path: t.Path, Client: name, Scope: scope, Servers: []ServerState{}}
		cfg, err := mcpconfig.Load(t.Path, s.Plan.Kept())
		if err == nil && cfg.HasServers(t.Project) {
			var states []ServerState
			if states, err = s.States(t, cfg); states != nil {
				cs.Servers = states
			}
		}
		if err != nil {
			cs.Error = err.Error()
			r.Unprotected = append(r.Unprotected, fmt.Sprintf("every server of %s (it does not read: %v)", s.Plan.Show(t.Path), err))
		}
		for _, st := range cs.Servers {
			if st.Unprotected != "" {
				r.Unprotected = append(r.Unprotected, fmt.Sprintf("%s (%s: %s)", st.Name, s.Plan.Show(t.Path), st.Unprotected))
			}
		}
		if path, client, ok := hooks.File(t.Path, s.Plan.Home); ok && (len(cs.Servers) > 0 || cs.Error != "") {
			if h := hookSeen[path]; h != nil {
				cs.Hook = h
			} else {
				cs.Hook = s.hookState(path, client)
				hookSeen[path] = cs.Hook
			}
		}
		r.Configs = append(r.Configs, cs)
	}
	if r.Unprotected == nil {
		r.Unprotected = []string{}
	}
	return r
}

func (s *Summary) hookState(path string, client mcpconfig.Client) *HookState {
	h := &HookState{File: path}
	data, err := statefile.ReadFile(path, maxRecord)
	if errors.Is(err, fs.ErrNotExist) {
		data, err = nil, nil
	}
	var st hooks.State
	if err == nil {
		st, err = hooks.Inspect(path, client, data)
	}
	if err != nil {
		h.Error = err.Error()
		return h
	}
	h.Prompt = st.Hook
	if hooks.HasEditRules(client) {
		edit, _ := hooks.EditRules(path, s.Plan.Home, s.Plan.Keep())
		for _, rule := range append(append([]string(nil), hooks.DenyRules...), edit...) {
			if !slices.Contains(st.Deny, rule) {
				h.MissingDeny = append(h.MissingDeny, rule)
			}
		}
	}
	return h
}
