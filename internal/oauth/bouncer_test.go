package oauth

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bouncer-mcp/bouncer/internal/testsupport/need"
)

// TestBouncerRunSignsIn drives the real `bouncer run --url` against a
// server that demands OAuth: it signs in through the (scripted) browser
// before answering the client, a call goes through with the token, and
// no token reaches stdout, stderr or the audit log. A second run reuses
// the kept token without opening the browser. Both run sandboxed: the
// sign-in happens before the sandbox, the calls after it.
func TestBouncerRunSignsIn(t *testing.T) {
	need.Long(t, "builds bouncer")
	f := newFixture(t)
	bin := filepath.Join(t.TempDir(), "bouncer")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/bouncer").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	home := filepath.Join(t.TempDir(), "home")
	run := func() (string, string) {
		t.Helper()
		cmd := exec.Command(bin, "run", "--home", home, "--sandbox", "auto", "--name", "remote", "--url", f.rs.URL)
		stdin, _ := cmd.StdinPipe()
		stdout, _ := cmd.StdoutPipe()
		var stderr syncBuffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := bufio.NewReader(stdout)
		send := func(s string) { io.WriteString(stdin, s+"\n") }
		var got strings.Builder
		read := func(id string) {
			t.Helper()
			deadline := time.Now().Add(60 * time.Second)
			for time.Now().Before(deadline) {
				l, err := lines.ReadString('\n')
				got.WriteString(l)
				if strings.Contains(l, `"id":`+id+`,`) {
					return
				}
				if err != nil {
					t.Fatalf("no answer %s: %v\nstdout: %s\nstderr: %s", id, err, got.String(), stderr.String())
				}
			}
			t.Fatalf("no answer %s", id)
		}
		send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
		read("0")
		send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`)
		read("1")
		stdin.Close()
		cmd.Wait()
		return got.String(), stderr.String()
	}
	out, errs := run()
	if !strings.Contains(out, `"text":"hi"`) {
		t.Fatalf("the call did not go through:\n%s\n%s", out, errs)
	}
	if n := len(f.openedURLs()); n != 1 {
		t.Fatalf("the browser was opened %d times, want once (stderr: %s)", n, errs)
	}
	audit, _ := os.ReadFile(filepath.Join(home, "audit.jsonl"))
	for what, s := range map[string]string{"stdout": out, "stderr": errs, "audit log": string(audit)} {
		f.noSecrets(what, s)
	}
	if fi, err := os.Stat(filepath.Join(home, "oauth")); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("token directory: %v %v", fi, err)
	}
	// Again: the kept token is used; nobody is sent to the browser.
	out, errs = run()
	if !strings.Contains(out, `"text":"hi"`) || len(f.openedURLs()) != 1 {
		t.Fatalf("second run: browser opened %d times\n%s\n%s", len(f.openedURLs()), out, errs)
	}
}
