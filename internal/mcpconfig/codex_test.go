package mcpconfig

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"
)

// Codex CLI's config.toml, as its users write it: each [mcp_servers.NAME]
// table wrapped by splicing its bytes (every other byte, comments
// included, kept), Codex's own keys left on it, the original kept in the
// state directory, started from as Codex would (its bearer token and
// headers from the environment, which env_vars now hands bouncer run),
// and put back byte for byte.
func TestCodex(t *testing.T) {
	root := t.TempDir()
	path := filepath.Join(root, "home", ".codex", "config.toml")
	orig, err := os.ReadFile(filepath.Join("testdata", "clients", "codex.toml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, orig, 0o600); err != nil {
		t.Fatal(err)
	}
	if ClientOf(path) != Codex || Workspace(path, filepath.Join(root, "home")) != "" {
		t.Fatalf("client %q", ClientOf(path))
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
	want := `# Codex configuration
model = "gpt-5-codex"
approval_policy = "on-request"

[mcp_servers.context7]
command = "/opt/bouncer"
args = ["run", "--config", "` + path + `", "--server", "context7"]
env_vars = ["BOUNCER_HOME"]
startup_timeout_sec = 20 # slow to start
tool_timeout_sec = 60

# Figma's remote server.
[mcp_servers.figma]
command = "/opt/bouncer"
args = ["run", "--config", "` + path + `", "--server", "figma"]
env_vars = ["BOUNCER_HOME", "FIGMA_OAUTH_TOKEN"]
enabled_tools = [
  "get_code",
  "get_image",
]

[profiles.fast]
model = "gpt-5-mini"
`
	if string(out) != want {
		t.Errorf("wrapped:\n%s\nwant:\n%s", out, want)
	}
	var all map[string]any
	if err := toml.Unmarshal(out, &all); err != nil {
		t.Fatalf("the wrapped file does not read: %v", err)
	}
	if err := k.Record(path, changes); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, out, 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"FIGMA_OAUTH_TOKEN": "figd_x"}
	getenv := func(n string) (string, bool) { v, ok := env[n]; return v, ok }
	for server, want := range map[string]Entry{
		"context7": {Command: "npx", Args: []string{"-y", "@upstash/context7-mcp"}, Env: map[string]string{"CONTEXT7_API_KEY": "ctx7-not-a-key"}},
		"figma":    {URL: "https://mcp.figma.com/mcp", Headers: map[string]string{"X-Figma-Region": "us-east-1", "Authorization": "Bearer figd_x"}},
	} {
		r, err := Resolve(Lookup{File: path, Server: server, Getenv: getenv, Kept: k})
		if err != nil || !reflect.DeepEqual(r.Entry, want) {
			t.Errorf("%s: %+v (%v), want %+v", server, r.Entry, err, want)
		}
	}
	delete(env, "FIGMA_OAUTH_TOKEN")
	if _, err := Resolve(Lookup{File: path, Server: "figma", Getenv: getenv, Kept: k}); err == nil || !strings.Contains(err.Error(), "bearer_token_env_var: FIGMA_OAUTH_TOKEN is not set") {
		t.Errorf("an unset bearer token: %v", err)
	}

	c, err = Load(path, k)
	if err != nil {
		t.Fatal(err)
	}
	servers, _ := c.Servers("")
	if len(servers) != 2 || !servers[0].Wrapped || !servers[0].Kept || servers[0].Launch.Command != "npx" || !servers[1].Remote {
		t.Errorf("servers: %+v", servers)
	}
	again, ch, err := c.Wrap(WrapOptions{ConfigArg: path, Command: "/opt/bouncer", Remote: true})
	if err != nil || string(again) != string(out) || ch[0].Status != AlreadyWrapped {
		t.Errorf("wrap again: %v %+v", err, ch)
	}
	// Another bouncer: only command changes.
	moved, ch, err := c.Wrap(WrapOptions{ConfigArg: path, Command: "/new/bouncer", Remote: true, Relaunch: func(string) bool { return true }})
	if err != nil || ch[0].Status != CommandUpdated || strings.Count(string(moved), `command = "/new/bouncer"`) != 2 || len(moved) != len(out) {
		t.Errorf("relaunch: %v %+v\n%s", err, ch, moved)
	}
	undone, restored, err := c.Undo("", nil)
	if err != nil || string(undone) != string(orig) {
		t.Errorf("undo (%v):\n%s", err, undone)
	}
	if err := k.Record(path, restored); err != nil {
		t.Fatal(err)
	}
}

// Tables init can't splice are left unwrapped, and say why: a server
// written inline or with dotted keys, one whose table is split, one with
// a relative cwd.
func TestCodexLeftAlone(t *testing.T) {
	text := `mcp_servers.dotted.command = "x"
mcp_servers.inline = { command = "y" }

[mcp_servers.split]
command = "z"

[other]
a = 1

[mcp_servers.split.env]
K = "v"

[mcp_servers.rel]
command = "w"
cwd = "sub"
`
	c, err := Parse("/h/.codex/config.toml", []byte(text))
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
		"dotted": "left alone: written as an inline table",
		"inline": "left alone: written as an inline table",
		"split":  "left alone: its table is written in more than one place",
		"rel":    "left alone: cwd is relative",
	} {
		if !strings.HasPrefix(got[name], want) {
			t.Errorf("%s: %q, want %q", name, got[name], want)
		}
	}
	if string(out) != text {
		t.Errorf("changed:\n%s", out)
	}
}

func FuzzCodex(f *testing.F) {
	seed, _ := os.ReadFile(filepath.Join("testdata", "clients", "codex.toml"))
	for _, s := range []string{string(seed), "[mcp_servers.a]\ncommand = \"x\"\n", "[mcp_servers.a]\ncommand = \"x\"\n# c\n\n[mcp_servers.a.env]\nK = \"v\"\n[b]\n", "mcp_servers.a.url = \"u\"\n", "[mcp_servers.a]\nurl = \"u\"\nenv_vars = [\"T\"]\nbearer_token_env_var = \"T\""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkWrapUndo(t, "/h/.codex/config.toml", data) })
}
