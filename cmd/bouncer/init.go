package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"

	"github.com/bouncer-mcp/bouncer/internal/hooks"
	"github.com/bouncer-mcp/bouncer/internal/mcpconfig"
	"github.com/bouncer-mcp/bouncer/internal/pathtree"
	"github.com/bouncer-mcp/bouncer/internal/protect"
)

const initSynopsis = `bouncer init [--config FILE] [--server NAME]... [--policy FILE] [--yes]
       bouncer init --undo [--config FILE] [--server NAME]... [--yes]

With no --config, init finds the MCP client configs of this user and of the
project in the current directory (Claude Code, Cursor, Claude Desktop,
VS Code, Gemini CLI), lists them, and asks before changing each.`

// initState is what init remembers in the state directory: what it added
// to each hook file, so that --undo removes that and nothing the user had.
const initStateFile = "init.json"

// cmdInit wraps (or, with --undo, unwraps) the servers of MCP client
// configs, writes the policy that confines them, and offers the prompt
// hook. It shows what it will change and asks first; the answer is read
// from stdin, terminal or not, because this is the user's own setup step,
// not an approval the agent could forge.
func cmdInit(args []string) error {
	fs, home := newFlags("init", initSynopsis)
	configFile := fs.String("config", "", "the client config `FILE` (default: find them)")
	var servers multiFlag
	fs.Var(&servers, "server", "only server `NAME` (repeatable; default: every server)")
	yes := fs.Bool("yes", false, "answer yes to every question")
	undo := fs.Bool("undo", false, "restore the original entries and remove the hook init added")
	policyFlag := fs.String("policy", "", "policy `FILE` to write or extend (default: bouncer.yaml beside a project's config, $BOUNCER_HOME/policy.yaml for a user's)")
	if done, err := parseFlags(fs, args); done {
		return err
	}
	if fs.NArg() > 0 {
		return usageErr("%s", fmt.Sprintf("init: unexpected argument %q", fs.Arg(0)))
	}
	state, err := stateDir(*home)
	if err != nil {
		return badInput(fmt.Errorf("%v", err))
	}
	cwd, err := os.Getwd()
	if err != nil {
		return badInput(fmt.Errorf("%v", err))
	}
	userHome := os.Getenv("HOME")
	in := &initRun{
		yes: *yes, undo: *undo, servers: servers, state: state, cwd: cwd, home: userHome,
		stdin: bufio.NewReader(os.Stdin), single: *configFile != "", bin: findLauncher(),
	}
	if *policyFlag != "" {
		if in.policy, err = filepath.Abs(*policyFlag); err != nil {
			return badInput(fmt.Errorf("%v", err))
		}
	}

	var targets []mcpconfig.Found
	if *configFile != "" {
		f := mcpconfig.Found{Path: *configFile, Client: mcpconfig.ClientOf(*configFile), Workspace: mcpconfig.Workspace(*configFile, userHome)}
		if filepath.Base(*configFile) == ".claude.json" {
			f.Project = cwd
		}
		targets = append(targets, f)
	} else {
		targets = mcpconfig.Discover(mcpconfig.Where{Home: userHome, Dir: cwd, GOOS: runtime.GOOS, ConfigHome: os.Getenv("XDG_CONFIG_HOME")})
		if len(targets) == 0 {
			fmt.Println("No MCP client config found for this project or user. Looked for:")
			for _, c := range mcpconfig.Candidates(mcpconfig.Where{Home: userHome, Dir: cwd, GOOS: runtime.GOOS, ConfigHome: os.Getenv("XDG_CONFIG_HOME")}) {
				fmt.Printf("  %s: %s\n", c.Client, in.show(c.Path))
			}
			fmt.Println("Run bouncer init in your project's root directory, or name a file with --config.")
			return nil
		}
		fmt.Println("MCP client configs found:")
		for _, t := range targets {
			fmt.Printf("  %s\n", in.label(t))
		}
	}
	for _, t := range targets {
		if !in.single {
			fmt.Println()
			fmt.Println(in.label(t))
		}
		if st := in.do(t); st == exitUsage && in.single {
			return silently(st)
		}
	}
	if !*undo {
		in.summary()
	}
	in.otherProjects()
	if in.status != exitOK {
		return silently(in.status) // each problem was said as it came
	}
	return nil
}

// initRun is one run of init over its targets.
type initRun struct {
	yes, undo, single bool
	servers           []string
	policy            string // --policy, absolute; "" for the defaults
	state, cwd, home  string
	stdin             *bufio.Reader
	status            int
	hookFiles         map[string]bool // hook files already offered
	bin               launcher
	// done are the configs init went through, in order, with the command
	// it chose for each: the summary describes them once all are written.
	done []doneConfig
	// others are the servers of other projects in ~/.claude.json, per
	// file: init wraps only this project's.
	others map[string][]mcpconfig.ProjectServers
	// keptOut is, per config and server, what of its directories its
	// writes are kept from (Bouncer's own files, the clients' configs),
	// as the summary shows them.
	keptOut map[[2]string][]string
}

func (in *initRun) fail(st int) {
	if st > in.status {
		in.status = st
	}
}

// show names a path as the user would type it: relative to the working
// directory when below it, ~/... when below the home directory.
func (in *initRun) show(p string) string {
	if r, ok := pathtree.Below(p, in.cwd); ok {
		return r
	}
	if in.home != "" {
		if r, ok := pathtree.Below(p, in.home); ok {
			return filepath.Join("~", r)
		}
	}
	return p
}

func (in *initRun) label(t mcpconfig.Found) string {
	name, scope := kind(t)
	return fmt.Sprintf("%s (%s): %s", name, scope, in.show(t.Path))
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

// ask asks a yes/no question; --yes answers it.
func (in *initRun) ask(q string) bool {
	fmt.Printf("%s [y/N] ", q)
	if in.yes {
		fmt.Println("yes (--yes)")
		return true
	}
	line, err := in.stdin.ReadString('\n')
	if err != nil && line == "" {
		fmt.Println()
	}
	a := strings.ToLower(strings.TrimSpace(line))
	return a == "y" || a == "yes"
}

// do wraps or unwraps one config file and its hook file.
func (in *initRun) do(t mcpconfig.Found) int {
	cfg, err := mcpconfig.Load(t.Path)
	if err != nil {
		errorf("%v", err)
		in.fail(exitUsage)
		return exitUsage
	}
	if t.Project != "" {
		// Before anything else: a file whose other projects alone have
		// servers is passed over below, and those are still to be named.
		if o := cfg.OtherProjects(t.Project); len(o) > 0 {
			if in.others == nil {
				in.others = map[string][]mcpconfig.ProjectServers{}
			}
			in.others[t.Path] = o
		}
	}
	if !in.single && !cfg.HasServers(t.Project) {
		fmt.Println("  no MCP servers in it")
		return exitOK
	}
	if in.undo {
		return in.doUndo(t, cfg)
	}
	return in.doWrap(t, cfg)
}

// projectArg is how a project's own file names a path of the project: by
// ${workspaceFolder} where the client expands it (VS Code, Cursor), else
// relative to the project, which bouncer run resolves from where it finds
// the config. A user's file names it absolutely.
func projectArg(t mcpconfig.Found, abs string) string {
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

func (in *initRun) policyFile(t mcpconfig.Found) string {
	switch {
	case in.policy != "":
		return in.policy
	case t.Workspace != "":
		return filepath.Join(t.Workspace, "bouncer.yaml")
	}
	return filepath.Join(in.state, "policy.yaml")
}

func readIfExists(p string) ([]byte, error) {
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return b, err
}

func (in *initRun) doWrap(t mcpconfig.Found, cfg *mcpconfig.Config) int {
	abs, err := filepath.Abs(t.Path)
	if err != nil {
		errorf("%s: %v", t.Path, err)
		in.fail(exitUsage)
		return exitUsage
	}
	command, why, err := in.bin.command(t)
	if err != nil {
		errorf("%s: nothing written: %v", in.show(t.Path), err)
		in.fail(exitFail)
		in.done = append(in.done, doneConfig{t: t, cfg: cfg})
		return exitFail
	}

	// The policy: the filesystem servers' own directories confine their
	// writes.
	polFile := in.policyFile(t)
	before, err := cfg.Servers(t.Project)
	if err != nil {
		errorf("%v", err)
		in.fail(exitUsage)
		return exitUsage
	}
	guarded := in.guarded(t, polFile)
	dirs, listed, refuse, notes := in.filesystemDirs(t, cfg, before, polFile, guarded)
	oldPol, err := readIfExists(polFile)
	if err != nil {
		errorf("%s: %v", polFile, err)
		in.fail(exitUsage)
		return exitUsage
	}
	pe, err := protect.Extend(polFile, oldPol, protect.Confinement{Dirs: dirs, Guarded: guarded, Listed: listed, Refuse: refuse})
	if err != nil {
		errorf("%v", err)
		in.fail(exitUsage)
		return exitUsage
	}
	if pe.New == nil && in.policy != "" {
		pe.New = []byte(protect.Header) // --policy given: the file the entries name must exist
	}
	usePolicy := pe.New != nil
	opts := mcpconfig.WrapOptions{
		Servers: in.servers, Project: t.Project, Command: command,
		ConfigArg: projectArg(t, abs), Remote: true, Workspace: t.Workspace,
	}
	// Entries wrapped before that launch a bouncer that is gone, or that
	// the client can't find, launch this one now.
	opts.Relaunch = func(cur string) bool { return in.bin.relaunch(t, cur, command) }
	if usePolicy {
		opts.ExtraArgs = []string{"--policy", projectArg(t, polFile)}
	}
	out, changes, err := cfg.Wrap(opts)
	if err != nil {
		errorf("%v", err)
		in.fail(exitUsage)
		return exitUsage
	}
	wrapping := false // the config changes
	for _, c := range changes {
		wrapping = wrapping || c.Status == mcpconfig.Wrapped || c.Status == mcpconfig.CommandUpdated
	}
	writePolicy := usePolicy && pe.Changed() && (wrapping || oldPol != nil || len(dirs) > 0 || refuse)
	if wrapping && in.single {
		os.Stdout.Write(out)
		if len(out) > 0 && out[len(out)-1] != '\n' {
			fmt.Println()
		}
		fmt.Println()
	}
	for _, c := range changes {
		fmt.Printf("  %s.%s\n", c.Block, c)
		if wrapping && !in.single && c.Status == mcpconfig.Wrapped {
			fmt.Printf("    becomes %s\n", strings.ReplaceAll(c.Text, "\n", "\n    "))
		}
	}
	for _, n := range notes {
		fmt.Printf("  %s\n", n)
	}
	if writePolicy {
		what := "extend"
		if oldPol == nil {
			what = "new"
		}
		fmt.Printf("  %s (%s):\n", in.show(polFile), what)
		for _, a := range pe.Added {
			fmt.Printf("    %s\n", a)
		}
	}
	for _, l := range pe.Left {
		fmt.Printf("  left alone: %s\n", l)
	}
	if wrapping {
		fmt.Printf("  The entries launch %s: %s.\n", command, why)
	}
	if !wrapping && !writePolicy {
		fmt.Println("  No changes: every server is already wrapped, or none can be.")
	} else {
		q := "Write " + in.show(t.Path)
		switch {
		case writePolicy && wrapping:
			q += " and " + in.show(polFile)
		case writePolicy:
			q = "Write " + in.show(polFile)
		}
		if in.ask(q + "?") {
			// The policy first: a wrapped entry must never name a file
			// that is not there yet.
			if writePolicy {
				if err := writeNewOrReplace(polFile, oldPol, pe.New, t.Workspace == ""); err != nil {
					errorf("%v", err)
					in.fail(exitFail)
					return exitFail
				}
				fmt.Printf("  Wrote %s.\n", in.show(polFile))
			}
			if wrapping {
				if err := cfg.Write(out); err != nil {
					errorf("%v", err)
					in.fail(exitFail)
					return exitFail
				}
				fmt.Printf("  Wrote %s (the previous version is in %s.bak). Restart your client.\n", in.show(t.Path), in.show(t.Path))
			}
		} else {
			fmt.Println("Not written.")
			in.fail(exitFail)
			return exitFail
		}
	}
	in.offerHook(t, command)
	in.done = append(in.done, doneConfig{t: t, cfg: cfg})
	return exitOK
}

// writeNewOrReplace writes a file init made or extends: atomically, with a
// .bak of what it replaces, 0600 in the state directory (user) and 0644 in
// a project, which a team commits.
func writeNewOrReplace(path string, old, data []byte, user bool) error {
	if old != nil {
		return mcpconfig.Replace(path, old, data)
	}
	perm, dirPerm := os.FileMode(0o644), os.FileMode(0o755)
	if user {
		perm, dirPerm = 0o600, 0o700
	}
	return mcpconfig.Create(path, data, perm, dirPerm)
}

// guarded returns the paths no filesystem server's writes may reach
// (protect.Around): Bouncer's own files (the state directory, which holds
// the audit log and its head, the approvals, the remembered destinations,
// the user's trust file and policy, and installed policy sets; the policy
// file init writes) and the files that make the clients run Bouncer (every
// MCP config of this user and project, this one included, and their hook
// files), and the backups init keeps of them. The system trust file,
// /etc/bouncer/trust.yaml, is root's.
func (in *initRun) guarded(t mcpconfig.Found, polFile string) []string {
	g := []string{in.state, polFile}
	if in.policy != "" {
		g = append(g, in.policy)
	}
	configs := []string{t.Path}
	for _, dir := range []string{in.cwd, t.Workspace} {
		if dir == "" {
			continue
		}
		for _, c := range mcpconfig.Candidates(mcpconfig.Where{Home: in.home, Dir: dir, GOOS: runtime.GOOS, ConfigHome: os.Getenv("XDG_CONFIG_HOME")}) {
			configs = append(configs, c.Path)
		}
	}
	for _, c := range configs {
		g = append(g, c)
		if h, _, ok := hooks.File(c, in.home); ok {
			g = append(g, h)
		}
	}
	for _, p := range g[1:] {
		// The backup init's writes keep of each (mcpconfig.Replace): what
		// a user restores by hand.
		g = append(g, p+".bak")
	}
	seen := map[string]bool{}
	out := g[:0]
	for _, p := range g {
		if abs, err := filepath.Abs(p); err == nil {
			p = abs // a relative --home or --config, against the working directory
		}
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

// filesystemDirs returns the prefixes that confine the config's
// filesystem servers (their directories, or, for a directory that holds a
// guarded path, what it holds but those: protect.Around), as the policy
// file is to name them, and a note for each directory that can't be named
// there. listed is true when some directory was listed around guarded
// paths, refuse when the servers' directories hold nothing but guarded
// paths, so that no prefix is left to give.
func (in *initRun) filesystemDirs(t mcpconfig.Found, cfg *mcpconfig.Config, servers []mcpconfig.Server, polFile string, guarded []string) (dirs []string, listed, refuse bool, notes []string) {
	want := map[string]bool{}
	for _, s := range in.servers {
		want[s] = true
	}
	x := mcpconfig.Expander{Client: cfg.Client, Workspace: t.Workspace, Home: in.home, Getenv: os.LookupEnv}
	seen := map[string]bool{}
	emptied := false // a directory held nothing but guarded paths
	for _, s := range servers {
		if (len(want) > 0 && !want[s.Name]) || s.Remote || s.Launch.Command == "" {
			continue
		}
		pack, rest, ok := protect.Recognize(s.Launch)
		if !ok || pack != protect.FilesystemPack {
			continue
		}
		if len(protect.Dirs(rest)) == 0 {
			notes = append(notes, fmt.Sprintf("%s: names no directory (it takes them from the client's roots), so its writes are not confined; give it its directories as arguments", s.Name))
		}
		for _, d := range protect.Dirs(rest) {
			v, err := x.Expand(d)
			if err != nil {
				notes = append(notes, fmt.Sprintf("%s: directory %s: %v; its writes there are not confined", s.Name, d, err))
				continue
			}
			asWritten := filepath.IsAbs(v) && v == d
			switch {
			case v == "~" || strings.HasPrefix(v, "~/"):
				v = filepath.Join(in.home, strings.TrimPrefix(v, "~"))
			case !filepath.IsAbs(v) && t.Workspace != "":
				v = filepath.Join(t.Workspace, v) // project servers start in the project
			case !filepath.IsAbs(v):
				notes = append(notes, fmt.Sprintf("%s: directory %q is relative to wherever the client starts it, so its writes are not confined; give it an absolute path", s.Name, d))
				continue
			}
			v = filepath.Clean(v)
			cover, left := protect.Around(v, guarded)
			listed = listed || len(left) > 0 && len(cover) > 0
			if len(left) > 0 {
				if in.keptOut == nil {
					in.keptOut = map[[2]string][]string{}
				}
				key := [2]string{t.Path, s.Name}
				for _, l := range left {
					in.keptOut[key] = append(in.keptOut[key], in.show(l))
				}
			}
			if len(cover) == 0 {
				emptied = true
				notes = append(notes, fmt.Sprintf("%s: directory %s holds nothing but Bouncer's own files and the MCP clients' configs, which it must not write; its writes there are refused", s.Name, d))
				continue
			}
			for _, c := range cover {
				name := c
				if t.Workspace != "" {
					// A project's policy is committed: a path of the
					// project is named relative to the policy file, one
					// outside it only as the config itself names it.
					if r, ok := pathtree.Below(c, filepath.Dir(polFile)); ok {
						name = filepath.ToSlash(r)
					} else if !asWritten {
						notes = append(notes, fmt.Sprintf("%s: directory %s is outside the project, and a project's policy names no path of one person's machine; add %s to allowed_path_prefixes of write_file, edit_file, create_directory and move_file in your own policy to confine it", s.Name, d, c))
						continue
					}
				}
				if !seen[name] {
					seen[name] = true
					dirs = append(dirs, name)
				}
			}
		}
	}
	return dirs, listed, emptied && len(dirs) == 0, notes
}

// offerHook adds Bouncer's prompt hook (and, for Claude Code, the deny
// rules) to the client's hook file, once per file, asking first. The hook
// runs program, the bouncer the config's entries launch.
func (in *initRun) offerHook(t mcpconfig.Found, program string) {
	path, client, ok := hooks.File(t.Path, in.home)
	if !ok {
		if t.Client == mcpconfig.VSCode || t.Client == mcpconfig.Gemini {
			fmt.Printf("  %s's prompt hook is not installed by init; docs/clients.md shows it.\n", t.Client)
		}
		return
	}
	if in.hookFiles == nil {
		in.hookFiles = map[string]bool{}
	}
	if in.hookFiles[path] {
		return
	}
	in.hookFiles[path] = true
	command := hooks.Command(program)
	old, err := readIfExists(path)
	if err != nil {
		errorf("%s: %v", path, err)
		in.fail(exitUsage)
		return
	}
	stale := func(p string) bool { return in.bin.relaunch(t, p, program) }
	h, err := hooks.Plan(path, client, old, command, stale)
	if err != nil {
		errorf("%v", err)
		in.fail(exitUsage)
		return
	}
	if h.Added.Empty() && h.Replaced == "" {
		return
	}
	fmt.Printf("  %s:\n", in.show(path))
	if h.Replaced != "" {
		fmt.Printf("    the prompt hook runs `%s`, not `%s`, as the servers launch %s\n", command, h.Replaced, program)
	}
	if h.Added.Hook {
		fmt.Printf("    add the prompt hook (%s runs `%s`): a destination you type is then yours to send to, even if a server's output holds it too\n", hooks.Event(client), command)
	}
	if len(h.Added.Deny) > 0 {
		fmt.Printf("    add permissions.deny %s: an agent with a shell could otherwise approve its own blocked calls, trust an address, or forge a prompt that vouches for one\n", strings.Join(h.Added.Deny, ", "))
	}
	if !in.ask(fmt.Sprintf("Change %s?", in.show(path))) {
		fmt.Println("Not written.")
		in.fail(exitFail)
		return
	}
	if err := writeNewOrReplace(path, old, h.New, t.Workspace == ""); err != nil {
		errorf("%v", err)
		in.fail(exitFail)
		return
	}
	if err := in.remember(path, func(a *hooks.Added) {
		a.Hook = a.Hook || h.Added.Hook
		switch {
		case h.Added.Command != "" || h.Replaced != "" && a.Hook:
			a.Command = command // init's own hook: undo removes it
		case h.Replaced != "":
			// The user's own hook, pointed at this bouncer: undo puts
			// back what the user had.
			if a.Was == "" {
				a.Was = h.ReplacedJSON
			}
			a.Command = command
		}
		if h.Replaced != "" && a.Created == string(old) {
			a.Created = string(h.New) // still all init's
		}
		a.Deny = append(a.Deny, h.Added.Deny...)
		if h.Added.Created != "" {
			a.Created = h.Added.Created
		}
	}); err != nil {
		errorf("%v (bouncer init --undo won't know to remove what was added to %s)", err, path)
	}
	fmt.Printf("  Wrote %s.\n", in.show(path))
}

// remember updates what init added to a hook file in the state directory.
func (in *initRun) remember(path string, f func(*hooks.Added)) error {
	file := filepath.Join(in.state, initStateFile)
	added := map[string]hooks.Added{}
	if b, err := readIfExists(file); err != nil {
		return err
	} else if b != nil {
		if err := json.Unmarshal(b, &added); err != nil {
			return fmt.Errorf("%s: %v", file, err)
		}
	}
	a := added[path]
	f(&a)
	if a.Empty() {
		delete(added, path)
	} else {
		added[path] = a
	}
	b, err := json.MarshalIndent(added, "", "  ")
	if err != nil {
		return err
	}
	if err := ensureStateDir(in.state); err != nil {
		return err
	}
	tmp := file + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, file)
}

func (in *initRun) recorded(path string) (hooks.Added, error) {
	file := filepath.Join(in.state, initStateFile)
	b, err := readIfExists(file)
	if err != nil || b == nil {
		return hooks.Added{}, err
	}
	added := map[string]hooks.Added{}
	if err := json.Unmarshal(b, &added); err != nil {
		return hooks.Added{}, fmt.Errorf("%s: %v", file, err)
	}
	return added[path], nil
}

func (in *initRun) doUndo(t mcpconfig.Found, cfg *mcpconfig.Config) int {
	out, changes, err := cfg.Undo(t.Project, in.servers)
	if err != nil {
		errorf("%v", err)
		in.fail(exitUsage)
		return exitUsage
	}
	restoring := false
	for _, c := range changes {
		restoring = restoring || c.Status == mcpconfig.Restored
		fmt.Printf("  %s.%s\n", c.Block, c)
	}
	if !restoring {
		fmt.Println("  No changes: no wrapped server to restore.")
	} else if in.ask(fmt.Sprintf("Write %s?", in.show(t.Path))) {
		if err := cfg.Write(out); err != nil {
			errorf("%v", err)
			in.fail(exitFail)
			return exitFail
		}
		fmt.Printf("  Wrote %s (the previous version is in %s.bak). Restart your client.\n", in.show(t.Path), in.show(t.Path))
		fmt.Printf("  %s is left in place: it holds rules you may still want.\n", in.show(in.policyFile(t)))
	} else {
		fmt.Println("Not written.")
		in.fail(exitFail)
	}
	if len(in.servers) == 0 {
		in.undoHook(t)
	}
	return exitOK
}

// undoHook removes from the client's hook file what init recorded adding.
func (in *initRun) undoHook(t mcpconfig.Found) {
	path, client, ok := hooks.File(t.Path, in.home)
	if !ok || in.hookFiles[path] {
		return
	}
	if in.hookFiles == nil {
		in.hookFiles = map[string]bool{}
	}
	in.hookFiles[path] = true
	a, err := in.recorded(path)
	if err != nil {
		errorf("%v", err)
		in.fail(exitUsage)
		return
	}
	if a.Empty() {
		return
	}
	cur, err := readIfExists(path)
	if err != nil || cur == nil {
		_ = in.remember(path, func(x *hooks.Added) { *x = hooks.Added{} })
		return
	}
	var text []byte
	var removed hooks.Added
	deleteFile := a.Created != "" && string(cur) == a.Created
	if !deleteFile {
		text, removed, err = hooks.Undo(path, client, cur, a)
		if err != nil {
			errorf("%v", err)
			in.fail(exitUsage)
			return
		}
		if removed.Empty() {
			_ = in.remember(path, func(x *hooks.Added) { *x = hooks.Added{} })
			return
		}
	}
	var what []string
	if deleteFile {
		what = []string{"delete the file, which it created"}
	} else {
		if removed.Hook {
			what = append(what, "remove the prompt hook")
		}
		if len(removed.Deny) > 0 {
			what = append(what, "remove "+strings.Join(removed.Deny, ", "))
		}
		if removed.Was != "" {
			what = append(what, "give the prompt hook back its command "+removed.Was)
		}
	}
	fmt.Printf("  %s: undo what bouncer init changed: %s\n", in.show(path), strings.Join(what, "; "))
	if !in.ask(fmt.Sprintf("Change %s?", in.show(path))) {
		fmt.Println("Not written.")
		in.fail(exitFail)
		return
	}
	if deleteFile {
		err = os.Remove(path)
	} else {
		err = mcpconfig.Replace(path, cur, text)
	}
	if err != nil {
		errorf("%v", err)
		in.fail(exitFail)
		return
	}
	_ = in.remember(path, func(x *hooks.Added) { *x = hooks.Added{} })
	fmt.Printf("  Wrote %s.\n", in.show(path))
}

// doneConfig is a config init went through, for the summary.
type doneConfig struct {
	t   mcpconfig.Found
	cfg *mcpconfig.Config // as read; the summary reads it again
}

// describe returns one summary line per server of the config: what the
// policy its wrapped entry loads enforces, from the packs and the policy
// files as bouncer run will load them. It adds each filesystem server
// that loads a policy file to shared, by file.
func (in *initRun) describe(t mcpconfig.Found, cfg *mcpconfig.Config, shared map[string][]string) []string {
	servers, err := cfg.Servers(t.Project)
	if err != nil {
		return nil
	}
	want := map[string]bool{}
	for _, s := range in.servers {
		want[s] = true
	}
	x := mcpconfig.Expander{Client: cfg.Client, Workspace: t.Workspace, Home: in.home, Getenv: os.LookupEnv}
	var lines []string
	for _, s := range servers {
		if len(want) > 0 && !want[s.Name] {
			continue
		}
		name := s.Name
		if strings.HasPrefix(s.Block, "projects[") {
			name += " (this project's)"
		}
		line := name + ": "
		switch {
		case !s.Wrapped:
			line += "not proxied; nothing enforced"
		default:
			// What bouncer run will load: its own flags, through the one
			// policy loader (setup.LoadPolicy), so the summary describes
			// the policy run enforces, --policy-dir and --trust included.
			args := make([]string, len(s.Args))
			for i, a := range s.Args {
				if p, err := x.Expand(a); err == nil {
					args[i] = p
				} else {
					args[i] = a
				}
			}
			base := t.Workspace
			if base == "" {
				base = in.cwd
			}
			inForce, err := runArgsPolicy(args, base)
			if err != nil {
				line += fmt.Sprintf("its policy does not load (%v): bouncer run will refuse to start it", err)
				break
			}
			pol := inForce.Policy
			var files []string
			for _, f := range inForce.Files {
				if !filepath.IsAbs(f) {
					f = filepath.Join(base, f)
				}
				files = append(files, f)
			}
			pack, _, _ := protect.Recognize(s.Launch)
			line += protect.Describe(pol, pack, t.Workspace)
			if kept := in.keptOut[[2]string{t.Path, s.Name}]; len(kept) > 0 {
				line += "; kept from its writes: " + strings.Join(kept, ", ") + " (Bouncer's own files and the MCP clients' configs)"
			}
			if pack == protect.FilesystemPack {
				for _, f := range files {
					shared[f] = append(shared[f], fmt.Sprintf("%s (%s)", s.Name, in.show(t.Path)))
				}
			}
		}
		lines = append(lines, line)
	}
	return lines
}

// summary says per config, once every config and policy file is written,
// what is enforced on each server: a policy file that servers of several
// configs share holds by then what all of them added to it.
func (in *initRun) summary() {
	shared := map[string][]string{}
	type section struct {
		head  string
		lines []string
	}
	var sections []section
	for _, d := range in.done {
		cfg := d.cfg
		if c, err := mcpconfig.Load(d.t.Path); err == nil {
			cfg = c
		}
		lines := in.describe(d.t, cfg, shared)
		if len(lines) == 0 {
			continue
		}
		name, scope := kind(d.t)
		head := fmt.Sprintf("%s (%s, %s", in.show(d.t.Path), name, scope)
		if cmd := launchedBy(cfg, d.t.Project); cmd != "" {
			head += "; its servers launch " + cmd
		}
		head += "):"
		sections = append(sections, section{head, lines})
	}
	if len(sections) == 0 {
		return
	}
	fmt.Println()
	fmt.Println("What is enforced:")
	for _, sec := range sections {
		fmt.Printf("  %s\n", sec.head)
		for _, l := range sec.lines {
			fmt.Printf("    %s\n", l)
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
		fmt.Printf("  %s is one policy for the filesystem servers %s: Bouncer lets each write in the directories of all of them (docs/clients.md: one policy per server).\n",
			in.show(f), strings.Join(shared[f], ", "))
	}
}

// launchedBy is the command the config's wrapped entries launch, when
// they all launch the same one; "" otherwise.
func launchedBy(cfg *mcpconfig.Config, project string) string {
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

// otherProjects names the servers of the other projects of Claude Code's
// ~/.claude.json that init left as they are: it wraps (and restores) only
// the project it runs in, as Claude Code starts a project's servers only
// there.
func (in *initRun) otherProjects() {
	var paths []string
	for p := range in.others {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		var rows []string
		for _, o := range in.others[p] {
			names := o.Unwrapped
			if in.undo {
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
		fmt.Println()
		if in.undo {
			fmt.Printf("Still wrapped: the servers of other projects in %s, which Claude Code starts only in that project's directory:\n", in.show(p))
		} else {
			fmt.Printf("Not wrapped: the servers of other projects in %s, which Claude Code starts only in that project's directory:\n", in.show(p))
		}
		for _, r := range rows {
			fmt.Printf("  %s\n", r)
		}
		if in.undo {
			fmt.Println("To restore them, run bouncer init --undo in each of those directories.")
		} else {
			fmt.Println("To wrap them, run bouncer init in each of those directories.")
		}
	}
}

// launcher is what init knows of the bouncer a wrapped entry is to start:
// this binary, and the one a PATH lookup finds.
type launcher struct {
	// self is this binary's absolute path, symbolic links resolved; ""
	// when unknown.
	self string
	// goRun: self is a build of `go run`, in a temporary directory that
	// is removed when it exits.
	goRun bool
	// onPath is what a lookup of "bouncer" on PATH finds, absolute; ""
	// when nothing.
	onPath string
	// isSelf: onPath is this binary (by path, link or copy of the same
	// file).
	isSelf bool
}

func findLauncher() launcher {
	var l launcher
	if exe, err := os.Executable(); err == nil {
		if r, err := filepath.EvalSymlinks(exe); err == nil {
			exe = r
		}
		l.self = exe
		l.goRun = goRunBuild(exe)
	}
	if p, err := exec.LookPath("bouncer"); err == nil {
		if abs, err := filepath.Abs(p); err == nil {
			l.onPath = abs
			l.isSelf = sameFile(abs, l.self)
		}
	}
	return l
}

// goRunBuild reports whether the binary at path was built by `go run`:
// it lives in DIR/go-buildNNN/bNNN/exe/, which go run removes on exit.
func goRunBuild(path string) bool {
	exe := filepath.Dir(path)
	b := filepath.Dir(exe)
	return filepath.Base(exe) == "exe" && strings.HasPrefix(filepath.Base(b), "b") &&
		strings.HasPrefix(filepath.Base(filepath.Dir(b)), "go-build")
}

func sameFile(a, b string) bool {
	if a == "" || b == "" {
		return false
	}
	fa, err1 := os.Stat(a)
	fb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(fa, fb)
}

const installHint = "install bouncer first (in the clone: go install ./cmd/bouncer, which puts it in $(go env GOPATH)/bin; or a release binary), then run bouncer init again"

// command decides what the wrapped entries (and the prompt hook) of the
// config t launch, and says why; an error when nothing init may write
// would start this binary. The rule: "bouncer" only where the client's
// lookup of that name finds this very binary, else this binary by its
// absolute path, so that what init wrote is what the client starts.
//
//   - A user's file of an app (mcpconfig.Client.Desktop: Claude Desktop,
//     Cursor, VS Code) gets the absolute path whatever PATH holds here:
//     launched from the Dock or a desktop menu, the app may not have the
//     PATH of the shell init runs in. Where PATH finds this binary by a
//     link, the path is the link's, which a package manager's upgrade
//     moves along.
//   - Any other file, a project's included, gets "bouncer" when PATH finds
//     this binary, else the absolute path: when PATH finds no bouncer, and
//     when it finds another one, because the entries and the policy are
//     what this binary wrote and knows how to run. A project's file is
//     shared, and init says that a path of this machine is in it.
//
// A go run build is never written: its directory is gone once it exits.
func (l launcher) command(t mcpconfig.Found) (command, why string, err error) {
	project := t.Workspace != ""
	app := !project && t.Client.Desktop()
	if l.isSelf && !app {
		return "bouncer", "found on PATH (" + l.onPath + ")", nil
	}
	var reason string
	switch {
	case app:
		reason = fmt.Sprintf("%s is an app, and an app started from the Dock or a desktop menu may not see your shell's PATH", t.Client)
	case l.onPath != "":
		reason = fmt.Sprintf("bouncer on PATH is %s, another binary than the one that ran init and wrote these entries (to launch that one, run its own bouncer init)", l.onPath)
	default:
		reason = "bouncer is not on PATH"
	}
	if l.self == "" {
		if l.onPath == "" {
			return "", "", fmt.Errorf("%s, and the path of the binary that ran init is unknown, so no entry init writes would start it; %s", reason, installHint)
		}
		if app {
			return l.onPath, reason + "; the path of the binary that ran init is unknown, so they name the one on PATH", nil
		}
		return "bouncer", "the path of the binary that ran init is unknown; on PATH bouncer is " + l.onPath, nil
	}
	if l.goRun {
		return "", "", fmt.Errorf("%s, so the entries would name this binary by its path, but go run built it in a temporary directory that is removed when it exits; %s", reason, installHint)
	}
	path := l.self
	if l.isSelf {
		path = l.onPath
	}
	why = reason + ", so they name it by its absolute path; if you move it, run bouncer init again"
	if project {
		why += ". This is a project's file: if you commit it, everyone needs bouncer at that path; put bouncer on PATH and run bouncer init again to write \"bouncer\" instead"
	}
	return path, why, nil
}

// relaunch reports whether init replaces cur, the command of an entry (or
// prompt hook) of the file t that was wrapped before, with command, the
// one it now chooses: where cur no longer starts this binary for the
// client (stale), and in a project's file an absolute path where
// "bouncer" now does. A command that isn't bouncer's (by name) and exists
// is the user's own wrapper, left alone.
func (l launcher) relaunch(t mcpconfig.Found, cur, command string) bool {
	if cur == command || l.self == "" || l.goRun {
		return false // no better command to give
	}
	base := filepath.Base(cur)
	_, statErr := os.Stat(cur)
	if base != "bouncer" && base != "bouncer.exe" && !(filepath.IsAbs(cur) && statErr != nil) {
		return false
	}
	if t.Workspace != "" && command == "bouncer" && filepath.IsAbs(cur) {
		return true // a shared file names no path when it needn't
	}
	return l.stale(t, cur)
}

// stale reports whether cur no longer starts this binary for the client of
// t: a bouncer that is gone, one the client can't find (a bare name in an
// app's user file, or a name PATH doesn't find), or another binary.
func (l launcher) stale(t mcpconfig.Found, cur string) bool {
	resolved := cur
	if !filepath.IsAbs(cur) {
		if t.Workspace == "" && t.Client.Desktop() {
			return true
		}
		p, err := exec.LookPath(cur)
		if err != nil {
			return true
		}
		resolved = p
	}
	return !sameFile(resolved, l.self)
}
