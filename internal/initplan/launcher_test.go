package initplan

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bouncer-mcp/bouncer/internal/mcpconfig"
)

// TestLauncherCommand checks what the wrapped entries of each kind of
// config launch, by where bouncer is: "bouncer" only where PATH finds this
// very binary and the client is no app started from the Dock, else this
// binary by its absolute path, a project's file included (saying it is
// shared); and never the path of a go run build.
func TestLauncherCommand(t *testing.T) {
	dir := t.TempDir()
	self := filepath.Join(dir, "bin", "bouncer")
	link := filepath.Join(dir, "link", "bouncer")
	other := filepath.Join(dir, "other", "bouncer")
	project := mcpconfig.Found{Path: "/p/.mcp.json", Client: mcpconfig.ClaudeCode, Workspace: "/p"}
	projectCursor := mcpconfig.Found{Path: "/p/.cursor/mcp.json", Client: mcpconfig.Cursor, Workspace: "/p"}
	claude := mcpconfig.Found{Path: "/h/.claude.json", Client: mcpconfig.ClaudeCode, Project: "/p"}
	gemini := mcpconfig.Found{Path: "/h/.gemini/settings.json", Client: mcpconfig.Gemini}
	cursor := mcpconfig.Found{Path: "/h/.cursor/mcp.json", Client: mcpconfig.Cursor}
	vscode := mcpconfig.Found{Path: "/h/.config/Code/User/mcp.json", Client: mcpconfig.VSCode}
	desktop := mcpconfig.Found{Path: "/h/.config/Claude/claude_desktop_config.json", Client: mcpconfig.ClaudeDesktop}
	onPath := Launcher{self: self, onPath: self, isSelf: true}
	byLink := Launcher{self: self, onPath: link, isSelf: true}
	notOnPath := Launcher{self: self}
	another := Launcher{self: self, onPath: other}
	goRun := Launcher{self: "/tmp/go-build1/b001/exe/bouncer", goRun: true}
	goRunOther := Launcher{self: "/tmp/go-build1/b001/exe/bouncer", goRun: true, onPath: other}
	const shared = "This is a project's file: if you commit it, everyone needs bouncer at that path"
	for _, c := range []struct {
		name    string
		l       Launcher
		t       mcpconfig.Found
		want    string
		why     string // a part of why, or of the error
		refused bool
	}{
		{"project, on PATH", onPath, project, "bouncer", "found on PATH (" + self + ")", false},
		{"project of an app, on PATH", onPath, projectCursor, "bouncer", "found on PATH", false},
		{"project, not on PATH", notOnPath, project, self, "bouncer is not on PATH, so they name it by its absolute path; if you move it, run bouncer init again. " + shared, false},
		{"project, another on PATH", another, project, self, "bouncer on PATH is " + other + ", another binary", false},
		{"project of an app, not on PATH", notOnPath, projectCursor, self, shared, false},
		{"project, go run", goRun, project, "", "go run built it in a temporary directory", true},
		{"user CLI, on PATH", onPath, claude, "bouncer", "found on PATH", false},
		{"Gemini CLI, on PATH", onPath, gemini, "bouncer", "found on PATH", false},
		{"user CLI, not on PATH", notOnPath, claude, self, "bouncer is not on PATH, so they name it by its absolute path", false},
		{"user CLI, another on PATH", another, gemini, self, "bouncer on PATH is " + other + ", another binary", false},
		{"desktop, on PATH", onPath, desktop, self, "Claude Desktop is an app, and an app started from the Dock or a desktop menu may not see your shell's PATH, so they name it by its absolute path", false},
		{"desktop, not on PATH", notOnPath, desktop, self, "Claude Desktop is an app", false},
		{"desktop, on PATH by a link", byLink, desktop, link, "Claude Desktop is an app", false},
		{"Cursor's user file, on PATH", onPath, cursor, self, "Cursor is an app", false},
		{"VS Code's user file, another on PATH", another, vscode, self, "VS Code is an app", false},
		{"desktop, go run", goRun, desktop, "", "go run built it in a temporary directory", true},
		{"user CLI, go run", goRun, claude, "", "bouncer is not on PATH, so the entries would name this binary by its path, but go run", true},
		{"user CLI, go run, another on PATH", goRunOther, gemini, "", "bouncer on PATH is " + other, true},
		{"unknown binary, nothing on PATH", Launcher{}, claude, "", "go install ./cmd/bouncer", true},
		{"unknown binary, one on PATH", Launcher{onPath: other}, claude, "bouncer", "the path of the binary that ran init is unknown", false},
		{"unknown binary, one on PATH, desktop", Launcher{onPath: other}, desktop, other, "the path of the binary that ran init is unknown", false},
	} {
		cmd, why, err := c.l.Command(c.t)
		if c.refused {
			if err == nil || !strings.Contains(err.Error(), c.why) {
				t.Errorf("%s: command %q, error %v; want an error saying %q", c.name, cmd, err, c.why)
			}
			continue
		}
		if err != nil || cmd != c.want || !strings.Contains(why, c.why) {
			t.Errorf("%s: command %q (%s), %v; want %q, saying %q", c.name, cmd, why, err, c.want, c.why)
		}
		if c.t.Workspace == "" && strings.Contains(why, "project's file") {
			t.Errorf("%s: a user's file is said to be a project's: %s", c.name, why)
		}
	}
}

func TestGoRunBuild(t *testing.T) {
	for path, want := range map[string]bool{
		"/tmp/go-build3141/b001/exe/bouncer":           true,
		"/home/me/.cache/go-build123/b017/exe/bouncer": true,
		"/home/me/go/bin/bouncer":                      false,
		"/tmp/testscript-main99/bin/bouncer":           false,
		"/tmp/go-build3141/b001/bouncer.test":          false,
		"/usr/local/bin/exe/bouncer":                   false,
		"/opt/homebrew/Cellar/bouncer/1.0/bin/bouncer": false,
	} {
		if got := goRunBuild(path); got != want {
			t.Errorf("goRunBuild(%s) = %v", path, got)
		}
	}
}

// TestLauncherRelaunch checks which commands of entries wrapped before
// init replaces: those that no longer start this binary for the client,
// and in a project's file a path where "bouncer" now does; never a wrapper
// of the user's own.
func TestLauncherRelaunch(t *testing.T) {
	dir := t.TempDir()
	self := filepath.Join(dir, "bin", "bouncer")
	link := filepath.Join(dir, "link", "bouncer")
	other := filepath.Join(dir, "other", "bouncer")
	wrapper := filepath.Join(dir, "bin", "my-wrapper")
	for _, f := range []string{self, other, wrapper} {
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(self, link); err != nil {
		t.Fatal(err)
	}
	l := Launcher{self: self}
	claude := mcpconfig.Found{Path: "/h/.claude.json", Client: mcpconfig.ClaudeCode}
	desktop := mcpconfig.Found{Path: "/h/.config/Claude/claude_desktop_config.json", Client: mcpconfig.ClaudeDesktop}
	vscode := mcpconfig.Found{Path: "/h/.config/Code/User/mcp.json", Client: mcpconfig.VSCode}
	project := mcpconfig.Found{Path: "/p/.mcp.json", Client: mcpconfig.ClaudeCode, Workspace: "/p"}
	projectVSCode := mcpconfig.Found{Path: "/p/.vscode/mcp.json", Client: mcpconfig.VSCode, Workspace: "/p"}
	for _, c := range []struct {
		name, path, cur, command string
		t                        mcpconfig.Found
		want                     bool
	}{
		{"bare name in a desktop app", filepath.Dir(link), "bouncer", self, desktop, true},
		{"bare name in VS Code's user file", filepath.Dir(link), "bouncer", self, vscode, true},
		{"bare name in VS Code's project file, PATH finds this binary", filepath.Dir(link), "bouncer", self, projectVSCode, false},
		{"bare name PATH finds as this binary", filepath.Dir(link), "bouncer", self, claude, false},
		{"bare name PATH finds as another", filepath.Dir(other), "bouncer", self, claude, true},
		{"bare name PATH doesn't find", dir, "bouncer", self, claude, true},
		{"bare name PATH doesn't find, a project's file", dir, "bouncer", self, project, true},
		{"this binary by path", dir, self, "bouncer", desktop, false},
		{"this binary by a link", dir, link, self, claude, false},
		{"this binary by path, a project's file where bouncer now does", filepath.Dir(self), self, "bouncer", project, true},
		{"another's path, a project's file where bouncer now does", filepath.Dir(self), "/home/alice/go/bin/bouncer", "bouncer", project, true},
		{"this binary by path, a project's file, not on PATH", dir, self, self, project, false},
		{"another bouncer by path", dir, other, self, desktop, true},
		{"a bouncer that is gone", dir, filepath.Join(dir, "gone", "bouncer"), self, claude, true},
		{"a release binary that is gone", dir, filepath.Join(dir, "gone", "bouncer_1.0_linux_amd64"), self, claude, true},
		{"the user's own wrapper", dir, wrapper, self, claude, false},
		{"the user's own wrapper, a project's file", filepath.Dir(self), wrapper, "bouncer", project, false},
		{"the user's own wrapper by name", dir, "my-wrapper", self, desktop, false},
	} {
		t.Setenv("PATH", c.path)
		if got := l.Relaunch(c.t, c.cur, c.command); got != c.want {
			t.Errorf("%s: Relaunch(%s, %s) = %v", c.name, c.cur, c.command, got)
		}
	}
	if (Launcher{self: "/tmp/go-build1/b001/exe/bouncer", goRun: true}).Relaunch(desktop, "bouncer", "/tmp/go-build1/b001/exe/bouncer") {
		t.Error("a go run build replaces the commands it can't itself stand in for")
	}
}
