package initplan

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/bouncer-mcp/bouncer/internal/hooks"
	"github.com/bouncer-mcp/bouncer/internal/mcpconfig"
	"github.com/bouncer-mcp/bouncer/internal/policy"
	"github.com/bouncer-mcp/bouncer/internal/protect"
)

// Loader says which policy `bouncer ARGS` (a wrapped entry's args: run
// and its flags, variables expanded) would load, with its files in load
// order, a relative --config's entry resolving relative files against
// base. An error is the reason run would refuse to start. cmd/bouncer's
// is run's own flag set and setup's one policy loader, so the summary
// describes the policy run enforces, --policy-dir and --trust included.
type Loader func(args []string, base string) (pol *policy.Policy, files []string, err error)

// Summary gathers, as init goes through its configs, what its closing
// summary says: per config, what is enforced on each server, once every
// config and policy file is written (a policy file that servers of
// several configs share holds by then what all of them added to it); and
// the servers of other projects that init left as they are.
type Summary struct {
	Plan *Plan
	Load Loader
	// done are the configs init went through, in order, as read.
	done []done
	// others are the servers of other projects in ~/.claude.json, per
	// file: init wraps only this project's.
	others map[string][]mcpconfig.ProjectServers
	// keptOut is, per config and server, what of its directories its
	// writes are kept from, as Confined.KeptOut has it.
	keptOut map[[2]string][]string
	// why is, per config and server, why init left it unwrapped (an
	// entry it can't wrap, a file not written), as Left has it.
	why map[[2]string]string
	// unread are the configs init could not read or plan, with why.
	unread []string
	// unprotected are the servers Write found not proxied, each with its
	// file and why: what the last line names; described counts the
	// servers Write described.
	unprotected []string
	described   int
}

type done struct {
	t   mcpconfig.Found
	cfg *mcpconfig.Config // as read; the summary reads it again
}

// Done adds config t, as read (cfg), to those the summary describes. It
// is read again when the summary is written.
func (s *Summary) Done(t mcpconfig.Found, cfg *mcpconfig.Config) {
	s.done = append(s.done, done{t, cfg})
}

// KeptOut records what of their directories the writes of config t's
// filesystem servers are kept from (Confined.KeptOut).
func (s *Summary) KeptOut(t mcpconfig.Found, kept map[string][]string) {
	for server, paths := range kept {
		if s.keptOut == nil {
			s.keptOut = map[[2]string][]string{}
		}
		key := [2]string{t.Path, server}
		s.keptOut[key] = append(s.keptOut[key], paths...)
	}
}

// Left records why servers of config t are left unwrapped: each change
// that left an entry alone, with its reason, and with declined set (the
// user answered no, or the write failed), each that was to be wrapped.
func (s *Summary) Left(t mcpconfig.Found, changes []mcpconfig.Change, declined string) {
	for _, c := range changes {
		why := ""
		switch {
		case c.Status == mcpconfig.Skipped:
			why = c.Reason
		case c.Status == mcpconfig.Wrapped && declined != "":
			why = declined
		default:
			continue
		}
		if s.why == nil {
			s.why = map[[2]string]string{}
		}
		s.why[[2]string{t.Path, c.Server}] = why
	}
}

// Unread records a config init could not read or wrap (the error was
// said): its servers are left as they were.
func (s *Summary) Unread(t mcpconfig.Found, why string) {
	s.unread = append(s.unread, fmt.Sprintf("every server of %s (%s)", s.Plan.Show(t.Path), why))
}

// Others records the servers of ~/.claude.json's other projects (t.Project
// names this one), which init leaves as they are.
func (s *Summary) Others(t mcpconfig.Found, cfg *mcpconfig.Config) {
	if o := cfg.OtherProjects(t.Project); len(o) > 0 {
		if s.others == nil {
			s.others = map[string][]mcpconfig.ProjectServers{}
		}
		s.others[t.Path] = o
	}
}

// Write says per config what is enforced on each server, and which
// policy files several filesystem servers share; nothing when no config
// has a server to describe.
func (s *Summary) Write(w io.Writer) {
	shared := map[string][]string{}
	type section struct {
		head  string
		lines []string
	}
	var sections []section
	for _, d := range s.done {
		t, cfg := d.t, d.cfg
		if c, err := mcpconfig.Load(t.Path, s.Plan.Kept()); err == nil {
			cfg = c
		}
		lines := s.describe(t, cfg, shared)
		if len(lines) == 0 {
			continue
		}
		name, scope := kind(t)
		head := fmt.Sprintf("%s (%s, %s", s.Plan.Show(t.Path), name, scope)
		if cmd := LaunchedBy(cfg, t.Project); cmd != "" {
			head += "; its servers launch " + cmd
		}
		head += "):"
		sections = append(sections, section{head, lines})
	}
	if len(sections) == 0 {
		return
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "What is enforced:")
	for _, sec := range sections {
		fmt.Fprintf(w, "  %s\n", sec.head)
		for _, l := range sec.lines {
			fmt.Fprintf(w, "    %s\n", l)
		}
	}
	var files []string
	for f, fsServers := range shared {
		if len(fsServers) > 1 {
			files = append(files, f)
		}
	}
	sort.Strings(files)
	for _, f := range files {
		fmt.Fprintf(w, "  %s is one policy for the filesystem servers %s: Bouncer lets each write in the directories of all of them (docs/clients.md: one policy per server).\n",
			s.Plan.Show(f), strings.Join(shared[f], ", "))
	}
	// The clients' own file tools, which no proxy sees: said as the hook
	// files now are (a change the user declined is not in).
	var kept, open, lacking []string
	seen := map[string]bool{}
	for _, d := range s.done {
		name, _ := kind(d.t)
		path, client, ok := hooks.File(d.t.Path, s.Plan.Home)
		switch {
		case !hooks.HasEditRules(d.t.Client):
			if !slices.Contains(open, name) {
				open = append(open, name)
			}
		case ok && !seen[path]:
			seen[path] = true
			if h := s.hookState(path, client); h.Error == "" && len(h.MissingDeny) == 0 {
				kept = append(kept, s.Plan.Show(path))
			} else {
				lacking = append(lacking, s.Plan.Show(path))
			}
		}
	}
	if len(kept) > 0 {
		fmt.Fprintf(w, "  Claude Code's own Edit, Write and NotebookEdit tools are kept off Bouncer's files and the MCP configs by the permissions.deny rules of %s.\n", strings.Join(kept, ", "))
	}
	if len(lacking) > 0 {
		fmt.Fprintf(w, "  %s lacks permissions.deny rules init would write, so Claude Code's own tools can still change Bouncer's files (bouncer status lists them; run bouncer init again and answer yes).\n", strings.Join(lacking, ", "))
	}
	if len(open) > 0 {
		fmt.Fprintf(w, "  %s: no rules keep the agent's own file tools off Bouncer's files and the MCP configs, so it can still change them; review its edits to those files (docs/clients.md).\n", strings.Join(open, ", "))
	}
}

// ServerState is what holds for one server of a config, as init's summary
// and `bouncer status` say it.
type ServerState struct {
	Name  string `json:"name"`
	Block string `json:"block"`
	// Wrapped: the entry launches bouncer run in front of its server.
	Wrapped bool `json:"wrapped"`
	// Original says where the wrapped entry's original is: "file"
	// (x-bouncer-upstream), "state" (the state directory), "command line"
	// (wrapped by hand); "" when not wrapped.
	Original string `json:"original,omitempty"`
	// Launches is what the wrapped entry starts: bouncer, by name or path.
	Launches string `json:"launches,omitempty"`
	// Policy are the policy files bouncer run loads for it, absolute, in
	// load order; PolicyError why that policy does not load (bouncer run
	// then refuses to start it).
	Policy      []string `json:"policy,omitempty"`
	PolicyError string   `json:"policy_error,omitempty"`
	// Enforced says in one line what is enforced on it.
	Enforced string `json:"enforced"`
	// Unprotected says why it runs with nothing enforced, or what of
	// Bouncer's its writes reach; "" when neither.
	Unprotected string `json:"unprotected,omitempty"`

	pack string // the pack written for it
}

// States returns the state of each server of config t, read as cfg (those
// --server selects): whether it is wrapped and where its original is,
// which policy it loads (by s.Load: run's own flags) and what that
// enforces, and what is left unprotected.
func (s *Summary) States(t mcpconfig.Found, cfg *mcpconfig.Config) ([]ServerState, error) {
	servers, err := cfg.Servers(t.Project)
	if err != nil {
		return nil, err
	}
	var out []ServerState
	for _, srv := range servers {
		if !s.Plan.selected(srv.Name) {
			continue
		}
		st := ServerState{Name: srv.Name, Block: srv.Block, Wrapped: srv.Wrapped}
		switch {
		case srv.Lost:
			st.Enforced = "not started: bouncer run finds its original entry nowhere"
			st.Unprotected = "wrapped, but bouncer run refuses to start it: " + cfg.LostOriginal()
		case !srv.Wrapped:
			st.Enforced = "not proxied; nothing enforced"
			st.Unprotected = s.why[[2]string{t.Path, srv.Name}]
			if st.Unprotected == "" {
				st.Unprotected = "not wrapped"
			}
		default:
			st.Launches = srv.Command
			switch {
			case srv.HandWrapped:
				st.Original = "command line"
			case srv.Kept:
				st.Original = "state"
			default:
				st.Original = "file"
			}
			args, base := s.Plan.runArgs(t, cfg, srv)
			pol, inForce, err := s.Load(args, base)
			for _, f := range inForce {
				if !filepath.IsAbs(f) {
					f = filepath.Join(base, f)
				}
				st.Policy = append(st.Policy, f)
			}
			if err != nil {
				st.PolicyError = err.Error()
				st.Enforced = fmt.Sprintf("its policy does not load (%v): bouncer run will refuse to start it", err)
				break
			}
			st.pack, _, _ = protect.Recognize(srv.Launch)
			st.Enforced = protect.Describe(pol, st.pack, t.Workspace)
			if reach := protect.Reaches(pol, others(s.Plan.Policies, st.Policy)); len(reach) > 0 && len(st.Policy) > 0 {
				var names []string
				for _, r := range reach {
					names = append(names, s.Plan.Show(r))
				}
				st.Unprotected = fmt.Sprintf("its writes reach %s, another server's policy: take it out of allowed_path_prefixes in %s", strings.Join(names, ", "), s.Plan.Show(st.Policy[len(st.Policy)-1]))
				st.Enforced += "; " + st.Unprotected
			}
		}
		out = append(out, st)
	}
	return out, nil
}

// describe returns one summary line per server of the config: what the
// policy its wrapped entry loads enforces, from the packs and the policy
// files as bouncer run will load them. It adds each filesystem server
// that loads a policy file to shared, by file.
func (s *Summary) describe(t mcpconfig.Found, cfg *mcpconfig.Config, shared map[string][]string) []string {
	states, err := s.States(t, cfg)
	if err != nil {
		return nil
	}
	var lines []string
	for _, st := range states {
		name := st.Name
		if strings.HasPrefix(st.Block, "projects[") {
			name += " (this project's)"
		}
		line := name + ": " + st.Enforced
		s.described++
		if st.Unprotected != "" {
			s.unprotected = append(s.unprotected, fmt.Sprintf("%s (%s: %s)", st.Name, s.Plan.Show(t.Path), st.Unprotected))
		}
		if kept := s.keptOut[[2]string{t.Path, st.Name}]; len(kept) > 0 {
			line += "; kept from its writes: " + strings.Join(kept, ", ") + " (another server's policy, Bouncer's state directory)"
		}
		if st.pack == protect.FilesystemPack && st.PolicyError == "" {
			for _, f := range st.Policy {
				shared[f] = append(shared[f], fmt.Sprintf("%s (%s)", st.Name, s.Plan.Show(t.Path)))
			}
		}
		lines = append(lines, line)
	}
	return lines
}

// WriteLast writes the summary's last line, after Write: every server of
// the configs init went through that is left unprotected, or that none
// is. It returns how many are: init's exit status says so too, since a
// server left as it was runs with nothing enforced and the user may not
// read up to that line.
func (s *Summary) WriteLast(w io.Writer) int {
	left := append(append([]string(nil), s.unprotected...), s.unread...)
	if len(left) == 0 {
		if s.described > 0 {
			fmt.Fprintln(w)
			fmt.Fprintln(w, "Every server init went through is wrapped.")
		}
		return 0
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "Left unprotected, with nothing enforced: %s.\n", strings.Join(left, "; "))
	return len(left)
}

// others are the policy files among all that are not among own.
func others(all, own []string) []string {
	var out []string
	for _, f := range all {
		if !slices.ContainsFunc(own, func(o string) bool { return mcpconfig.SamePath(o, f) }) {
			out = append(out, f)
		}
	}
	return out
}

// LaunchedBy is the command the config's wrapped entries launch, when
// they all launch the same one; "" otherwise.
func LaunchedBy(cfg *mcpconfig.Config, project string) string {
	servers, err := cfg.Servers(project)
	if err != nil {
		return ""
	}
	cmd := ""
	for _, s := range servers {
		if !s.Wrapped {
			continue
		}
		if cmd != "" && s.Command != cmd {
			return ""
		}
		cmd = s.Command
	}
	return cmd
}

// WriteOthers names the servers of the other projects of Claude Code's
// ~/.claude.json that init left as they are (Others): it wraps (and, with
// undo, restores) only the project it runs in, as Claude Code starts a
// project's servers only there. It says how to reach them.
func (s *Summary) WriteOthers(w io.Writer, undo bool) {
	var paths []string
	for p := range s.others {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		var rows []string
		for _, o := range s.others[p] {
			names := o.Unwrapped
			if undo {
				names = o.Wrapped
			}
			if len(names) == 0 {
				continue
			}
			row := fmt.Sprintf("%s: %s", o.Dir, strings.Join(names, ", "))
			if fi, err := os.Stat(o.Dir); err != nil || !fi.IsDir() {
				row += " (no such directory now)"
			}
			rows = append(rows, row)
		}
		if len(rows) == 0 {
			continue
		}
		fmt.Fprintln(w)
		if undo {
			fmt.Fprintf(w, "Still wrapped: the servers of other projects in %s, which Claude Code starts only in that project's directory:\n", s.Plan.Show(p))
		} else {
			fmt.Fprintf(w, "Not wrapped: the servers of other projects in %s, which Claude Code starts only in that project's directory:\n", s.Plan.Show(p))
		}
		for _, r := range rows {
			fmt.Fprintf(w, "  %s\n", r)
		}
		if undo {
			fmt.Fprintln(w, "To restore them, run bouncer init --undo in each of those directories.")
		} else {
			fmt.Fprintln(w, "To wrap them, run bouncer init in each of those directories.")
		}
	}
}
