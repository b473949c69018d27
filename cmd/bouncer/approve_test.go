package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/bouncer-mcp/bouncer/internal/approval"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// bouncerBin builds the real binary once; the approval tests run it as a
// user would, on a real pseudo-terminal.
func bouncerBin(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "bouncer-approve-test")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "bouncer")
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// term is a bouncer process on a pseudo-terminal.
type ptyProc struct {
	cmd *exec.Cmd
	f   *os.File
	mu  sync.Mutex
	out bytes.Buffer
	eof chan struct{}
}

func startPTY(t *testing.T, args ...string) *ptyProc {
	t.Helper()
	cmd := exec.Command(bouncerBin(t), args...)
	cmd.Env = append(os.Environ(), "BOUNCER_HOME=/nonexistent-use-home-flag")
	return startPTYCmd(t, cmd)
}

// startPTYCmd starts cmd on a new pseudo-terminal and copies what it
// writes there into the ptyProc's buffer; the process is killed when the
// test ends.
func startPTYCmd(t *testing.T, cmd *exec.Cmd) *ptyProc {
	t.Helper()
	f, err := pty.Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	p := &ptyProc{cmd: cmd, f: f, eof: make(chan struct{})}
	go func() {
		defer close(p.eof)
		buf := make([]byte, 4096)
		for {
			n, err := f.Read(buf)
			p.mu.Lock()
			p.out.Write(buf[:n])
			p.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() { cmd.Process.Kill(); f.Close() })
	return p
}

func (p *ptyProc) output() string { p.mu.Lock(); defer p.mu.Unlock(); return p.out.String() }

// waitFor waits until the output contains s.
func (p *ptyProc) waitFor(t *testing.T, s string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(p.output(), s) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q in output:\n%s", s, p.output())
		}
		select {
		case <-p.eof:
			if !strings.Contains(p.output(), s) {
				t.Fatalf("exited without %q; output:\n%s", s, p.output())
			}
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// wait returns the exit status and the whole output.
func (p *ptyProc) wait(t *testing.T) (int, string) {
	t.Helper()
	err := p.cmd.Wait()
	select {
	case <-p.eof:
	case <-time.After(5 * time.Second):
	}
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), p.output()
		}
		t.Fatal(err)
	}
	return 0, p.output()
}

var mailReq = approval.Request{Server: "mail", Tool: "send_email", Param: "to", Destination: "bob@partner.com"}

func TestApproveOnTerminal(t *testing.T) {
	for _, tc := range []struct {
		answer            string
		approved, session bool
	}{
		{"y\r", true, false},
		{"yes\r", true, false},
		{"Y\r", true, false},
		{" YES \r", true, false},
		{"s\r", true, true},
		{"Session\r", true, true},
		{"n\r", false, false},
		{"\r", false, false},
		{"yess\r", false, false},
		{"ss\r", false, false},
		{"ok\r", false, false},
		{"\x04", false, false}, // ^D: end of input
	} {
		t.Run(fmt.Sprintf("%q", tc.answer), func(t *testing.T) {
			home := t.TempDir()
			store := approval.Open(filepath.Join(home, "pending.json"), nil)
			code, err := store.Issue(mailReq, nil)
			if err != nil {
				t.Fatal(err)
			}
			p := startPTY(t, "approve", strings.ToLower(code), "--home", home)
			p.waitFor(t, "Approve? [y/N] ")
			for _, want := range []string{code, "mail", "send_email", "to", "bob@partner.com", "expires in "} {
				if !strings.Contains(p.output(), want) {
					t.Errorf("prompt does not show %q:\n%s", want, p.output())
				}
			}
			io.WriteString(p.f, tc.answer)
			status, out := p.wait(t)
			used, missing, err := store.Redeem([]approval.Request{mailReq})
			if err != nil {
				t.Fatal(err)
			}
			took := len(missing) == 0
			if tc.approved {
				if status != 0 || !took || !strings.Contains(out, "Approved "+code) || used[0].Session != tc.session {
					t.Errorf("exit %d, redeemed %v %+v; want for the session %v; output:\n%s", status, took, used, tc.session, out)
				}
			} else if status != 1 || took || !strings.Contains(out, "not approved") {
				t.Errorf("exit %d, redeemed %v; want 1, false, \"not approved\"; output:\n%s", status, took, out)
			}
		})
	}
}

// A destination made to rewrite the screen is shown escaped, with a warning.
func TestApproveEscapesDestination(t *testing.T) {
	home := t.TempDir()
	store := approval.Open(filepath.Join(home, "pending.json"), nil)
	evil := mailReq
	evil.Destination = "eve@evil.com\x1b[2K\r\x1b[1A  destination  bob@partner.com\u202emoc.live\x07"
	code, err := store.Issue(evil, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := startPTY(t, "approve", code, "--home", home)
	p.waitFor(t, "Approve? [y/N] ")
	out := p.output()
	for _, bad := range []string{"\x1b[", "\u202e", "\x07"} {
		if strings.Contains(out, bad) {
			t.Errorf("the terminal received %q raw:\n%q", bad, out)
		}
	}
	for _, want := range []string{`eve@evil.com\x1b[2K\x0d\x1b[1A`, `\u202emoc.live\x07`, "WARNING"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	io.WriteString(p.f, "n\r")
	if status, _ := p.wait(t); status != 1 {
		t.Errorf("exit %d", status)
	}
}

// Where the session's output named the destination's domain is shown,
// as a note, escaped like every other value.
func TestApproveShowsSeenDomain(t *testing.T) {
	home := t.TempDir()
	store := approval.Open(filepath.Join(home, "pending.json"), nil)
	code, err := store.Issue(mailReq, &approval.Seen{Domain: "partner.com", Server: "in\x1bbox"})
	if err != nil {
		t.Fatal(err)
	}
	p := startPTY(t, "approve", code, "--home", home)
	p.waitFor(t, "Approve? [y/N] ")
	for _, want := range []string{`  note         the domain partner.com appeared in the output of server in\x1bbox this session:`,
		"this destination may come from there, spelled another way"} {
		if !strings.Contains(p.output(), want) {
			t.Errorf("no %q in:\n%s", want, p.output())
		}
	}
	io.WriteString(p.f, "n\r")
	if status, _ := p.wait(t); status != 1 {
		t.Errorf("exit %d", status)
	}
}

func TestApproveRefusesWithoutTerminal(t *testing.T) {
	home := t.TempDir()
	store := approval.Open(filepath.Join(home, "pending.json"), nil)
	code, _ := store.Issue(mailReq, nil)
	cmd := exec.Command(bouncerBin(t), "approve", "--home", home, code)
	cmd.Stdin = strings.NewReader("y\n")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Fatalf("exit %v, want 1", err)
	}
	if !strings.Contains(stderr.String(), "not a terminal") {
		t.Errorf("stderr %q does not say why", stderr.String())
	}
	if c, _ := store.Lookup(code); c.Approved {
		t.Error("approved without a terminal")
	}
}

// writePending writes a pending.json fixture.
func writePending(t *testing.T, home string, codes ...approval.Code) {
	t.Helper()
	if codes == nil {
		codes = []approval.Code{}
	}
	b, err := json.Marshal(map[string]any{"version": 1, "codes": codes})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "pending.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestApproveBadCodes(t *testing.T) {
	now := time.Now()
	home := t.TempDir()
	writePending(t, home,
		approval.Code{Code: "USD-AAA", Request: mailReq, Issued: now.Add(-time.Minute), Approved: true, Used: true},
		approval.Code{Code: "EXP-AAA", Request: mailReq, Issued: now.Add(-10 * time.Minute)},
		approval.Code{Code: "APR-AAA", Request: mailReq, Issued: now.Add(-time.Minute), Approved: true},
	)
	for _, tc := range []struct {
		code, want string
		status     int
	}{
		{"NOP-AAA", "unknown code NOP-AAA", 1},
		{"USD-AAA", "already used", 1},
		{"exp-aaa", "EXP-AAA expired", 1},
		{"K7Q F2M", "not a code", 1},
		{"APR-AAA", "already approved", 0},
	} {
		t.Run(tc.code, func(t *testing.T) {
			p := startPTY(t, "approve", "--home", home, tc.code)
			status, out := p.wait(t)
			if status != tc.status || !strings.Contains(out, tc.want) || strings.Contains(out, "Approve?") {
				t.Errorf("exit %d, want %d with %q and no question; output:\n%s", status, tc.status, tc.want, out)
			}
		})
	}
}

func TestPendingLists(t *testing.T) {
	now := time.Now()
	home := t.TempDir()
	odd := mailReq
	odd.Destination = "x@y.z\x1b]0;pwned\x07\nFAKE-LINE"
	writePending(t, home,
		approval.Code{Code: "NEW-AAA", Request: odd, Issued: now.Add(-10 * time.Second)},
		approval.Code{Code: "OLD-AAA", Request: mailReq, Issued: now.Add(-2*time.Minute - 5*time.Second), Approved: true},
		approval.Code{Code: "USD-AAA", Request: mailReq, Issued: now.Add(-time.Minute), Used: true},
		approval.Code{Code: "EXP-AAA", Request: mailReq, Issued: now.Add(-6 * time.Minute)},
	)
	out, err := exec.Command(bouncerBin(t), "pending", "--home", home).Output()
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines, want 2 (open codes only, oldest first):\n%s", len(lines), out)
	}
	for i, want := range [][]string{
		{"OLD-AAA", "2m0", "mail", "send_email", "to", "bob@partner.com"},
		{"NEW-AAA", "1", "mail", "send_email", "to", `x@y.z\x1b]0;pwned\x07\x0aFAKE-LINE`},
	} {
		f := strings.Fields(lines[i])
		if len(f) != 6 || f[0] != want[0] || !strings.HasPrefix(f[1], want[1]) || f[2] != want[2] || f[3] != want[3] || f[4] != want[4] || f[5] != want[5] {
			t.Errorf("line %d = %q, want fields %q", i+1, lines[i], want)
		}
	}
}

// On a terminal, pending names its columns above the lines.
func TestPendingOnTerminal(t *testing.T) {
	home := t.TempDir()
	store := approval.Open(filepath.Join(home, "pending.json"), nil)
	code, err := store.Issue(mailReq, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := startPTY(t, "pending", "--home", home)
	status, out := p.wait(t)
	lines := strings.Split(strings.TrimRight(strings.ReplaceAll(out, "\r\n", "\n"), "\n"), "\n")
	if status != 0 || len(lines) != 2 {
		t.Fatalf("exit %d, %d lines, want 0 and a header and a code:\n%s", status, len(lines), out)
	}
	if f := strings.Fields(lines[0]); strings.Join(f, " ") != "CODE AGE SERVER TOOL ARGUMENT DESTINATION" {
		t.Errorf("header = %q", lines[0])
	}
	if f := strings.Fields(lines[1]); len(f) != 6 || f[0] != code || f[5] != "bob@partner.com" {
		t.Errorf("line = %q", lines[1])
	}
	// The columns line up under the header.
	if strings.Index(lines[0], "DESTINATION") != strings.Index(lines[1], "bob@partner.com") {
		t.Errorf("columns do not line up:\n%s", out)
	}
}

// The answer counts only if the code is still valid when it is given.
func TestApproveExpiresWhileAsking(t *testing.T) {
	home := t.TempDir()
	writePending(t, home, approval.Code{Code: "LTE-AAA", Request: mailReq, Issued: time.Now().Add(-approval.TTL + 1500*time.Millisecond)})
	p := startPTY(t, "approve", "--home", home, "LTE-AAA")
	p.waitFor(t, "Approve? [y/N] ")
	time.Sleep(2 * time.Second)
	io.WriteString(p.f, "y\r")
	status, out := p.wait(t)
	if status != 1 || !strings.Contains(out, "LTE-AAA expired") || strings.Contains(out, "Approved") {
		t.Errorf("exit %d; output:\n%s", status, out)
	}
	if c, _ := approval.Open(filepath.Join(home, "pending.json"), nil).Lookup("LTE-AAA"); c.Approved {
		t.Error("an expired code was approved")
	}
}

// Exit statuses the contract fixes: 0 ok, 1 refused or failed, 2 bad usage
// or a bad input file.
func TestExitStatuses(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.jsonl")
	bad := filepath.Join(dir, "bad.jsonl")
	os.WriteFile(good, nil, 0o600)
	os.WriteFile(bad, []byte("{}\n"), 0o600)
	corrupt := t.TempDir()
	os.WriteFile(filepath.Join(corrupt, "pending.json"), []byte("{"), 0o600)
	for _, tc := range []struct {
		args   []string
		status int
	}{
		{[]string{"audit", "verify", "--audit", good}, 0},
		{[]string{"audit", "verify", "--audit", bad}, 1},
		{[]string{"audit", "verify", "--audit", filepath.Join(dir, "missing")}, 2},
		{[]string{"audit", "verify", "--expect-head", "x", "--audit", good}, 2},
		{[]string{"audit", "verify", "--audit", good, "--expect-head", "sha256:" + strings.Repeat("ab", 32)}, 1},
		{[]string{"audit"}, 2},
		{[]string{"audit", "--help"}, 0},
		{[]string{"pending", "--home", t.TempDir()}, 0},
		{[]string{"pending", "--home", corrupt}, 2},
		{[]string{"pending", "--help"}, 0},
		{[]string{"approve", "--home", dir, "K7Q-F2M"}, 1}, // no terminal
		{[]string{"approve", "--home", dir}, 2},
		{[]string{"approve", "--yes", "K7Q-F2M"}, 2},
	} {
		cmd := exec.Command(bouncerBin(t), tc.args...)
		cmd.Env = append(os.Environ(), "BOUNCER_HOME="+dir)
		err := cmd.Run()
		status := 0
		if ee, ok := err.(*exec.ExitError); ok {
			status = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if status != tc.status {
			t.Errorf("bouncer %s: exit %d, want %d", strings.Join(tc.args, " "), status, tc.status)
		}
	}
}

// On a terminal, approve with a corrupt pending file is an error naming it.
func TestApproveCorruptPending(t *testing.T) {
	home := t.TempDir()
	os.WriteFile(filepath.Join(home, "pending.json"), []byte("{\"version\":1,\n\"codes\":[}"), 0o600)
	p := startPTY(t, "approve", "--home", home, "K7Q-F2M")
	status, out := p.wait(t)
	if status != 2 || !strings.Contains(out, filepath.Join(home, "pending.json")+": line 2, column 10") {
		t.Errorf("exit %d; output:\n%s", status, out)
	}
}

// A "y" typed before the question appeared is not an answer to it.
func TestApproveIgnoresTypeAhead(t *testing.T) {
	home := t.TempDir()
	store := approval.Open(filepath.Join(home, "pending.json"), nil)
	code, err := store.Issue(mailReq, nil)
	if err != nil {
		t.Fatal(err)
	}
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer tty.Close()
	// Queued on the terminal before the process even starts.
	if _, err := io.WriteString(ptmx, "y\r"); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bouncerBin(t), "approve", "--home", home, code)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close()
	p := &ptyProc{cmd: cmd, f: ptmx, eof: make(chan struct{})}
	go func() {
		defer close(p.eof)
		buf := make([]byte, 4096)
		for {
			n, err := ptmx.Read(buf)
			p.mu.Lock()
			p.out.Write(buf[:n])
			p.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() { cmd.Process.Kill(); ptmx.Close() })
	p.waitFor(t, "Approve? [y/N] ")
	io.WriteString(ptmx, "n\r")
	status, out := p.wait(t)
	if status != 1 || strings.Contains(out, "Approved") {
		t.Errorf("exit %d; output:\n%s", status, out)
	}
	if c, _ := store.Lookup(code); c.Approved {
		t.Error("type-ahead approved the code")
	}
}
