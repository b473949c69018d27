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
	"strings"

	"github.com/bouncer-mcp/bouncer/internal/mcpconfig"
	"github.com/bouncer-mcp/bouncer/internal/policy"
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
		stdin: bufio.NewReader(os.Stdin), single: *configFile != "",
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
	report            []string        // the summary, one line per server
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
	if r, err := filepath.Rel(in.cwd, p); err == nil && !strings.HasPrefix(r, "..") {
		return r
	}
	if in.home != "" {
		if r, err := filepath.Rel(in.home, p); err == nil && !strings.HasPrefix(r, "..") {
			return filepath.Join("~", r)
		}
	}
	return p
}

func (in *initRun) label(t mcpconfig.Found) string {
	scope := "user"
	if t.Workspace != "" {
		scope = "project"
	}
	name := string(t.Client)
	if name == "" {
		name = "MCP client"
	}
	return fmt.Sprintf("%s (%s): %s", name, scope, in.show(t.Path))
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
	rel, err := filepath.Rel(t.Workspace, abs)
	if err != nil || strings.HasPrefix(rel, "..") {
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
	command, note := "bouncer", ""
	if t.Workspace == "" {
		// A user's own file may name this binary by path; a project's is
		// committed, so it runs bouncer from PATH on every machine.
		command, note = bouncerCommand()
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
	if usePolicy {
		opts.ExtraArgs = []string{"--policy", projectArg(t, polFile)}
	}
	out, changes, err := cfg.Wrap(opts)
	if err != nil {
		errorf("%v", err)
		in.fail(exitUsage)
		return exitUsage
	}
	wrapping := false
	for _, c := range changes {
		wrapping = wrapping || c.Status == mcpconfig.Wrapped
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
	if note != "" && wrapping {
		fmt.Printf("  %s\n", note)
	}
	wrote := !wrapping && !writePolicy
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
			wrote = true
		} else {
			fmt.Println("Not written.")
			in.fail(exitFail)
			return exitFail
		}
	}
	in.offerHook(t)
	if wrote {
		cfg, err = mcpconfig.Load(t.Path)
		if err != nil {
			errorf("%v", err)
			return exitUsage
		}
	}
	in.describe(t, cfg)
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
		if h, _, ok := mcpconfig.HookFile(c, in.home); ok {
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
					if r, err := filepath.Rel(filepath.Dir(polFile), c); err == nil && !strings.HasPrefix(r, "..") {
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
// rules) to the client's hook file, once per file, asking first.
func (in *initRun) offerHook(t mcpconfig.Found) {
	path, client, ok := mcpconfig.HookFile(t.Path, in.home)
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
	command := "bouncer hook prompt"
	if t.Workspace == "" {
		if c, _ := bouncerCommand(); c != "bouncer" {
			command = shellQuote(c) + " hook prompt"
		}
	}
	old, err := readIfExists(path)
	if err != nil {
		errorf("%s: %v", path, err)
		in.fail(exitUsage)
		return
	}
	h, err := mcpconfig.PlanHook(path, client, old, command, nil)
	if err != nil {
		errorf("%v", err)
		in.fail(exitUsage)
		return
	}
	if h.Added.Empty() {
		return
	}
	fmt.Printf("  %s:\n", in.show(path))
	if h.Added.Hook {
		fmt.Printf("    add the prompt hook (%s runs `%s`): a destination you type is then yours to send to, even if a server's output holds it too\n", hookEvent(client), command)
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
	if err := in.remember(path, func(a *mcpconfig.Added) {
		a.Hook = a.Hook || h.Added.Hook
		a.Deny = append(a.Deny, h.Added.Deny...)
		if h.Added.Created != "" {
			a.Created = h.Added.Created
		}
	}); err != nil {
		errorf("%v (bouncer init --undo won't know to remove what was added to %s)", err, path)
	}
	fmt.Printf("  Wrote %s.\n", in.show(path))
}

func hookEvent(c mcpconfig.Client) string {
	if c == mcpconfig.Cursor {
		return "beforeSubmitPrompt"
	}
	return "UserPromptSubmit"
}

func shellQuote(s string) string {
	if !strings.ContainsAny(s, " \t'\"\\$`!*?[]{}()<>|&;#~") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// remember updates what init added to a hook file in the state directory.
func (in *initRun) remember(path string, f func(*mcpconfig.Added)) error {
	file := filepath.Join(in.state, initStateFile)
	added := map[string]mcpconfig.Added{}
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

func (in *initRun) recorded(path string) (mcpconfig.Added, error) {
	file := filepath.Join(in.state, initStateFile)
	b, err := readIfExists(file)
	if err != nil || b == nil {
		return mcpconfig.Added{}, err
	}
	added := map[string]mcpconfig.Added{}
	if err := json.Unmarshal(b, &added); err != nil {
		return mcpconfig.Added{}, fmt.Errorf("%s: %v", file, err)
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
	path, client, ok := mcpconfig.HookFile(t.Path, in.home)
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
		_ = in.remember(path, func(x *mcpconfig.Added) { *x = mcpconfig.Added{} })
		return
	}
	var text []byte
	var removed mcpconfig.Added
	deleteFile := a.Created != "" && string(cur) == a.Created
	if !deleteFile {
		text, removed, err = mcpconfig.UndoHook(path, client, cur, a)
		if err != nil {
			errorf("%v", err)
			in.fail(exitUsage)
			return
		}
		if removed.Empty() {
			_ = in.remember(path, func(x *mcpconfig.Added) { *x = mcpconfig.Added{} })
			return
		}
	}
	fmt.Printf("  %s: remove what bouncer init added (the prompt hook, %s)\n", in.show(path), strings.Join(a.Deny, ", "))
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
	_ = in.remember(path, func(x *mcpconfig.Added) { *x = mcpconfig.Added{} })
	fmt.Printf("  Wrote %s.\n", in.show(path))
}

// describe adds one summary line per server of the config: what the policy
// its wrapped entry loads enforces, from the packs and the policy files as
// bouncer run will load them.
func (in *initRun) describe(t mcpconfig.Found, cfg *mcpconfig.Config) {
	servers, err := cfg.Servers(t.Project)
	if err != nil {
		return
	}
	want := map[string]bool{}
	for _, s := range in.servers {
		want[s] = true
	}
	x := mcpconfig.Expander{Client: cfg.Client, Workspace: t.Workspace, Home: in.home, Getenv: os.LookupEnv}
	for _, s := range servers {
		if len(want) > 0 && !want[s.Name] {
			continue
		}
		line := s.Name + ": "
		switch {
		case !s.Wrapped:
			line += "not proxied; nothing enforced"
		default:
			var files []string
			for i := 0; i+1 < len(s.Args); i++ {
				if s.Args[i] == "--policy" {
					p, err := x.Expand(s.Args[i+1])
					if err != nil {
						p = s.Args[i+1]
					}
					if !filepath.IsAbs(p) {
						base := t.Workspace
						if base == "" {
							base = in.cwd
						}
						p = filepath.Join(base, p)
					}
					files = append(files, p)
				}
			}
			pol, err := policy.Load(files...)
			if err != nil {
				line += fmt.Sprintf("its policy does not load (%v): bouncer run will refuse to start it", err)
				break
			}
			pack, _, _ := protect.Recognize(s.Launch)
			line += protect.Describe(pol, pack, t.Workspace)
			if kept := in.keptOut[[2]string{t.Path, s.Name}]; len(kept) > 0 {
				line += "; kept from its writes: " + strings.Join(kept, ", ") + " (Bouncer's own files and the MCP clients' configs)"
			}
		}
		in.report = append(in.report, line)
	}
}

func (in *initRun) summary() {
	if len(in.report) == 0 {
		return
	}
	fmt.Println()
	fmt.Println("What is enforced:")
	for _, l := range in.report {
		fmt.Printf("  %s\n", l)
	}
}

// bouncerCommand is the command a wrapped entry in a user's own file
// launches: "bouncer" when a PATH lookup finds it, else this binary's
// absolute path, because desktop clients start servers without the shell's
// PATH and would not find it.
func bouncerCommand() (command, note string) {
	if _, err := exec.LookPath("bouncer"); err == nil {
		return "bouncer", ""
	}
	exe, err := os.Executable()
	if err != nil {
		return "bouncer", "Note: bouncer is not on PATH and its own path is unknown; the entries launch \"bouncer\", which your client must find."
	}
	if r, err := filepath.EvalSymlinks(exe); err == nil {
		exe = r
	}
	return exe, fmt.Sprintf("Note: bouncer is not on PATH, so the entries launch %s by its absolute path (desktop clients don't see your shell's PATH). Run init again if you move the binary.", exe)
}
