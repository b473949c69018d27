package mcpconfig

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// Goose's config.yaml, as Goose itself writes it: each MCP server of its
// extensions rewritten key by key (its key line, Goose's own keys and the
// comments among them kept), its builtins not listed, the original kept in
// the state directory, started from as written, and put back byte for
// byte.
func TestGoose(t *testing.T) {
	root := t.TempDir()
	home := filepath.Join(root, "home")
	path := filepath.Join(home, ".config", "goose", "config.yaml")
	orig, err := os.ReadFile(filepath.Join("testdata", "clients", "goose.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, orig, 0o600); err != nil {
		t.Fatal(err)
	}
	if ClientOf(path) != Goose || Workspace(path, home) != "" || !Goose.KeepsOriginal() || !Goose.Desktop() {
		t.Fatalf("client %q", ClientOf(path))
	}
	found := Discover(Where{Home: home, Dir: filepath.Join(root, "proj"), GOOS: "linux"})
	if len(found) != 1 || found[0].Path != path || found[0].Client != Goose {
		t.Fatalf("discover: %+v", found)
	}
	k := Kept{State: filepath.Join(root, "state")}
	c, err := Load(path, k)
	if err != nil {
		t.Fatal(err)
	}
	servers, err := c.Servers("")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range servers {
		names = append(names, s.Name)
	}
	if want := []string{"filesystem", "github", "remote-docs"}; !reflect.DeepEqual(names, want) {
		t.Errorf("servers %q, want %q (a builtin is Goose's own)", names, want)
	}
	out, changes, err := c.Wrap(WrapOptions{ConfigArg: path, Command: "/opt/bouncer", Remote: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, ch := range changes {
		if ch.Status != Wrapped || ch.Kept == "" {
			t.Errorf("%s", ch)
		}
	}
	run := func(name string) string {
		return `["run", "--config", "` + path + `", "--server", "` + name + `"]`
	}
	want := strings.Replace(string(orig), `  filesystem:
    args:
    - -y
    - '@modelcontextprotocol/server-filesystem'
    - /home/me/proj
    bundled: null
    cmd: npx
    description: ''
    enabled: true
    env_keys: []
    envs:
      LOG_LEVEL: info
    name: filesystem
`, `  filesystem:
    bundled: null
    cmd: "/opt/bouncer"
    args: `+run("filesystem")+`
    description: ''
    enabled: true
    env_keys: []
    name: filesystem
`, 1)
	want = strings.Replace(want, `    cmd: github-mcp-server
    # keep it quick
    args: [stdio]
`, `    cmd: "/opt/bouncer"
    args: `+run("github")+`
    # keep it quick
`, 1)
	want = strings.Replace(want, `    type: streamable_http
    name: remote-docs
    enabled: true
    uri: https://docs.example.com/mcp
    headers:
      X-Team: platform
    env_keys: []
    envs: {}
`, `    type: stdio
    name: remote-docs
    enabled: true
    cmd: "/opt/bouncer"
    args: `+run("remote-docs")+`
    env_keys: []
`, 1)
	if string(out) != want {
		t.Errorf("wrapped:\n%s\nwant:\n%s", out, want)
	}
	var all map[string]any
	if err := yaml.Unmarshal(out, &all); err != nil || all["GOOSE_MODE"] != "smart_approve" {
		t.Fatalf("the wrapped file does not read: %v", err)
	}
	if err := k.Record(path, changes); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, out, 0o600); err != nil {
		t.Fatal(err)
	}
	for server, want := range map[string]Entry{
		"filesystem":  {Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-filesystem", "/home/me/proj"}, Env: map[string]string{"LOG_LEVEL": "info"}, Type: "stdio"},
		"github":      {Command: "github-mcp-server", Args: []string{"stdio"}, Type: "stdio"},
		"remote-docs": {URL: "https://docs.example.com/mcp", Headers: map[string]string{"X-Team": "platform"}, Type: "streamable_http"},
	} {
		r, err := Resolve(Lookup{File: path, Server: server, Getenv: os.LookupEnv, Kept: k})
		if err != nil || !reflect.DeepEqual(r.Entry, want) {
			t.Errorf("%s: %+v (%v), want %+v", server, r.Entry, err, want)
		}
	}
	c, err = Load(path, k)
	if err != nil {
		t.Fatal(err)
	}
	if again, ch, err := c.Wrap(WrapOptions{ConfigArg: path, Command: "/opt/bouncer", Remote: true}); err != nil || string(again) != string(out) || ch[0].Status != AlreadyWrapped {
		t.Errorf("wrap again: %v %+v", err, ch)
	}
	moved, ch, err := c.Wrap(WrapOptions{ConfigArg: path, Command: "/new/bouncer", Remote: true, Relaunch: func(string) bool { return true }})
	if err != nil || ch[0].Status != CommandUpdated || strings.Count(string(moved), `cmd: "/new/bouncer"`) != 3 {
		t.Errorf("relaunch: %v %+v\n%s", err, ch, moved)
	}
	undone, _, err := c.Undo("", nil)
	if err != nil || string(undone) != string(orig) {
		t.Errorf("undo (%v):\n%s", err, undone)
	}
}

// Goose rewrites its whole file when it saves a setting (serde_yaml, which
// drops comments and writes lists unindented): a wrapped entry written
// anew that way still reads as wrapped, starts its original, and undoes.
func TestGooseRewrittenByGoose(t *testing.T) {
	root := t.TempDir()
	path := filepath.Join(root, ".config", "goose", "config.yaml")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	orig := "extensions:\n  fs:\n    type: stdio\n    name: fs\n    cmd: npx\n    args: [\"-y\", \"server\"]\n    enabled: true\n"
	if err := os.WriteFile(path, []byte(orig), 0o600); err != nil {
		t.Fatal(err)
	}
	k := Kept{State: filepath.Join(root, "state")}
	c, err := Load(path, k)
	if err != nil {
		t.Fatal(err)
	}
	_, changes, err := c.Wrap(WrapOptions{ConfigArg: path, Command: "/opt/bouncer"})
	if err != nil || changes[0].Status != Wrapped {
		t.Fatalf("%v %+v", err, changes)
	}
	if err := k.Record(path, changes); err != nil {
		t.Fatal(err)
	}
	goose := "GOOSE_MODE: auto\nextensions:\n  fs:\n    args:\n    - run\n    - --config\n    - " + path + "\n    - --server\n    - fs\n    available_tools: []\n    bundled: null\n    cmd: /opt/bouncer\n    description: ''\n    enabled: true\n    env_keys: []\n    envs: {}\n    name: fs\n    timeout: null\n    type: stdio\n"
	if err := os.WriteFile(path, []byte(goose), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err = Load(path, k)
	if err != nil {
		t.Fatal(err)
	}
	if s, err := c.Servers(""); err != nil || len(s) != 1 || !s[0].Wrapped || s[0].Launch.Command != "npx" {
		t.Errorf("servers: %+v", s)
	}
	r, err := Resolve(Lookup{File: path, Server: "fs", Getenv: os.LookupEnv, Kept: k})
	if err != nil || r.Entry.Command != "npx" {
		t.Errorf("resolve: %+v %v", r, err)
	}
	undone, _, err := c.Undo("", nil)
	if want := "GOOSE_MODE: auto\n" + orig; err != nil || string(undone) != want {
		t.Errorf("undo (%v):\n%s\nwant:\n%s", err, undone, want)
	}
}

// Entries init can't rewrite are left unwrapped, and say why; Goose's own
// extensions are not servers, and not listed.
func TestGooseLeftAlone(t *testing.T) {
	text := `extensions:
  memory:
    type: platform
    name: memory
    enabled: true
  flow: {type: stdio, name: flow, cmd: x, args: []}
  block:
    type: stdio
    name: block
    cmd: x
    args:
    - |
      multi
  py:
    type: inline_python
    name: py
    code: print(1)
  typeless:
    name: typeless
    cmd: x
    args: []
  vars:
    type: stdio
    name: vars
    cmd: x
    args: ["${HOME}/y"]
  remote-secret:
    type: streamable_http
    name: remote-secret
    uri: https://x.example/mcp
    env_keys: [TOKEN]
  noargs:
    type: stdio
    name: noargs
    cmd: x
`
	c, err := Parse("/h/.config/goose/config.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	out, changes, err := c.Wrap(WrapOptions{ConfigArg: "/c", Remote: true})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, ch := range changes {
		got[ch.Server] = string(ch.Status) + ": " + ch.Reason
	}
	for name, want := range map[string]string{
		"flow":          "left alone: written in YAML's flow style",
		"block":         "left alone: it has a block scalar",
		"py":            "left alone: Goose runs its inline code itself",
		"typeless":      "left alone: it has no type",
		"vars":          "left alone: ${HOME}: Goose's variables are not documented",
		"remote-secret": "left alone: a remote extension with envs or env_keys",
		"noargs":        "left alone: a stdio extension without args",
	} {
		if !strings.HasPrefix(got[name], want) {
			t.Errorf("%s: %q, want %q", name, got[name], want)
		}
	}
	if _, ok := got["memory"]; ok || len(got) != 7 {
		t.Errorf("changes: %q", got)
	}
	if string(out) != text {
		t.Errorf("changed:\n%s", out)
	}
}

func FuzzGoose(f *testing.F) {
	seed, _ := os.ReadFile(filepath.Join("testdata", "clients", "goose.yaml"))
	for _, s := range []string{string(seed), "extensions:\n  a:\n    type: stdio\n    cmd: x\n    args: []\n", "extensions:\n  a:\n    type: sse\n    uri: u\n    # c\n\n  b:\n    type: stdio\n    args:\n    - y\n    cmd: y\nother: 1\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkWrapUndo(t, "/h/.config/goose/config.yaml", data) })
}
