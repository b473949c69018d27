package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bouncer-mcp/bouncer/internal/policy"
	"github.com/bouncer-mcp/bouncer/internal/sandbox"
	"github.com/bouncer-mcp/bouncer/internal/testsupport/need"
)

// TestRunSandboxStrict builds the real binary (static, as released) and
// runs `bouncer run --sandbox strict` in front of the npm filesystem
// server with a policy whose sandbox key lists one of the server's two
// directories. It checks the proxy still does its whole job (pinning,
// allow, path deny, an approval code written to pending.json, audit) while
// /proc/PID/status of the proxy and of the server show the filters, and
// that the kernel refuses the server's write to the unlisted directory.
func TestRunSandboxStrict(t *testing.T) {
	c := sandbox.Probe()
	if c.LandlockABI < sandbox.MinStrictABI || !c.Seccomp {
		need.Missing(t, fmt.Sprintf("Landlock ABI %d and seccomp (%+v)", sandbox.MinStrictABI, c), "a Linux 6.7 or newer kernel with Landlock enabled")
	}
	server := need.NPM(t, "@modelcontextprotocol/server-filesystem/dist/index.js")
	node := need.Node(t)
	root := t.TempDir()
	bin := filepath.Join(root, "bouncer")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	ws, other, home := filepath.Join(root, "ws"), filepath.Join(root, "other"), filepath.Join(root, "home")
	for _, d := range []string{ws, other} {
		os.Mkdir(d, 0o700)
	}
	pol := filepath.Join(root, "policy.yaml")
	os.WriteFile(pol, []byte(fmt.Sprintf(`sandbox:
  read_write: [%s]
write_file:
  write_params: [path]
  allowed_path_prefixes: [%s, %s]
edit_file:
  exfiltrating: true
  sink_params: [path]
`, ws, ws, other)), 0o600)

	cmd := exec.Command(bin, "run", "--home", home, "--policy", pol, "--sandbox", "strict", "--", node, server, ws, other)
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { in.Close(); cmd.Wait() }()
	lines := make(chan string, 16)
	go func() {
		rd := bufio.NewReader(out)
		for {
			s, err := rd.ReadString('\n')
			if s != "" {
				lines <- s
			}
			if err != nil {
				close(lines)
				return
			}
		}
	}()
	send := func(id int, method string, params any) string {
		t.Helper()
		msg := map[string]any{"jsonrpc": "2.0", "method": method, "params": params}
		if id > 0 {
			msg["id"] = id
		}
		b, _ := json.Marshal(msg)
		if _, err := in.Write(append(b, '\n')); err != nil {
			t.Fatalf("write: %v; stderr: %s", err, stderr.String())
		}
		if id == 0 {
			return ""
		}
		for {
			select {
			case s, ok := <-lines:
				if !ok {
					t.Fatalf("proxy closed stdout; stderr: %s", stderr.String())
				}
				if strings.Contains(s, fmt.Sprintf(`"id":%d,`, id)) {
					return s
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("no answer to %d; stderr: %s", id, stderr.String())
			}
		}
	}
	send(1, "initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "t", "version": "1"}})
	send(0, "notifications/initialized", map[string]any{})
	send(2, "tools/list", map[string]any{})
	call := func(id int, tool string, args map[string]any) string {
		return send(id, "tools/call", map[string]any{"name": tool, "arguments": args})
	}
	if r := call(3, "write_file", map[string]any{"path": filepath.Join(ws, "a.txt"), "content": "hi"}); strings.Contains(r, `"isError":true`) {
		t.Errorf("allowed write failed: %s", r)
	}
	if r := call(4, "write_file", map[string]any{"path": "/etc/bouncer-test", "content": "hi"}); !strings.Contains(r, "[bouncer blocked]") {
		t.Errorf("write outside the prefixes was not blocked by policy: %s", r)
	}
	// The policy allows it, the server allows it, the kernel does not.
	if r := call(5, "write_file", map[string]any{"path": filepath.Join(other, "b.txt"), "content": "hi"}); !strings.Contains(r, "EACCES") {
		t.Errorf("write to the directory outside sandbox.read_write: want EACCES from the kernel, got %s", r)
	}
	if r := call(6, "edit_file", map[string]any{"path": filepath.Join(ws, "new.txt"), "edits": []any{}}); !strings.Contains(r, "bouncer approve ") {
		t.Errorf("ask without elicitation should give a code: %s", r)
	}

	for _, pid := range []int{cmd.Process.Pid, childOf(t, cmd.Process.Pid)} {
		st := procStatus(t, pid)
		if st["Seccomp"] != "2" || st["NoNewPrivs"] != "1" {
			t.Errorf("pid %d (%s): Seccomp %s NoNewPrivs %s, want 2 and 1", pid, st["Name"], st["Seccomp"], st["NoNewPrivs"])
		}
	}
	if _, err := os.Stat(filepath.Join(home, "pending.json")); err != nil {
		t.Errorf("approval code not saved under the sandbox: %v", err)
	}
	if _, err := os.Stat(filepath.Join(other, "b.txt")); err == nil {
		t.Error("the server wrote outside sandbox.read_write")
	}
	in.Close()
	done := make(chan error, 1)
	go func() { io.Copy(io.Discard, out); done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("bouncer run: %v; stderr: %s", err, stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("bouncer run did not stop after stdin closed")
	}
	if !strings.Contains(stderr.String(), "bouncer: sandbox: landlock ABI") || !strings.Contains(stderr.String(), "seccomp allowlist; upstream confined (landlock, seccomp denylist): read-write "+ws) {
		t.Errorf("stderr does not say what was applied:\n%s", stderr.String())
	}
	// The sandbox key narrows what a kernel form (the namespace, or
	// Landlock where user namespaces are refused) already keeps the
	// server off: both apply.
	if !strings.Contains(stderr.String(), "; own files: mount namespace (state directory hidden, 1 path read-only)") &&
		!strings.Contains(stderr.String(), "; own files: landlock around 2 paths") {
		t.Errorf("stderr does not say the own files are kept in a namespace:\n%s", stderr.String())
	}
	audit, _ := os.ReadFile(filepath.Join(home, "audit.jsonl"))
	if n := strings.Count(string(audit), "\n"); n < 4 {
		t.Errorf("audit has %d lines, want at least 4:\n%s", n, audit)
	}
}

func childOf(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	if err != nil {
		t.Fatal(err)
	}
	var child int
	if _, err := fmt.Sscan(string(b), &child); err != nil {
		// The upstream may have been started from another thread.
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
		for _, f := range tasks {
			b, _ := os.ReadFile(f)
			if _, err := fmt.Sscan(string(b), &child); err == nil {
				return child
			}
		}
		t.Fatalf("no child of %d", pid)
	}
	return child
}

func procStatus(t *testing.T, pid int) map[string]string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok {
			m[k] = strings.TrimSpace(v)
		}
	}
	return m
}

// The policy parser accepts exactly the own_files values the sandbox
// knows, strongest first.
func TestOwnFilesFormsAgree(t *testing.T) {
	for i, s := range policy.OwnFilesForms {
		f, err := sandbox.ParseOwnForm(s)
		if err != nil || f.String() != s {
			t.Errorf("%q: %v, %v", s, f, err)
		}
		if want := sandbox.OwnNamespace - sandbox.OwnForm(i); f != want {
			t.Errorf("%q is form %v, want %v (the list is strongest first)", s, f, want)
		}
	}
	if len(policy.OwnFilesForms) != int(sandbox.OwnNamespace)+1 {
		t.Errorf("policy knows %d forms, the sandbox %d", len(policy.OwnFilesForms), sandbox.OwnNamespace+1)
	}
}
