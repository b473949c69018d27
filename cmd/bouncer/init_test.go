package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestInitAsksOnTerminal answers init's questions on a real terminal: yes
// to the config, no to the hook.
func TestInitAsksOnTerminal(t *testing.T) {
	dir := t.TempDir()
	home := t.TempDir()
	orig := "{\n  \"mcpServers\": {\n    \"git\": {\"command\": \"uvx\", \"args\": [\"mcp-server-git\"]}\n  }\n}\n"
	if err := os.WriteFile(filepath.Join(dir, ".mcp.json"), []byte(orig), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bouncerBin(t), "init")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+home, "BOUNCER_HOME="+filepath.Join(home, ".bouncer"))
	p := startPTYCmd(t, cmd)
	p.waitFor(t, "Write .mcp.json? [y/N] ")
	p.f.Write([]byte("y\r"))
	p.waitFor(t, "Change .claude/settings.json? [y/N] ")
	p.f.Write([]byte("n\r"))
	status, out := p.wait(t)
	if status != 1 || !strings.Contains(out, "Wrote .mcp.json") || !strings.Contains(out, "Not written.") {
		t.Fatalf("status %d, output:\n%s", status, out)
	}
	got, _ := os.ReadFile(filepath.Join(dir, ".mcp.json"))
	if !strings.Contains(string(got), `"args": ["run", "--config", ".mcp.json", "--server", "git"]`) {
		t.Errorf("not wrapped:\n%s", got)
	}
	if _, err := os.Stat(filepath.Join(dir, ".claude", "settings.json")); err == nil {
		t.Error("the hook was written though the answer was no")
	}
}
