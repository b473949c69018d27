package mcpconfig

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/bouncer-mcp/bouncer/internal/jsonc"
)

// OpenCode's opencode.json, as its users write it: each entry of "mcp"
// rewritten whole as a local server launching bouncer run, OpenCode's own
// members kept, every other byte (comments, other keys) as it was, the
// original kept in the state directory (OpenCode's schema refuses a key it
// doesn't know), started from as written, and put back byte for byte.
func TestOpenCode(t *testing.T) {
	root := t.TempDir()
	home := filepath.Join(root, "home")
	path := filepath.Join(root, "proj", "opencode.jsonc")
	orig, err := os.ReadFile(filepath.Join("testdata", "clients", "opencode.jsonc"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, orig, 0o600); err != nil {
		t.Fatal(err)
	}
	if ClientOf(path) != OpenCode || Workspace(path, home) != filepath.Join(root, "proj") || !OpenCode.KeepsOriginal() || OpenCode.Desktop() {
		t.Fatalf("client %q, workspace %q", ClientOf(path), Workspace(path, home))
	}
	user := filepath.Join(home, ".config", "opencode", "opencode.json")
	if ClientOf(user) != OpenCode || Workspace(user, home) != "" {
		t.Fatalf("the user's file: %q, workspace %q", ClientOf(user), Workspace(user, home))
	}
	k := Kept{State: filepath.Join(root, "state")}
	c, err := Load(path, k)
	if err != nil {
		t.Fatal(err)
	}
	out, changes, err := c.Wrap(WrapOptions{ConfigArg: "opencode.jsonc", Command: "bouncer", Remote: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, ch := range changes {
		if ch.Status != Wrapped || ch.Kept == "" {
			t.Errorf("%s", ch)
		}
	}
	want := strings.Replace(string(orig), `"github": {
      "type": "local",
      "command": ["npx", "-y", "@modelcontextprotocol/server-github"],
      "environment": {"GITHUB_API_URL": "https://api.github.com"}, // no token here
      "enabled": true,
      "timeout": 10000,
    }`, `"github": {"type": "local", "command": ["bouncer", "run", "--config", "opencode.jsonc", "--server", "github"], "enabled": true, "timeout": 10000}`, 1)
	want = strings.Replace(want, `"context7": {
      "type": "remote",
      "url": "https://mcp.context7.com/mcp",
      "headers": {"X-Team": "docs"},
      "enabled": false
    }`, `"context7": {"type": "local", "command": ["bouncer", "run", "--config", "opencode.jsonc", "--server", "context7"], "enabled": false}`, 1)
	if string(out) != want {
		t.Errorf("wrapped:\n%s\nwant:\n%s", out, want)
	}
	if _, err := jsonc.Parse(path, out); err != nil {
		t.Fatal(err)
	}
	if err := k.Record(path, changes); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, out, 0o600); err != nil {
		t.Fatal(err)
	}
	for server, want := range map[string]Entry{
		"github":   {Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-github"}, Env: map[string]string{"GITHUB_API_URL": "https://api.github.com"}, Type: "local"},
		"context7": {URL: "https://mcp.context7.com/mcp", Headers: map[string]string{"X-Team": "docs"}, Type: "remote"},
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
	if again, ch, err := c.Wrap(WrapOptions{ConfigArg: "opencode.jsonc", Command: "bouncer", Remote: true}); err != nil || string(again) != string(out) || ch[0].Status != AlreadyWrapped {
		t.Errorf("wrap again: %v %+v", err, ch)
	}
	moved, ch, err := c.Wrap(WrapOptions{ConfigArg: "opencode.jsonc", Command: "/new/bouncer", Remote: true, Relaunch: func(string) bool { return true }})
	if err != nil || ch[0].Status != CommandUpdated || strings.Count(string(moved), `"command": ["/new/bouncer", "run"`) != 2 {
		t.Errorf("relaunch: %v %+v\n%s", err, ch, moved)
	}
	undone, _, err := c.Undo("", nil)
	if err != nil || string(undone) != string(orig) {
		t.Errorf("undo (%v):\n%s", err, undone)
	}
}

// Entries init can't start as OpenCode would are left unwrapped, and say
// why.
func TestOpenCodeLeftAlone(t *testing.T) {
	text := `{"mcp": {
  "env": {"type": "local", "command": ["x"], "environment": {"T": "{env:TOKEN}"}},
  "file": {"type": "remote", "url": "https://x.example/mcp", "headers": {"A": "{file:~/.tok}"}},
  "oauth": {"type": "remote", "url": "https://x.example/mcp", "oauth": {"clientId": "c"}},
  "empty": {"type": "local", "command": []},
  "typeless": {"command": ["x"]},
  "relative": {"type": "local", "command": ["x"], "cwd": "sub"},
  "scalar": 1
}}`
	c, err := Parse("/p/opencode.json", []byte(text))
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
		"env":      "left alone: it uses OpenCode's {env:...} or {file:...}",
		"file":     "left alone: it uses OpenCode's {env:...} or {file:...}",
		"oauth":    "left alone: its oauth settings are OpenCode's",
		"empty":    "left alone: a local server's command is not a list of strings",
		"typeless": `left alone: its type "" is neither local nor remote`,
		"relative": "left alone: its cwd is not an absolute path",
		"scalar":   "left alone: not an object",
	} {
		if !strings.HasPrefix(got[name], want) {
			t.Errorf("%s: %q, want %q", name, got[name], want)
		}
	}
	if string(out) != text {
		t.Errorf("changed:\n%s", out)
	}
	if _, err := Parse("/p/opencode.json", []byte(`{"mcp": {"a": {}, "a": {}}}`)); err == nil {
		t.Error("a server named twice is read")
	}
}

func FuzzOpenCode(f *testing.F) {
	seed, _ := os.ReadFile(filepath.Join("testdata", "clients", "opencode.jsonc"))
	for _, s := range []string{string(seed), `{"mcp": {"a": {"type": "local", "command": ["x"]}}}`, "{\"mcp\": {\"a\": {\"type\": \"remote\", \"url\": \"u\" /* c */},\n}}"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkWrapUndo(t, "/p/opencode.json", data) })
}
