package mcpconfig

import (
	"reflect"
	"strings"
	"testing"
)

const vscodeComments = `// Team servers. Ask #infra before adding one.
{
	"servers": {
		/* the GitHub server runs in Docker */
		"github": {
			"type": "stdio",
			"command": "docker", // pinned below
			"args": ["run", "-i", "--rm", "ghcr.io/github/github-mcp-server",],
			"env": {"GITHUB_TOKEN": "${env:GITHUB_TOKEN}"},
		},
		"remote": {"type": "http", "url": "https://mcp.example/mcp"}, // remote
	},
	"inputs": [],
}
`

func TestWrapKeepsComments(t *testing.T) {
	c, err := Parse("/p/.vscode/mcp.json", []byte(vscodeComments))
	if err != nil {
		t.Fatal(err)
	}
	out, ch, err := c.Wrap(WrapOptions{ConfigArg: "${workspaceFolder}/.vscode/mcp.json", Workspace: "/p"})
	if err != nil {
		t.Fatal(err)
	}
	if len(ch) != 2 || ch[0].Status != Wrapped || ch[1].Status != Skipped || !ch[1].Remote {
		t.Fatalf("changes %v", ch)
	}
	s := string(out)
	start := strings.Index(vscodeComments, `"github": {`) + len(`"github": `)
	end := strings.Index(vscodeComments, "\n\t\t},") + len("\n\t\t}")
	if !strings.HasPrefix(s, vscodeComments[:start]) || !strings.HasSuffix(s, vscodeComments[end:]) {
		t.Fatalf("bytes outside the entry changed:\n%s", s)
	}
	// The original entry is kept whole, comments and trailing commas
	// included, one tab deeper.
	orig := vscodeComments[start:end]
	if !strings.Contains(s, `"x-bouncer-upstream": `+reindent(orig, "\t")) {
		t.Fatalf("upstream is not the original entry:\n%s", s)
	}
	if !strings.Contains(s, "\t\t\t\"type\": \"stdio\",\n\t\t\t\"command\": \"bouncer\",\n\t\t\t\"args\": [\"run\", \"--config\", \"${workspaceFolder}/.vscode/mcp.json\", \"--server\", \"github\"],\n") {
		t.Errorf("wrapper:\n%s", s)
	}
	c2, err := Parse("/p/.vscode/mcp.json", out)
	if err != nil {
		t.Fatal(err)
	}
	undone, _, err := c2.Undo("", nil)
	if err != nil || string(undone) != vscodeComments {
		t.Errorf("undo is not the original (%v):\n%s", err, undone)
	}
}

const claudeJSON = `{
  "numStartups": 3,
  "mcpServers": {
    "user-fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/home/me/notes"]}
  },
  "projects": {
    "/home/me/proj": {
      "allowedTools": [],
      "mcpServers": {
        "fs": {
          "type": "stdio",
          "command": "npx",
          "args": ["-y", "@modelcontextprotocol/server-filesystem", "/home/me/proj"],
          "env": {}
        }
      }
    },
    "/home/me/other": {
      "mcpServers": {
        "secret": {"command": "other-server"}
      }
    }
  }
}
`

func TestClaudeProjects(t *testing.T) {
	c, err := Parse("/home/me/.claude.json", []byte(claudeJSON))
	if err != nil {
		t.Fatal(err)
	}
	if c.Client != ClaudeCode {
		t.Errorf("client %q", c.Client)
	}
	out, ch, err := c.Wrap(WrapOptions{Project: "/home/me/proj", ConfigArg: "/home/me/.claude.json"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, x := range ch {
		got = append(got, x.Block+"."+x.String())
	}
	want := []string{"mcpServers.user-fs: wrapped", "projects[/home/me/proj].mcpServers.fs: wrapped"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("changes %q, want %q", got, want)
	}
	if !strings.Contains(string(out), `"args": ["run", "--config", "/home/me/.claude.json", "--project", "/home/me/proj", "--server", "fs"]`) {
		t.Errorf("project entry does not name its project:\n%s", out)
	}
	if !strings.Contains(string(out), `"secret": {"command": "other-server"}`) {
		t.Error("another project's server was touched")
	}
	c2, _ := Parse("/home/me/.claude.json", out)
	servers, err := c2.Servers("/home/me/proj")
	if err != nil || len(servers) != 2 || !servers[1].Wrapped || servers[1].Launch.Args[2] != "/home/me/proj" {
		t.Errorf("servers %+v, %v", servers, err)
	}
	undone, _, err := c2.Undo("/home/me/proj", nil)
	if err != nil || string(undone) != claudeJSON {
		t.Errorf("undo (%v):\n%s", err, undone)
	}
}

func TestRemoteSwitch(t *testing.T) {
	text := "{\n  \"mcpServers\": {\n    \"r\": {\n      \"type\": \"http\",\n      \"url\": \"https://mcp.example/mcp\",\n      \"headers\": {\"Authorization\": \"Bearer ${TOKEN}\"}\n    }\n  }\n}\n"
	c, err := Parse("/p/.mcp.json", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	out, ch, _ := c.Wrap(WrapOptions{ConfigArg: ".mcp.json"})
	if string(out) != text || ch[0].Reason != RemoteNotYet {
		t.Fatalf("switch off: %v\n%s", ch, out)
	}
	out, ch, _ = c.Wrap(WrapOptions{ConfigArg: ".mcp.json", Remote: true})
	if ch[0].Status != Wrapped {
		t.Fatalf("switch on: %v", ch)
	}
	want := "{\n  \"mcpServers\": {\n    \"r\": {\n      \"type\": \"stdio\",\n      \"command\": \"bouncer\",\n      \"args\": [\"run\", \"--config\", \".mcp.json\", \"--server\", \"r\"],\n      \"x-bouncer-upstream\": {\n        \"type\": \"http\",\n        \"url\": \"https://mcp.example/mcp\",\n        \"headers\": {\"Authorization\": \"Bearer ${TOKEN}\"}\n      }\n    }\n  }\n}\n"
	if string(out) != want {
		t.Fatalf("wrapped:\n%s", out)
	}
	c2, _ := Parse("/p/.mcp.json", out)
	undone, ch, _ := c2.Undo("", nil)
	if string(undone) != text || !ch[0].Remote {
		t.Errorf("undo:\n%s", undone)
	}
}
