package proxy

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bouncer-mcp/bouncer/internal/testsupport/need"
	"github.com/bouncer-mcp/bouncer/internal/transport"
)

// envFastMCP names a Python interpreter that can import the official MCP
// Python SDK (the mcp package, 1.29.0). CI can't install one (PyPI is out
// of its reach), so the test is on CI's list of allowed skips; the engine
// test TestCountsAsCoercedList pins the same rule with FastMCP's recorded
// schema.
const envFastMCP = "BOUNCER_TEST_FASTMCP"

// fastmcpGmail returns the command for internal/testsupport/testserver/fastmcp_gmail.py,
// a server on the Python SDK's FastMCP, or skips the test when no Python
// can import the SDK.
func fastmcpGmail(t *testing.T) transport.Command {
	t.Helper()
	script, err := filepath.Abs(filepath.Join("..", "testsupport", "testserver", "fastmcp_gmail.py"))
	if err != nil {
		t.Fatal(err)
	}
	// Checked before the skip below, so a moved script fails the test
	// here too, where the SDK is missing and the test would only skip.
	if _, err := os.Stat(script); err != nil {
		t.Fatalf("the FastMCP server script: %v", err)
	}
	python := os.Getenv(envFastMCP)
	if python == "" {
		python = "python3"
	}
	out, err := exec.Command(python, "-c", "import mcp.server.fastmcp").CombinedOutput()
	if err != nil {
		need.Skip(t, fmt.Sprintf("no Python with the MCP Python SDK 1.29.0 (PyPI is not reachable here; set %s to one): %v\n%s", envFastMCP, err, out))
	}
	return transport.Command{Path: python, Args: []string{script}}
}

// fastmcpCalls returns what the FastMCP server's tools read, one JSON
// object per call.
func fastmcpCalls(t *testing.T, dir string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "calls.jsonl"))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

// Issue 23: FastMCP parses addLabelIds: "[\"TRASH\"]" into a list, so the
// relabel deletes mail while counts_as, which reads a string, does not
// count it. Once the gmail pack's delete budget is used, the proxy must
// refuse that call and not forward it; typed calls still pass.
func TestFastMCPCoercedListNotForwarded(t *testing.T) {
	cmd := fastmcpGmail(t)
	trash := map[string]any{"messageId": "m3", "addLabelIds": `["TRASH"]`}

	// The real part: called directly, FastMCP reads the string as a list.
	direct := t.TempDir()
	c := exec.Command(cmd.Path, cmd.Args...)
	c.Dir = direct
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "direct", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: c}, nil)
	if err != nil {
		t.Fatalf("connect to FastMCP: %v", err)
	}
	if text, isErr := callTool(t, cs, "modify_email", trash); isErr || !strings.Contains(text, "added ['TRASH']") {
		t.Fatalf("FastMCP read the string as %q (isError %v); the test expects it to parse it into a list", text, isErr)
	}
	cs.Close()

	h := newHarness(t, hopts{cmd: &cmd}) // the built-in packs: gmail's delete_email has max_calls: 2
	cs = h.client(nil)
	for _, id := range []string{"m1", "m2"} {
		if text, isErr := callTool(t, cs, "delete_email", map[string]any{"messageId": id}); isErr {
			t.Fatalf("delete_email %s = %q", id, text)
		}
	}
	text, isErr := callTool(t, cs, "modify_email", trash)
	if !isErr || !strings.HasPrefix(text, BlockedPrefix) ||
		!strings.Contains(text, "'arguments.addLabelIds' is a string, but the pinned schema of 'modify_email' declares array or null there") {
		t.Fatalf("relabel to TRASH spelled as a string = %q, isError %v; want blocked", text, isErr)
	}
	text, isErr = callTool(t, cs, "modify_email", map[string]any{"messageId": "m3", "addLabelIds": []string{"TRASH"}})
	if !isErr || !strings.Contains(text, "counts as 'delete_email', whose call budget 2 is used up") {
		t.Fatalf("relabel to TRASH as a list = %q, isError %v; want blocked by the budget", text, isErr)
	}
	if text, isErr := callTool(t, cs, "modify_email", map[string]any{"messageId": "m4", "addLabelIds": []string{"STARRED"}, "removeLabelIds": nil}); isErr {
		t.Fatalf("typed relabel = %q", text)
	}

	calls := fastmcpCalls(t, h.dir)
	want := []string{
		`{"tool": "delete_email", "args": {"messageId": "m1"}}`,
		`{"tool": "delete_email", "args": {"messageId": "m2"}}`,
		`{"tool": "modify_email", "args": {"messageId": "m4", "addLabelIds": ["STARRED"], "removeLabelIds": null}}`,
	}
	if strings.Join(calls, "\n") != strings.Join(want, "\n") {
		t.Fatalf("the server read:\n%s\nwant:\n%s", strings.Join(calls, "\n"), strings.Join(want, "\n"))
	}
	got := verdicts(h.auditLines())
	if !strings.Contains(got, "delete_email:allow/default delete_email:allow/default modify_email:deny/default modify_email:deny/budget modify_email:allow/default") {
		t.Fatalf("audit verdicts: %s", got)
	}
	reason := ""
	for _, e := range h.auditLines() {
		if e.Tool == "modify_email" && e.Rule == "default" && e.Verdict == "deny" {
			reason = e.Reason
		}
	}
	if !strings.Contains(reason, "Send the array itself") {
		t.Fatalf("audit reason %q does not say what to send", reason)
	}
}
