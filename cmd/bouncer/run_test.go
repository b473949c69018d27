package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// On a terminal, a policy problem exits 2 at once, as the contract says:
// the person reads stderr, and no MCP server is served to them
// (testdata/script/run_policy_error.txtar has the client's case).
func TestRunPolicyErrorOnTerminal(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("send_email:\n  sink_params: to\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	started := filepath.Join(dir, "started")
	p := startPTY(t, "run", "--home", filepath.Join(dir, "home"), "--policy", bad, "--", "sh", "-c", "touch "+started)
	code, out := p.wait(t)
	if code != 2 || !strings.Contains(out, "bouncer: "+bad+":2: send_email.sink_params: ") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	if strings.Contains(out, "serving this error") || strings.Contains(out, "jsonrpc") {
		t.Errorf("served MCP on a terminal:\n%s", out)
	}
	if _, err := os.Stat(started); err == nil {
		t.Error("the upstream was started")
	}
}
