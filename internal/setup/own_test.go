package setup

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bouncer-mcp/bouncer/internal/engine"
)

// runSources reads a wrapped entry's arguments as bouncer run's flags do
// (cmd/bouncer's runArgsSources): --policy (a relative one against base
// with --config), --policy-dir and --trust.
func runSources(args []string, base string) (Sources, error) {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(new(strings.Builder))
	var policies []string
	fs.Func("policy", "", func(s string) error { policies = append(policies, s); return nil })
	dir := fs.String("policy-dir", "", "")
	trust := fs.String("trust", "", "")
	config := fs.String("config", "", "")
	fs.String("server", "", "")
	fs.String("project", "", "")
	if len(args) == 0 || args[0] != "run" {
		return Sources{}, flag.ErrHelp
	}
	if err := fs.Parse(args[1:]); err != nil {
		return Sources{}, err
	}
	for i, p := range policies {
		if *config != "" && !filepath.IsAbs(p) {
			policies[i] = filepath.Join(base, p)
		}
	}
	return Sources{Policies: policies, PolicyDir: *dir, Trust: *trust}, nil
}

// The config that launched a proxy names files that are Bouncer's own:
// itself, the policy, trust file and --policy-dir of every wrapped entry
// (variables expanded, a relative --policy against the config's base) and
// the client's hook file; not what an entry that bouncer run would refuse,
// or an unwrapped one, names.
func TestLaunchFiles(t *testing.T) {
	dir := t.TempDir()
	proj := filepath.Join(dir, "proj")
	state := filepath.Join(dir, "state")
	home := filepath.Join(dir, "home")
	t.Setenv("TEAM_POLICY", filepath.Join(dir, "team"))
	config := write(t, filepath.Join(proj, ".mcp.json"), `{"mcpServers": {
  "mail": {"command": "bouncer", "args": ["run", "--config", ".mcp.json", "--server", "mail", "--policy", "mail.yaml"],
           "x-bouncer-upstream": {"command": "mail-server"}},
  "fs": {"command": "bouncer", "args": ["run", "--config", ".mcp.json", "--server", "fs", "--policy", "${TEAM_POLICY}/fs.yaml",
           "--policy-dir", "`+filepath.Join(dir, "pdir")+`", "--trust", "`+filepath.Join(dir, "trust.yaml")+`"],
         "x-bouncer-upstream": {"command": "fs-server"}},
  "broken": {"command": "bouncer", "args": ["run", "--no-such-flag", "--policy", "broken.yaml"],
             "x-bouncer-upstream": {"command": "x"}},
  "plain": {"command": "server", "args": ["--policy", "plain.yaml"]}
}}`)
	got, err := LaunchFiles(Launch{File: config, Base: proj, Sources: runSources}, state, home)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		config,
		filepath.Join(proj, ".claude", "settings.json"),
		filepath.Join(proj, "mail.yaml"),
		filepath.Join(dir, "team", "fs.yaml"),
		filepath.Join(dir, "pdir"),
		filepath.Join(dir, "trust.yaml"),
	} {
		if !slices.Contains(got, want) {
			t.Errorf("%s is not among the launching config's files %q", want, got)
		}
	}
	for _, f := range got {
		if strings.HasSuffix(f, "broken.yaml") || strings.HasSuffix(f, "plain.yaml") {
			t.Errorf("%s is listed: bouncer run loads no such policy", f)
		}
	}

	// ~/.claude.json: the servers of every project, each project's
	// relative --policy against its own directory.
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	user := write(t, filepath.Join(home, ".claude.json"), `{"projects": {
  "`+a+`": {"mcpServers": {"x": {"command": "bouncer", "args": ["run", "--config", "`+filepath.Join(home, ".claude.json")+`", "--project", "`+a+`", "--server", "x", "--policy", "a.yaml"], "x-bouncer-upstream": {"command": "x"}}}},
  "`+b+`": {"mcpServers": {"y": {"command": "bouncer", "args": ["run", "--config", "`+filepath.Join(home, ".claude.json")+`", "--project", "`+b+`", "--server", "y", "--policy", "b.yaml"], "x-bouncer-upstream": {"command": "y"}}}}
}}`)
	got, err = LaunchFiles(Launch{File: user, Project: a, Base: a, Sources: runSources}, state, home)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{user, filepath.Join(a, "a.yaml"), filepath.Join(b, "b.yaml"), filepath.Join(home, ".claude", "settings.json")} {
		if !slices.Contains(got, want) {
			t.Errorf("%s is not among ~/.claude.json's files %q", want, got)
		}
	}

	// A config that can't be read stops the proxy, as it stops run.
	if _, err := LaunchFiles(Launch{File: filepath.Join(dir, "gone.json"), Sources: runSources}, state, home); err == nil {
		t.Error("a missing config was read")
	}
}

// What init's record says it wrote is Bouncer's own for every proxy,
// however it was launched: a proxy started by hand (bouncer run -- CMD,
// no --config) refuses writes to the configs init wrapped and the hook
// files it wrote, and its Own (what the sandbox keeps the upstream off)
// holds them. A record that can't be trusted stops the proxy.
func TestLoadProtectsWhatInitWrote(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	pol := write(t, filepath.Join(dir, "p.yaml"), "{}\n")
	gemini := filepath.Join(dir, "proj", ".gemini", "settings.json")
	cursor := filepath.Join(dir, "home", ".cursor", "hooks.json")
	record := write(t, filepath.Join(state, "init.json"), `{"`+gemini+`": {"config": true}, "`+cursor+`": {"hook": true}}`)
	if got, err := InitFiles(state); err != nil || !slices.Equal(got, []string{cursor, gemini}) {
		t.Errorf("InitFiles: %q, %v", got, err)
	}
	dec, err := Load(Config{Sources: Sources{Policies: []string{pol}, StateDir: state}, WorkDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	e, err := dec.Engine("fs", "")
	if err != nil {
		t.Fatal(err)
	}
	e.PinAll()
	for _, p := range []string{gemini, cursor} {
		if d := decideWrite(t, e, p); d.Verdict != engine.Deny || !strings.Contains(d.Reason, "Bouncer's own state") {
			t.Errorf("a write to %s: %s %q", p, d.Verdict, d.Reason)
		}
		if !slices.Contains(dec.Own, p) {
			t.Errorf("%s is not in Own, which the sandbox keeps the upstream from", p)
		}
	}
	if err := os.Chmod(record, 0o622); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(Config{Sources: Sources{Policies: []string{pol}, StateDir: state}, WorkDir: dir}); err == nil || !strings.Contains(err.Error(), record) {
		t.Errorf("a record others may write was read: %v", err)
	}
}

// OwnPaths takes each source, marks directories, adds what links resolve
// to, and leaves out relative paths.
func TestOwnPaths(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	if err := os.Mkdir(state, 0o700); err != nil {
		t.Fatal(err)
	}
	pol := write(t, filepath.Join(dir, "real", "p.yaml"), "{}\n")
	link := filepath.Join(dir, "link.yaml")
	if err := os.Symlink(pol, link); err != nil {
		t.Fatal(err)
	}
	got := OwnPaths(OwnSources{StateDir: state, InForce: []string{link, "relative.yaml"},
		Launch: []string{filepath.Join(dir, "cfg.json")}, Session: []string{filepath.Join(dir, "other.yaml")}})
	want := []engine.OwnPath{
		{Path: state, Dir: true}, {Path: link}, {Path: pol},
		{Path: filepath.Join(dir, "cfg.json")}, {Path: filepath.Join(dir, "other.yaml")},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

// decideWrite asks e about a write_file to path.
func decideWrite(t *testing.T, e *engine.Engine, path string) engine.Decision {
	t.Helper()
	c, err := engine.ParseCall([]byte(`{"name":"write_file","arguments":{"path":"` + path + `","content":"x"}}`))
	if err != nil {
		t.Fatal(err)
	}
	return e.Decide(c)
}

// A proxy launched by a config refuses writes to the config itself, to the
// policy it names for another server and to the client's hook file.
func TestLoadProtectsTheLaunchingConfig(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	fsPol := write(t, filepath.Join(dir, "fs.yaml"), "{}\n")
	mailPol := write(t, filepath.Join(dir, "mail.yaml"), "{}\n")
	config := write(t, filepath.Join(dir, ".mcp.json"), `{"mcpServers": {
  "fs": {"command": "bouncer", "args": ["run", "--config", ".mcp.json", "--server", "fs", "--policy", "fs.yaml"], "x-bouncer-upstream": {"command": "fs"}},
  "mail": {"command": "bouncer", "args": ["run", "--config", ".mcp.json", "--server", "mail", "--policy", "mail.yaml"], "x-bouncer-upstream": {"command": "mail"}}
}}`)
	dec, err := Load(Config{Sources: Sources{Policies: []string{fsPol}, StateDir: state}, WorkDir: dir,
		Launch: &Launch{File: config, Base: dir, Sources: runSources}})
	if err != nil {
		t.Fatal(err)
	}
	e, err := dec.Engine("fs", "filesystem")
	if err != nil {
		t.Fatal(err)
	}
	e.PinAll()
	for _, p := range []string{config, mailPol, filepath.Join(dir, ".claude", "settings.json")} {
		if d := decideWrite(t, e, p); d.Verdict != engine.Deny || !strings.Contains(d.Reason, "Bouncer's own state") {
			t.Errorf("a write to %s: %s %q", p, d.Verdict, d.Reason)
		}
		if !slices.Contains(dec.Own, p) {
			t.Errorf("%s is not in Own, which the sandbox keeps the upstream from", p)
		}
	}
	if d := decideWrite(t, e, filepath.Join(dir, "notes.txt")); d.Verdict == engine.Deny {
		t.Errorf("a write beside them: %q", d.Reason)
	}
}

// The proxies of one client session protect one another's files: each
// publishes its own when it joins, and each engine learns what the others
// published, before and after it joined.
func TestClientSessionProtectsEachOthersFiles(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	load := func(name string) (*Decider, string) {
		pol := write(t, filepath.Join(dir, name+".yaml"), "{}\n")
		dec, err := Load(Config{Sources: Sources{Policies: []string{pol}, StateDir: state}, WorkDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		var said []string
		dec.JoinClient(state, func(m string) { said = append(said, m) })
		if !dec.Session.Shared() {
			t.Fatalf("no client session: %q", said)
		}
		return dec, pol
	}
	mail, mailPol := load("mail")
	mailEngine, err := mail.Engine("mail", "gmail")
	if err != nil {
		t.Fatal(err)
	}
	mailEngine.PinAll()
	fs, fsPol := load("fs")
	fsEngine, err := fs.Engine("fs", "filesystem")
	if err != nil {
		t.Fatal(err)
	}
	fsEngine.PinAll()

	if d := decideWrite(t, fsEngine, mailPol); d.Verdict != engine.Deny {
		t.Errorf("fs wrote mail's policy, published before fs joined: %s %q", d.Verdict, d.Reason)
	}
	if !slices.Contains(fs.Own, mailPol) {
		t.Errorf("fs's Own, which its sandbox keeps the upstream from, lacks mail's policy: %q", fs.Own)
	}
	if d := decideWrite(t, mailEngine, fsPol); d.Verdict != engine.Deny {
		t.Errorf("mail wrote fs's policy, published after mail joined: %s %q", d.Verdict, d.Reason)
	}
	if d := decideWrite(t, mailEngine, filepath.Join(dir, "notes.txt")); d.Verdict == engine.Deny {
		t.Errorf("a write beside them: %q", d.Reason)
	}

	// A server kept apart in its history (shared_session: false) is not
	// kept apart from the others' files, nor they from its.
	apartPol := write(t, filepath.Join(dir, "apart.yaml"), "shared_session: false\n")
	apart, err := Load(Config{Sources: Sources{Policies: []string{apartPol}, StateDir: state}, WorkDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	apart.JoinClient(state, func(string) {})
	if apart.Session.Shared() {
		t.Fatal("shared_session: false joined the client's history")
	}
	apartEngine, err := apart.Engine("apart", "")
	if err != nil {
		t.Fatal(err)
	}
	apartEngine.PinAll()
	if d := decideWrite(t, apartEngine, mailPol); d.Verdict != engine.Deny {
		t.Errorf("the server kept apart wrote mail's policy: %s %q", d.Verdict, d.Reason)
	}
	if d := decideWrite(t, fsEngine, apartPol); d.Verdict != engine.Deny {
		t.Errorf("fs wrote the policy of the server kept apart: %s %q", d.Verdict, d.Reason)
	}
}
