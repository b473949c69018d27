package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bouncer-mcp/bouncer/internal/testsupport/need"
)

// The listener starts quietly: its own session that takes a server's pin
// is torn down once the list is pinned, and what its pump still carries
// then (the npm everything-server sends list_changed after its list)
// meets a closed client. That is no error of the user's, and the log says
// nothing of it.
func TestListenStartsQuietly(t *testing.T) {
	server := need.NPM(t, "@modelcontextprotocol/server-everything/dist/index.js")
	node := need.Node(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "servers.json")
	data, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"everything": map[string]any{"command": node, "args": []string{server}}}})
	if err := os.WriteFile(cfg, data, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bouncerBin(t), "listen", "--config", cfg, "--addr", "127.0.0.1:0", "--sandbox", "off")
	cmd.Env = append(os.Environ(), "BOUNCER_HOME="+filepath.Join(dir, "state"))
	stderr := startProcess(t, cmd)
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(stderr.String(), "tool list pinned for the deployment") {
		if time.Now().After(deadline) {
			t.Fatalf("not pinned within 60s:\n%s", stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond) // what the torn-down session still says
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if out := stderr.String(); strings.Contains(out, "writing to the") {
		t.Fatalf("the listener's start logged an error of its own pin session:\n%s", out)
	}
}
