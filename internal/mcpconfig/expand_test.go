package mcpconfig

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestClientOf(t *testing.T) {
	for path, want := range map[string]Client{
		"/p/.mcp.json":          ClaudeCode,
		"/home/me/.claude.json": ClaudeCode,
		"/home/me/.config/Claude/claude_desktop_config.json": ClaudeDesktop,
		"/p/.cursor/mcp.json":                                Cursor,
		"/p/.vscode/mcp.json":                                VSCode,
		"/home/me/.config/Code/User/mcp.json":                VSCode,
		"/home/me/.config/Code/User/profiles/ab12/mcp.json":  VSCode,
		"/p/.gemini/settings.json":                           Gemini,
		"/p/mcp.json":                                        UnknownClient,
		"/p/.claude/settings.json":                           UnknownClient,
	} {
		if got := ClientOf(path); got != want {
			t.Errorf("%s: %q, want %q", path, got, want)
		}
	}
}

func TestExpand(t *testing.T) {
	env := map[string]string{"TOKEN": "t0k", "EMPTY": "", "HOME": "/home/me"}
	getenv := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	tests := []struct {
		client    Client
		workspace string
		in, want  string
		err       string
	}{
		{ClaudeCode, "", "Bearer ${TOKEN}", "Bearer t0k", ""},
		{ClaudeCode, "", "${MISSING:-dflt}/${EMPTY:-e}/${EMPTY}", "dflt/e/", ""},
		{ClaudeCode, "", "$TOKEN ${env:TOKEN:-x}", "$TOKEN x", ""},
		{ClaudeCode, "", "${MISSING}", "", "${MISSING} is not set in the environment the client started bouncer with (Claude Code refuses such a server too): set MISSING where you start the client, or write ${MISSING:-DEFAULT}"},
		{ClaudeCode, "", "${unclosed", "${unclosed", ""},
		{VSCode, "/p", "${workspaceFolder}/x:${workspaceFolderBasename}:${env:TOKEN}:${env:MISSING}:${userHome}${/}", "/p/x:p:t0k::/home/me/", ""},
		{VSCode, "", "${workspaceFolder}", "", "${workspaceFolder} has no one value in a user's own config"},
		{VSCode, "/p", "${input:tok}", "", "${input:tok} is filled in by VS Code itself"},
		{Cursor, "/p", "${env:TOKEN} ${TOKEN}", "", "${TOKEN} is filled in by Cursor itself"},
		{Gemini, "", "$TOKEN-${TOKEN}-$MISSING-${MISSING}-$-${}", "t0k-t0k-$MISSING-${MISSING}-$-${}", ""},
		{ClaudeDesktop, "", "${TOKEN} $TOKEN", "${TOKEN} $TOKEN", ""},
		{UnknownClient, "", "$TOKEN", "$TOKEN", ""},
		{UnknownClient, "", "a ${TOKEN} b", "", "${TOKEN} is in a file bouncer can't tell the client of"},
	}
	for _, tt := range tests {
		x := Expander{Client: tt.client, Workspace: tt.workspace, Home: "/home/me", Getenv: getenv}
		got, err := x.Expand(tt.in)
		switch {
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("%s %q: err %v, want %q", tt.client, tt.in, err, tt.err)
		case tt.err == "" && (err != nil || got != tt.want):
			t.Errorf("%s %q: %q, %v; want %q", tt.client, tt.in, got, err, tt.want)
		}
	}
}

// TestResolveExpands: run --config gives the upstream what the client
// would have: variables expanded from bouncer's environment, a relative
// --config found from a subdirectory, ${workspaceFolder} the project.
func TestResolveExpands(t *testing.T) {
	proj := t.TempDir()
	sub := filepath.Join(proj, "src", "deep")
	if err := os.MkdirAll(filepath.Join(proj, ".vscode"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	text := `{"servers": {"gh": {"command": "bouncer", "x-bouncer-upstream": {
		"command": "${workspaceFolder}/bin/srv", // a comment
		"args": ["--token=${env:TOKEN}", "${env:NOPE}"],
		"env": {"T": "${env:TOKEN}"},
	}}}}`
	if err := os.WriteFile(filepath.Join(proj, ".vscode", "mcp.json"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(sub)
	r, err := Resolve(Lookup{File: ".vscode/mcp.json", Server: "gh", Getenv: func(k string) (string, bool) {
		if k == "TOKEN" {
			return "s3cret", true
		}
		return "", false
	}})
	if err != nil {
		t.Fatal(err)
	}
	real, _ := filepath.EvalSymlinks(proj)
	if (r.Command != proj+"/bin/srv" && r.Command != real+"/bin/srv") || r.Args[0] != "--token=s3cret" || r.Args[1] != "" || r.Env["T"] != "s3cret" {
		t.Errorf("entry %+v", r.Entry)
	}
	if r.Base != proj && r.Base != real {
		t.Errorf("base %q, want %q", r.Base, proj)
	}
	if _, err := Resolve(Lookup{File: ".nope.json", Server: "gh", Getenv: os.LookupEnv}); err == nil || !strings.Contains(err.Error(), "not found in "+sub) {
		t.Errorf("missing relative config: %v", err)
	}
}
