package policy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/bouncer-mcp/bouncer/internal/testsupport/need"
)

// npmDir is where testdata/npm installs the reference servers.
func npmDir(t *testing.T) string {
	t.Helper()
	return need.NPM(t, "")
}

// packServer says how to start the reference server a pack is checked
// against, with dummy credentials: tools/list needs no network and no real
// account, and none of these servers calls out before a tool is used.
type packServer struct {
	pack string
	pkg  string // npm package, for the pack header
	main string // entry point under node_modules
	args func(tmp string) []string
	env  func(t *testing.T, tmp string) []string
}

var packServers = []packServer{
	{
		pack: "filesystem", pkg: "@modelcontextprotocol/server-filesystem",
		main: "@modelcontextprotocol/server-filesystem/dist/index.js",
		args: func(tmp string) []string { return []string{tmp} },
	},
	{
		pack: "github", pkg: "@modelcontextprotocol/server-github",
		main: "@modelcontextprotocol/server-github/dist/index.js",
		env: func(t *testing.T, tmp string) []string {
			return []string{"GITHUB_PERSONAL_ACCESS_TOKEN=dummy-not-a-token"}
		},
	},
	{
		pack: "slack", pkg: "@modelcontextprotocol/server-slack",
		main: "@modelcontextprotocol/server-slack/dist/index.js",
		env: func(t *testing.T, tmp string) []string {
			return []string{"SLACK_BOT_TOKEN=xoxb-dummy", "SLACK_TEAM_ID=T00000000"}
		},
	},
	{
		pack: "gdrive", pkg: "@modelcontextprotocol/server-gdrive",
		main: "@modelcontextprotocol/server-gdrive/dist/index.js",
		env: func(t *testing.T, tmp string) []string {
			creds := filepath.Join(tmp, "gdrive-credentials.json")
			writeFile(t, creds, `{"access_token":"dummy","token_type":"Bearer"}`)
			return []string{"GDRIVE_CREDENTIALS_PATH=" + creds, "GDRIVE_OAUTH_PATH=" + filepath.Join(tmp, "none.json")}
		},
	},
	{
		pack: "gmail", pkg: "@gongrzhe/server-gmail-autoauth-mcp",
		main: "@gongrzhe/server-gmail-autoauth-mcp/dist/index.js",
		env: func(t *testing.T, tmp string) []string {
			keys := filepath.Join(tmp, "gcp-oauth.keys.json")
			creds := filepath.Join(tmp, "credentials.json")
			writeFile(t, keys, `{"installed":{"client_id":"dummy","client_secret":"dummy","redirect_uris":["http://localhost"]}}`)
			writeFile(t, creds, `{"access_token":"dummy","token_type":"Bearer"}`)
			return []string{"GMAIL_OAUTH_PATH=" + keys, "GMAIL_CREDENTIALS_PATH=" + creds}
		},
	},
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

// listTools starts one reference server and returns every page of its
// tools/list, as the proxy pins it.
func listTools(t *testing.T, s packServer) []json.RawMessage {
	t.Helper()
	nm := npmDir(t)
	tmp := t.TempDir()
	home := filepath.Join(tmp, "home")
	if err := os.Mkdir(home, 0o700); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	args := []string{filepath.Join(nm, s.main)}
	if s.args != nil {
		args = append(args, s.args(tmp)...)
	}
	cmd := exec.CommandContext(ctx, "node", args...)
	cmd.Dir = tmp // gmail copies a gcp-oauth.keys.json it finds in its cwd
	cmd.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH")}
	if s.env != nil {
		cmd.Env = append(cmd.Env, s.env(t, tmp)...)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", s.pkg, err)
	}
	defer func() {
		stdin.Close()
		cancel()
		_ = cmd.Wait()
	}()
	rd := bufio.NewReader(stdout)
	send := func(msg string) {
		if _, err := fmt.Fprintln(stdin, msg); err != nil {
			t.Fatalf("%s: write: %v (stderr: %s)", s.pkg, err, stderr.String())
		}
	}
	// recv skips non-JSON lines and notifications until the response to id.
	recv := func(id int) map[string]json.RawMessage {
		for {
			line, err := rd.ReadBytes('\n')
			if err != nil {
				t.Fatalf("%s: read: %v (stderr: %s)", s.pkg, err, stderr.String())
			}
			var m map[string]json.RawMessage
			if json.Unmarshal(line, &m) != nil {
				continue
			}
			if string(m["id"]) == fmt.Sprint(id) {
				if e, ok := m["error"]; ok {
					t.Fatalf("%s: error response: %s", s.pkg, e)
				}
				return m
			}
		}
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bouncer-pack-check","version":"0"}}}`)
	recv(1)
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	var tools []json.RawMessage
	cursor := ""
	for id := 2; ; id++ {
		params := `{}`
		if cursor != "" {
			c, _ := json.Marshal(cursor)
			params = `{"cursor":` + string(c) + `}`
		}
		send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/list","params":%s}`, id, params))
		var res struct {
			Tools      []json.RawMessage `json:"tools"`
			NextCursor string            `json:"nextCursor"`
		}
		if err := json.Unmarshal(recv(id)["result"], &res); err != nil {
			t.Fatalf("%s: tools/list result: %v", s.pkg, err)
		}
		tools = append(tools, res.Tools...)
		if res.NextCursor == "" || id > 100 {
			break
		}
		cursor = res.NextCursor
	}
	return tools
}

// TestRecordTools re-records testdata/tools/<pack>.json from the installed
// reference servers. It runs only with BOUNCER_RECORD_TOOLS=1 so that the
// normal test run checks the packs against a fixed, reviewed record.
func TestRecordTools(t *testing.T) {
	if os.Getenv("BOUNCER_RECORD_TOOLS") != "1" {
		need.Skip(t, "opt-in: set BOUNCER_RECORD_TOOLS=1 to re-record testdata/tools from the npm servers")
	}
	for _, s := range packServers {
		t.Run(s.pack, func(t *testing.T) {
			tools := listTools(t, s)
			out, err := json.MarshalIndent(map[string]any{"tools": tools}, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("..", "..", "testdata", "tools", s.pack+".json")
			tmp := path + ".tmp"
			if err := os.WriteFile(tmp, append(out, '\n'), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, path); err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: %d tools -> %s", s.pkg, len(tools), path)
		})
	}
}
