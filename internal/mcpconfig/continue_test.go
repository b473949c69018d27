package mcpconfig

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// Continue's config.yaml, as its users write it: each item of its
// mcpServers list wrapped by splicing its lines (every other byte,
// comments included, kept), its name and Continue's own keys left on it,
// the original kept in the state directory, started from as written, and
// put back byte for byte.
func TestContinue(t *testing.T) {
	root := t.TempDir()
	home := filepath.Join(root, "home")
	path := filepath.Join(home, ".continue", "config.yaml")
	orig, err := os.ReadFile(filepath.Join("testdata", "clients", "continue.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, orig, 0o600); err != nil {
		t.Fatal(err)
	}
	if ClientOf(path) != Continue || Workspace(path, home) != "" {
		t.Fatalf("client %q", ClientOf(path))
	}
	block := filepath.Join(root, "proj", ".continue", "mcpServers", "sqlite.yaml")
	if ClientOf(block) != Continue || Workspace(block, home) != filepath.Join(root, "proj") {
		t.Fatalf("block file: %q, %q", ClientOf(block), Workspace(block, home))
	}
	k := Kept{State: filepath.Join(root, "state")}
	c, err := Load(path, k)
	if err != nil {
		t.Fatal(err)
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
	want := strings.Replace(string(orig), `  - name: SQLite MCP
    command: npx
    args:
      - "-y"
      - "mcp-sqlite"
      - "/home/me/db.sqlite"
    env: {}
    connectionTimeout: 30000
  - name: Remote docs
    type: streamable-http
    url: https://docs.example.com/mcp
    requestOptions:
      headers:
        X-Team: platform
`, `  - name: SQLite MCP
    command: "/opt/bouncer"
    args: ["run", "--config", "`+path+`", "--server", "SQLite MCP"]
    connectionTimeout: 30000
  - name: Remote docs
    command: "/opt/bouncer"
    args: ["run", "--config", "`+path+`", "--server", "Remote docs"]
`, 1)
	if string(out) != want {
		t.Errorf("wrapped:\n%s\nwant:\n%s", out, want)
	}
	var all map[string]any
	if err := yaml.Unmarshal(out, &all); err != nil || all["models"] == nil {
		t.Fatalf("the wrapped file does not read: %v", err)
	}
	if err := k.Record(path, changes); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, out, 0o600); err != nil {
		t.Fatal(err)
	}
	for server, want := range map[string]Entry{
		"SQLite MCP":  {Command: "npx", Args: []string{"-y", "mcp-sqlite", "/home/me/db.sqlite"}, Env: map[string]string{}},
		"Remote docs": {URL: "https://docs.example.com/mcp", Headers: map[string]string{"X-Team": "platform"}, Type: "streamable-http"},
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
	if err != nil || ch[0].Status != CommandUpdated || strings.Count(string(moved), `command: "/new/bouncer"`) != 2 {
		t.Errorf("relaunch: %v %+v\n%s", err, ch, moved)
	}
	undone, _, err := c.Undo("", nil)
	if err != nil || string(undone) != string(orig) {
		t.Errorf("undo (%v):\n%s", err, undone)
	}
}

// Items init can't splice are left unwrapped, and say why.
func TestContinueLeftAlone(t *testing.T) {
	text := `mcpServers:
  - name: secret
    command: npx
    env:
      TOKEN: ${{ secrets.TOKEN }}
  - {name: flow, command: x}
  - name: block
    command: x
    args:
      - |
        multi
  - name: twice
    command: a
  - name: twice
    command: b
  - command: nameless
`
	c, err := Parse("/h/.continue/config.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	out, changes, err := c.Wrap(WrapOptions{ConfigArg: "/c"})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, ch := range changes {
		got[ch.Server] = string(ch.Status) + ": " + ch.Reason
	}
	for name, want := range map[string]string{
		"secret": "left alone: it uses Continue's ${{ ... }} templates",
		"flow":   "left alone: written in YAML's flow style",
		"block":  "left alone: it has a block scalar",
		"twice":  "left alone: its name is given to another server too",
		"#6":     "left alone: it has no name",
	} {
		if !strings.HasPrefix(got[name], want) {
			t.Errorf("%s: %q, want %q", name, got[name], want)
		}
	}
	if string(out) != text {
		t.Errorf("changed:\n%s", out)
	}
}

func FuzzContinue(f *testing.F) {
	seed, _ := os.ReadFile(filepath.Join("testdata", "clients", "continue.yaml"))
	for _, s := range []string{string(seed), "mcpServers:\n- name: a\n  command: x\n", "mcpServers:\n  - name: a\n    url: u\n    # c\n\n  - name: b\n    command: y\nother: 1\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkWrapUndo(t, "/h/.continue/config.yaml", data) })
}
