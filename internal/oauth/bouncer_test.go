package oauth

import (
	"bufio"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bouncer-mcp/bouncer/internal/sandbox"
	"github.com/bouncer-mcp/bouncer/internal/testsupport/need"
	"github.com/bouncer-mcp/bouncer/internal/testsupport/syncbuf"
)

var (
	buildOnce sync.Once
	builtDir  string // removed by TestMain
	builtBin  string
	buildErr  error
)

// buildBouncer builds cmd/bouncer once for the package's tests that run
// the real `bouncer run --url`.
func buildBouncer(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		if builtDir, buildErr = os.MkdirTemp("", "bouncer-oauth-bin-"); buildErr != nil {
			return
		}
		builtBin = filepath.Join(builtDir, "bouncer")
		if out, err := exec.Command("go", "build", "-o", builtBin, "../../cmd/bouncer").CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return builtBin
}

// bouncerRun runs the real `bouncer run --url serverURL` in sandbox mode
// mode as an MCP client would: initialize, then one call of the echo
// tool; between, if set, runs after the initialize is answered (once
// bouncer is sandboxed). It returns what bouncer wrote on stdout and
// stderr.
func bouncerRun(t *testing.T, bin, home, mode, serverURL string, between func()) (string, string) {
	t.Helper()
	cmd := exec.Command(bin, "run", "--home", home, "--sandbox", mode, "--name", "remote", "--url", serverURL)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	var stderr syncbuf.Buffer
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
	if between != nil {
		between()
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`)
	read("1")
	stdin.Close()
	cmd.Wait()
	return got.String(), stderr.String()
}

// needSandbox fails (in CI) or skips a test that needs the kernel to
// confine bouncer run (--sandbox strict).
func needSandbox(t *testing.T) {
	t.Helper()
	c := sandbox.Probe()
	if c.LandlockABI >= sandbox.MinStrictABI && c.Seccomp {
		return
	}
	need.Missing(t, fmt.Sprintf("a kernel with Landlock ABI %d and seccomp (this one: %+v)", sandbox.MinStrictABI, c),
		"run on Linux 6.7 or later")
}

// TestBouncerRunSignsIn drives the real `bouncer run --url` against a
// server that demands OAuth: it signs in through the (scripted) browser
// before answering the client, a call goes through with the token, and
// no token reaches stdout, stderr or the audit log. A second run reuses
// the kept token without opening the browser. Both run sandboxed: the
// sign-in happens before the sandbox, the calls after it.
func TestBouncerRunSignsIn(t *testing.T) {
	need.Long(t, "builds bouncer")
	f := newFixture(t)
	bin := buildBouncer(t)
	home := filepath.Join(t.TempDir(), "home")
	run := func() (string, string) { return bouncerRun(t, bin, home, "auto", f.rs.URL, nil) }
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

// A server that asks for more scope during the session (403
// insufficient_scope on tools/call) gets a second sign-in, for the
// scopes granted and the ones it names, although bouncer run is
// sandboxed by then: the sign-in helper it started before the sandbox
// runs it. The call is then sent once more and goes through.
func TestBouncerRunStepUp(t *testing.T) {
	need.Long(t, "builds bouncer")
	needSandbox(t)
	f := newFixture(t)
	f.rs = newStepUpRS(t, f.as)
	home := filepath.Join(t.TempDir(), "home")
	out, errs := bouncerRun(t, buildBouncer(t), home, "strict", f.rs.URL, nil)
	if !strings.Contains(out, `"text":"hi"`) || strings.Contains(out, `"isError":true`) {
		t.Fatalf("the call did not go through:\n%s\n%s", out, errs)
	}
	opened := f.openedURLs()
	if len(opened) != 2 {
		t.Fatalf("the browser was opened %d times, want twice (sign-in, step-up):\n%s", len(opened), errs)
	}
	scope := func(raw string) []string {
		u, _ := url.Parse(raw)
		return strings.Fields(u.Query().Get("scope"))
	}
	if s := scope(opened[0]); slices.Contains(s, "mcp:write") || !slices.Contains(s, "mcp:read") {
		t.Errorf("first sign-in asked for %q", s)
	}
	if s := scope(opened[1]); !slices.Contains(s, "mcp:write") || !slices.Contains(s, "mcp:read") {
		t.Errorf("the step-up asked for %q, want mcp:read and mcp:write", s)
	}
	if !strings.Contains(errs, "sandbox: landlock") {
		t.Errorf("not sandboxed:\n%s", errs)
	}
	audit, _ := os.ReadFile(filepath.Join(home, "audit.jsonl"))
	for what, s := range map[string]string{"stdout": out, "stderr": errs, "audit log": string(audit)} {
		f.noSecrets(what, s)
	}
}

// After the sign-in, the sandboxed proxy reaches the server's origin and
// the token endpoint's, nothing else: not the authorization server's
// origin, where the metadata, the registration and the authorization
// endpoint were. The kernel's rule (Landlock, per port) lists exactly
// those two ports, and a refresh after the sandbox (the access token is
// revoked once bouncer is sandboxed) reaches the token endpoint through
// the pinned dialer.
func TestBouncerRunEgress(t *testing.T) {
	need.Long(t, "builds bouncer")
	needSandbox(t)
	f := newFixture(t)
	f.as.splitToken()
	home := filepath.Join(t.TempDir(), "home")
	out, errs := bouncerRun(t, buildBouncer(t), home, "strict", f.rs.URL, func() { f.as.revoke(false) })
	if !strings.Contains(out, `"text":"hi"`) {
		t.Fatalf("the call did not go through:\n%s\n%s", out, errs)
	}
	m := regexp.MustCompile(`TCP connect to port ([0-9, ]+) only`).FindStringSubmatch(errs)
	if m == nil {
		t.Fatalf("no TCP rule on stderr:\n%s", errs)
	}
	got := strings.Split(m[1], ", ")
	slices.Sort(got)
	port := func(raw string) string { u, _ := url.Parse(raw); return u.Port() }
	want := []string{port(f.rs.URL), port(f.as.tokenSrv.URL)}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("TCP connect allowed to ports %q, want %q (server, token endpoint; the authorization server's is %s)", got, want, port(f.as.URL()))
	}
	if f.as.count("refresh_token") == 0 {
		t.Errorf("no refresh reached the token endpoint after the sandbox:\n%s", errs)
	}
}
