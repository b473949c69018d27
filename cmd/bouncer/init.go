package main

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/bouncer-mcp/bouncer/internal/hooks"
	"github.com/bouncer-mcp/bouncer/internal/initplan"
	"github.com/bouncer-mcp/bouncer/internal/mcpconfig"
	"github.com/bouncer-mcp/bouncer/internal/pathtree"
	"github.com/bouncer-mcp/bouncer/internal/policy"
	"github.com/bouncer-mcp/bouncer/internal/setup"
)

const initSynopsis = `bouncer init [--config FILE] [--server NAME]... [--policy FILE] [--yes]
       bouncer init --undo [--config FILE] [--server NAME]... [--yes]

With no --config, init finds the MCP client configs of this user and of the
project in the current directory (Claude Code, Cursor, Claude Desktop,
VS Code, Gemini CLI, Codex CLI, Goose, OpenCode and the others
docs/clients.md lists), lists them, and asks before changing each.`

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
	plan := &initplan.Plan{Cwd: cwd, Home: os.Getenv("HOME"), State: state, Servers: servers}
	if *policyFlag != "" {
		if plan.Policy, err = filepath.Abs(*policyFlag); err != nil {
			return badInput(fmt.Errorf("%v", err))
		}
	}
	in := &initRun{
		yes: *yes, undo: *undo, stdin: bufio.NewReader(os.Stdin), single: *configFile != "",
		plan: plan, bin: initplan.FindLauncher(), rec: initplan.Record{State: state},
		sum: &initplan.Summary{Plan: plan, Load: runPolicy},
	}

	where := mcpconfig.Where{Home: plan.Home, Dir: cwd, GOOS: runtime.GOOS, ConfigHome: os.Getenv("XDG_CONFIG_HOME")}
	var targets []mcpconfig.Found
	if *configFile != "" {
		targets = append(targets, mcpconfig.FoundAt(*configFile, where))
	} else {
		targets = mcpconfig.Discover(where)
		if len(targets) == 0 {
			fmt.Println("No MCP client config found for this project or user. Looked for:")
			for _, c := range mcpconfig.Candidates(where) {
				fmt.Printf("  %s: %s\n", c.Client, plan.Show(c.Path))
			}
			fmt.Println("Run bouncer init in your project's root directory, or name a file with --config.")
			return nil
		}
		fmt.Println("MCP client configs found:")
		for _, t := range targets {
			fmt.Printf("  %s\n", plan.Label(t))
		}
	}
	if !*undo {
		plan.FindPolicies(targets, runPolicy)
	}
	for _, t := range targets {
		if !in.single {
			fmt.Println()
			fmt.Println(plan.Label(t))
		}
		if st := in.do(t); st == exitUsage && in.single {
			return silently(st)
		}
	}
	if !*undo {
		in.sum.Write(os.Stdout)
	}
	in.sum.WriteOthers(os.Stdout, *undo)
	if !*undo && in.sum.WriteLast(os.Stdout) > 0 {
		// A server left as it was runs with nothing enforced: never a
		// quiet success (docs/clients.md).
		in.fail(exitFail)
	}
	if in.status != exitOK {
		return silently(in.status) // each problem was said as it came
	}
	return nil
}

// initRun is one run of init over its targets: what it decides is
// internal/initplan's; this asks, writes, and says what it did.
type initRun struct {
	yes, undo, single bool
	noAnswerSaid      bool // the hint for an ended stdin was printed
	stdin             *bufio.Reader
	status            int
	hookFiles         map[string]bool // hook files already offered
	plan              *initplan.Plan
	bin               initplan.Launcher
	rec               initplan.Record
	sum               *initplan.Summary
}

// runPolicy is the policy `bouncer run` would load with the wrapped
// entry's args (initplan.Loader): run's own flags, through the one policy
// loader (setup.LoadPolicy). A policy that does not load still names its
// --policy files: they are another server's policy all the same.
func runPolicy(args []string, base string) (*policy.Policy, []string, error) {
	src, err := runArgsSources(args, base)
	if err != nil {
		return nil, nil, err
	}
	in, err := setup.LoadPolicy(src)
	if err != nil {
		return nil, src.Policies, err
	}
	return in.Policy, in.Files, nil
}

func (in *initRun) fail(st int) {
	if st > in.status {
		in.status = st
	}
}

func (in *initRun) show(p string) string { return in.plan.Show(p) }

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
		if !in.noAnswerSaid {
			in.noAnswerSaid = true
			fmt.Println("  (no answer: input ended, so nothing is changed; run bouncer init in a terminal to answer, or pass --yes)")
		}
	}
	a := strings.ToLower(strings.TrimSpace(line))
	return a == "y" || a == "yes"
}

// do wraps or unwraps one config file and its hook file.
func (in *initRun) do(t mcpconfig.Found) int {
	cfg, err := mcpconfig.Load(t.Path, in.plan.Kept())
	if err != nil {
		if _, statErr := os.Lstat(t.Path); errors.Is(statErr, fs.ErrNotExist) {
			err = fmt.Errorf("%s does not exist; name the MCP client config that lists your servers, or run bouncer init without --config to find them", in.show(t.Path))
		}
		errorf("%v", err)
		in.fail(exitUsage)
		in.sum.Unread(t, "not read")
		return exitUsage
	}
	if t.Project != "" {
		// Before anything else: a file whose other projects alone have
		// servers is passed over below, and those are still to be named.
		in.sum.Others(t, cfg)
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

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func readIfExists(p string) ([]byte, error) {
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return b, err
}

func (in *initRun) doWrap(t mcpconfig.Found, cfg *mcpconfig.Config) int {
	command, why, err := in.bin.Command(t)
	if err != nil {
		errorf("%s: nothing written: %v", in.show(t.Path), err)
		in.fail(exitFail)
		in.sum.Unread(t, "nothing written: see the error above")
		return exitFail
	}
	relaunch := func(cur string) bool { return in.bin.Relaunch(t, cur, command) }
	w, err := in.plan.Wrap(t, cfg, command, relaunch)
	if err != nil {
		errorf("%v", err)
		in.fail(exitUsage)
		in.sum.Unread(t, "not wrapped: see the error above")
		return exitUsage
	}
	in.sum.KeptOut(t, w.KeptOut)
	in.sum.Left(t, w.Changes, "")
	polFile, pe := w.PolicyFile, w.Policy
	if w.Rewrite && in.single {
		os.Stdout.Write(w.Out)
		if len(w.Out) > 0 && w.Out[len(w.Out)-1] != '\n' {
			fmt.Println()
		}
		fmt.Println()
	}
	for _, c := range w.Changes {
		fmt.Printf("  %s.%s\n", c.Block, c)
		if w.Rewrite && !in.single && c.Status == mcpconfig.Wrapped {
			fmt.Printf("    becomes %s\n", strings.ReplaceAll(c.Text, "\n", "\n    "))
		}
	}
	for _, n := range w.Notes {
		fmt.Printf("  %s\n", n)
	}
	if w.WritePolicy {
		what := "extend"
		if pe.Old == nil {
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
	if w.Rewrite {
		fmt.Printf("  The entries launch %s: %s.\n", command, why)
	}
	if !w.Rewrite && !w.WritePolicy {
		fmt.Println("  No changes: every server is already wrapped, or none can be.")
	} else {
		q := "Write " + in.show(t.Path)
		switch {
		case w.WritePolicy && w.Rewrite:
			q += " and " + in.show(polFile)
		case w.WritePolicy:
			q = "Write " + in.show(polFile)
		}
		notWritten := func(why string) int {
			in.fail(exitFail)
			in.sum.Left(t, w.Changes, why)
			in.sum.Done(t, cfg)
			return exitFail
		}
		if !in.ask(q + "?") {
			fmt.Println("Not written.")
			return notWritten("you answered no")
		}
		// The policy first: a wrapped entry must never name a file that
		// is not there yet.
		if w.WritePolicy {
			if err := initplan.Write(polFile, pe.Old, pe.New, t.Workspace == ""); err != nil {
				errorf("%v", err)
				return notWritten("not written: see the error above")
			}
			fmt.Printf("  Wrote %s.\n", in.show(polFile))
		}
		if w.Rewrite {
			// The originals a Strict client's entries can't hold, before
			// the entries that need them.
			if err := in.plan.Kept().Record(t.Path, w.Changes); err != nil {
				errorf("%v", err)
				return notWritten("not written: see the error above")
			}
			if err := cfg.Write(w.Out); err != nil {
				errorf("%v", err)
				return notWritten("not written: see the error above")
			}
			fmt.Printf("  Wrote %s (the previous version is in %s.bak). Restart your client.\n", in.show(t.Path), in.show(t.Path))
		}
	}
	in.recordWrapped(t)
	in.offerHook(t, command)
	in.sum.Done(t, cfg)
	return exitOK
}

// recordWrapped records in init's record whether config t (as it is now)
// has wrapped servers: every proxy then counts it as Bouncer's own, so a
// server of another config can't unwrap these (setup.InitFiles).
func (in *initRun) recordWrapped(t mcpconfig.Found) {
	abs, err := filepath.Abs(t.Path)
	if err != nil {
		return
	}
	wrapped := false
	if cfg, err := mcpconfig.Load(t.Path, in.plan.Kept()); err == nil {
		servers, _ := cfg.Servers(t.Project)
		for _, s := range servers {
			wrapped = wrapped || s.Wrapped && !s.HandWrapped
		}
	}
	if err := in.rec.Wrapped(abs, wrapped); err != nil {
		errorf("%v (the other servers' proxies won't count %s as Bouncer's own)", err, in.show(t.Path))
	}
}

// offerHook adds Bouncer's prompt hook (and, for Claude Code, the deny
// rules) to the client's hook file, once per file, asking first. The hook
// runs program, the bouncer the config's entries launch.
func (in *initRun) offerHook(t mcpconfig.Found, program string) {
	path, client, ok := hooks.File(t.Path, in.plan.Home)
	if !ok {
		if hooks.ByHand(t.Client) {
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
	stale := func(p string) bool { return in.bin.Relaunch(t, p, program) }
	var edit []string
	if hooks.HasEditRules(client) {
		var skipped []string
		edit, skipped = hooks.EditRules(path, in.plan.Home, in.plan.Keep())
		for _, s := range skipped {
			fmt.Printf("  %s: no permissions.deny rule for %s: its name has a character Claude Code's rules would read as a pattern\n", in.show(path), s)
		}
	}
	h, err := hooks.Plan(path, client, old, command, stale, edit)
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
	var bash, files []string
	for _, r := range h.Added.Deny {
		if strings.HasPrefix(r, "Bash(") {
			bash = append(bash, r)
		} else {
			files = append(files, r)
		}
	}
	if len(bash) > 0 {
		fmt.Printf("    add permissions.deny %s: an agent with a shell could otherwise approve its own blocked calls, trust an address, or forge a prompt that vouches for one\n", strings.Join(bash, ", "))
	}
	if len(files) > 0 {
		fmt.Printf("    add permissions.deny %s: the agent's own Edit, Write and NotebookEdit tools could otherwise change a policy, what Bouncer remembers, an MCP config or these rules\n", strings.Join(files, ", "))
	}
	if !in.ask(fmt.Sprintf("Change %s?", in.show(path))) {
		fmt.Println("Not written.")
		in.fail(exitFail)
		return
	}
	var madeDir string
	if old == nil {
		madeDir = missingDir(filepath.Dir(path))
	}
	if err := initplan.Write(path, old, h.New, t.Workspace == ""); err != nil {
		errorf("%v", err)
		in.fail(exitFail)
		return
	}
	if err := in.rec.Update(path, func(a *hooks.Added) {
		a.Merge(h)
		if madeDir != "" && a.CreatedDir == "" {
			a.CreatedDir = madeDir
		}
	}); err != nil {
		errorf("%v (bouncer init --undo won't know to remove what was added to %s)", err, path)
	}
	fmt.Printf("  Wrote %s.\n", in.show(path))
}

func (in *initRun) doUndo(t mcpconfig.Found, cfg *mcpconfig.Config) int {
	if path, _, ok := hooks.File(t.Path, in.plan.Home); ok && len(in.plan.Servers) == 0 && mcpconfig.SamePath(path, t.Path) {
		// The config is its own hook file (Gemini CLI's settings.json): the
		// hook comes out first, while the file is what init left, so that
		// it and then the servers go back byte for byte.
		in.undoHook(t)
		again, err := mcpconfig.Load(t.Path, in.plan.Kept())
		if err != nil {
			errorf("%v", err)
			in.fail(exitUsage)
			return exitUsage
		}
		cfg = again
	}
	out, changes, err := cfg.Undo(t.Project, in.plan.Servers)
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
		if err := in.plan.Kept().Record(t.Path, changes); err != nil {
			// The file is back as it was; what is kept only goes unused.
			errorf("%v (the original entries it kept for %s stay there, unused)", err, in.show(t.Path))
		}
		in.recordWrapped(t)
		fmt.Printf("  Wrote %s (the previous version is in %s.bak). Restart your client.\n", in.show(t.Path), in.show(t.Path))
		if pf := in.plan.PolicyFile(t); fileExists(pf) {
			fmt.Printf("  %s is left in place: it holds rules you may still want.\n", in.show(pf))
		}
	} else {
		fmt.Println("Not written.")
		in.fail(exitFail)
	}
	if len(in.plan.Servers) == 0 {
		in.undoHook(t)
	}
	return exitOK
}

// undoHook removes from the client's hook file what init recorded adding.
func (in *initRun) undoHook(t mcpconfig.Found) {
	path, client, ok := hooks.File(t.Path, in.plan.Home)
	if !ok || in.hookFiles[path] {
		return
	}
	if in.hookFiles == nil {
		in.hookFiles = map[string]bool{}
	}
	in.hookFiles[path] = true
	a, err := in.rec.Get(path)
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
		_ = in.rec.Forget(path)
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
			_ = in.rec.Forget(path)
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
	_ = in.rec.Forget(path)
	if !deleteFile {
		fmt.Printf("  Wrote %s.\n", in.show(path))
		return
	}
	// The directories init made for the file go too, when nothing else
	// is in them.
	for d := filepath.Dir(path); a.CreatedDir != "" && pathtree.Within(d, a.CreatedDir); d = filepath.Dir(d) {
		if os.Remove(d) != nil || d == a.CreatedDir {
			break
		}
	}
	fmt.Printf("  Removed %s.\n", in.show(path))
}

// missingDir is the topmost directory of dir and its parents that does
// not exist yet, or "" when dir exists: what writing a file in dir
// creates.
func missingDir(dir string) string {
	missing := ""
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil {
			return missing
		}
		missing = d
		if filepath.Dir(d) == d {
			return ""
		}
	}
}
