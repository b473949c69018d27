package mcpconfig

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// Each client's file, as its users have it (testdata/clients, from the
// clients' documentation), at the place the client reads it: told by its
// place, wrapped (the original kept in the state directory where the
// client may refuse or drop a key it doesn't know), started from as
// bouncer run would (variables expanded the client's way), and put back
// byte for byte.
func TestClientFiles(t *testing.T) {
	env := map[string]string{"HOME": "/home/me", "GITHUB_TOKEN": "ghp_x", "TW_TOKEN": "tw", "ROO_TOKEN": "roo", "DOCS_KEY": "dk"}
	getenv := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	for _, tt := range []struct {
		file, at  string
		client    Client
		workspace string // relative to the temporary root
		want      map[string]Entry
	}{
		{"windsurf.json", "home/.codeium/windsurf/mcp_config.json", Windsurf, "", map[string]Entry{
			"github":   {Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-github"}, Env: map[string]string{"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_x"}},
			"tidewave": {URL: "http://localhost:4000/tidewave/mcp", Headers: map[string]string{"Authorization": "Bearer tw"}},
		}},
		{"zed.jsonc", "home/.config/zed/settings.json", Zed, "", map[string]Entry{
			"local-mcp-server":  {Command: "some-command", Args: []string{"arg-1", "arg-2"}, Env: map[string]string{}},
			"remote-mcp-server": {URL: "https://example.com/mcp", Headers: map[string]string{"Authorization": "Bearer token"}},
		}},
		{"zed.jsonc", "home/proj/.zed/settings.json", Zed, "home/proj", nil},
		{"cline.json", "home/.config/Code/User/globalStorage/saoudrizwan.claude-dev/settings/cline_mcp_settings.json", Cline, "", map[string]Entry{
			"filesystem": {Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-filesystem", "/home/me/proj"}, Type: "stdio"},
			"remote":     {URL: "https://mcp.example.com/mcp", Type: "streamableHttp"},
		}},
		{"cline.json", "home/.cline/data/settings/cline_mcp_settings.json", Cline, "", nil},
		{"roo.json", "home/proj/.roo/mcp.json", RooCode, "home/proj", map[string]Entry{
			"puppeteer": {Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-puppeteer"}, Env: map[string]string{"PUPPETEER_LAUNCH_OPTIONS": `{"headless": true}`, "TOKEN": "roo"}},
			"docs":      {URL: "https://docs.example.com/mcp", Headers: map[string]string{"X-API-Key": "dk"}, Type: "streamable-http"},
		}},
		{"roo.json", "home/.config/Cursor/User/globalStorage/rooveterinaryinc.roo-cline/settings/mcp_settings.json", RooCode, "", nil},
		{"kiro.json", "home/.kiro/settings/mcp.json", Kiro, "", map[string]Entry{"fetch": {Command: "uvx", Args: []string{"mcp-server-fetch"}, Env: map[string]string{}}}},
		{"kiro.json", "home/proj/.kiro/settings/mcp.json", Kiro, "home/proj", nil},
		{"lmstudio.json", "home/.lmstudio/mcp.json", LMStudio, "", map[string]Entry{
			"hf-mcp-server": {URL: "https://huggingface.co/mcp", Headers: map[string]string{"Authorization": "Bearer hf_notatoken"}},
		}},
		{"amazonq.json", "home/.aws/amazonq/mcp.json", AmazonQ, "", map[string]Entry{
			"awslabs.aws-documentation-mcp-server": {Command: "uvx", Args: []string{"awslabs.aws-documentation-mcp-server@latest"}, Env: map[string]string{"FASTMCP_LOG_LEVEL": "ERROR"}},
		}},
		{"amazonq.json", "home/proj/.amazonq/mcp.json", AmazonQ, "home/proj", nil},
		{"qwen.json", "home/.qwen/settings.json", QwenCode, "", map[string]Entry{
			"pythonTools": {Command: "python", Args: []string{"-m", "my_mcp_server", "--port", "8080"}, Cwd: "/home/me/mcp-servers/python", Env: map[string]string{"LOG_LEVEL": "info"}},
			"httpServer":  {URL: "http://localhost:3000/mcp"},
		}},
		{"qwen.json", "home/proj/.qwen/settings.json", QwenCode, "home/proj", nil},
		{"copilot.json", "home/.copilot/mcp-config.json", CopilotCLI, "", map[string]Entry{
			"playwright": {Command: "npx", Args: []string{"-y", "@playwright/mcp@latest"}, Env: map[string]string{}, Type: "local"},
			"context7":   {URL: "https://mcp.context7.com/mcp", Headers: map[string]string{"X-Team": "docs"}, Type: "http"},
		}},
	} {
		t.Run(tt.at, func(t *testing.T) {
			root := t.TempDir()
			home := filepath.Join(root, "home")
			orig, err := os.ReadFile(filepath.Join("testdata", "clients", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(root, filepath.FromSlash(tt.at))
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, orig, 0o600); err != nil {
				t.Fatal(err)
			}
			ws := ""
			if tt.workspace != "" {
				ws = filepath.Join(root, filepath.FromSlash(tt.workspace))
			}
			if c := ClientOf(path); c != tt.client {
				t.Fatalf("client %q, want %q", c, tt.client)
			}
			if got := Workspace(path, home); got != ws {
				t.Fatalf("workspace %q, want %q", got, ws)
			}
			k := Kept{State: filepath.Join(root, "state")}
			c, err := Load(path, k)
			if err != nil {
				t.Fatal(err)
			}
			out, changes, err := c.Wrap(WrapOptions{ConfigArg: path, Remote: true, Workspace: ws})
			if err != nil {
				t.Fatal(err)
			}
			for _, ch := range changes {
				if ch.Status != Wrapped {
					t.Errorf("%s", ch)
				}
			}
			if strings.Contains(string(out), UpstreamKey) != !tt.client.KeepsOriginal() {
				t.Errorf("keeps the original in the state directory: %v; wrapped:\n%s", tt.client.KeepsOriginal(), out)
			}
			if err := k.Record(path, changes); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, out, 0o600); err != nil {
				t.Fatal(err)
			}
			for server, want := range tt.want {
				r, err := Resolve(Lookup{File: path, Server: server, Getenv: getenv, Kept: k})
				if err != nil {
					t.Errorf("%s: %v", server, err)
					continue
				}
				if !reflect.DeepEqual(r.Entry, want) {
					t.Errorf("%s: %+v, want %+v", server, r.Entry, want)
				}
			}
			c, err = Load(path, k)
			if err != nil {
				t.Fatal(err)
			}
			undone, _, err := c.Undo("", nil)
			if err != nil || string(undone) != string(orig) {
				t.Errorf("undo (%v):\n%s", err, undone)
			}
		})
	}
}

// A variable in the file of a client whose rule is not known here is not
// guessed at: the entry is left unwrapped, and says why.
func TestUnknownRuleLeavesEntry(t *testing.T) {
	c, err := Parse("/home/me/.kiro/settings/mcp.json", []byte(`{"mcpServers": {"x": {"command": "x", "env": {"T": "${TOKEN}"}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	_, ch, err := c.Wrap(WrapOptions{ConfigArg: "/c"})
	if err != nil || ch[0].Status != Skipped || !strings.Contains(ch[0].Reason, "is in a file of Kiro, whose variables bouncer does not know how to expand") {
		t.Errorf("%v %+v", err, ch)
	}
	// Qwen Code fills in $NAME and ${NAME} as Gemini CLI does, but not all
	// of them: bouncer fills in none, and leaves such an entry unwrapped.
	for _, v := range []string{"$TOKEN", "${TOKEN}", "a-$TOKEN-b"} {
		q := Expander{Client: QwenCode, Getenv: func(string) (string, bool) { return "secret", true }}
		if got, err := q.Expand(v); err == nil || !strings.Contains(err.Error(), "$TOKEN is filled in by Qwen Code itself") {
			t.Errorf("Qwen Code %s: %q %v", v, got, err)
		}
	}
	if got, err := (Expander{Client: QwenCode}).Expand("100$ or $"); err != nil || got != "100$ or $" {
		t.Errorf("Qwen Code, no variable: %q %v", got, err)
	}
	x := Expander{Client: Windsurf, Getenv: func(string) (string, bool) { return "", false }}
	if _, err := x.Expand("${env:MISSING}"); err == nil || !strings.Contains(err.Error(), "is not set in the environment the client started bouncer with") {
		t.Errorf("an unset Windsurf variable: %v", err)
	}
	if _, err := x.Expand("${workspaceFolder}"); err == nil || !strings.Contains(err.Error(), "is filled in by Windsurf itself") {
		t.Errorf("another Windsurf variable: %v", err)
	}
}
