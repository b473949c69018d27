package main

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bouncer-mcp/bouncer/internal/approval"
	"github.com/bouncer-mcp/bouncer/internal/audit"
	"github.com/bouncer-mcp/bouncer/internal/session"
)

// writeTaintDeny appends a taint deny to home's audit log, as the proxy
// writes it.
func writeTaintDeny(t *testing.T, home, server, dest, source string) {
	t.Helper()
	l, err := audit.Open(filepath.Join(home, "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.Append(audit.Entry{TS: time.Now(), Server: server, Tool: "send_email", Args: []byte(`{"to":"` + dest + `"}`),
		Verdict: "deny", Reason: "came from untrusted data", Rule: "sink",
		Taint: &audit.Taint{Param: "to", Destination: dest, Source: source}}); err != nil {
		t.Fatal(err)
	}
}

// trust add lists the recent taint denials, shows where the chosen one came
// from, and vouches only when the person types it; then the destination is
// remembered for that server.
func TestTrustAddOnTerminal(t *testing.T) {
	for _, tc := range []struct {
		name, typed string
		vouched     bool
	}{
		{"typed", "carol@partner.example\r", true},
		{"typed with the domain in other case", "carol@Partner.EXAMPLE\r", true},
		{"typed with the local part in other case", "CAROL@partner.example\r", true}, // its ASCII case folds, as every vouch does
		{"typed with a non-ASCII letter", "cärol@partner.example\r", false},
		{"typed as a look-alike", "carol@partner.ex\u0430mple\r", false},
		{"cancelled", "\r", false},
		{"typed another", "carol@partner.exampl\r", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := t.TempDir()
			writeTaintDeny(t, home, "outbox", "carol@partner.example", "inbox")
			writeTaintDeny(t, home, "outbox", "attacker@evil.example", "inbox")
			p := startPTY(t, "trust", "add", "--home", home)
			p.waitFor(t, "Which one to review?")
			out := p.output()
			if strings.Index(out, "attacker@evil.example") > strings.Index(out, "carol@partner.example") {
				t.Errorf("not newest first:\n%s", out)
			}
			io.WriteString(p.f, "2\r")
			p.waitFor(t, "Type the destination to vouch for it")
			for _, want := range []string{"carol@partner.example", "output of server inbox", "injection"} {
				if !strings.Contains(p.output(), want) {
					t.Errorf("review does not show %q:\n%s", want, p.output())
				}
			}
			io.WriteString(p.f, tc.typed)
			status, out := p.wait(t)
			has := session.OpenRemembered(home).Has("outbox", "carol@partner.example")
			if has != tc.vouched || (status == 0) != tc.vouched {
				t.Fatalf("exit %d, remembered %v; want %v\n%s", status, has, tc.vouched, out)
			}
			if session.OpenRemembered(home).Has("outbox", "attacker@evil.example") {
				t.Fatal("the other destination was remembered")
			}
		})
	}
}

// Without a terminal, trust add refuses; list and remove need none.
func TestTrustCommands(t *testing.T) {
	home := t.TempDir()
	if err := session.OpenRemembered(home).Add("outbox", "carol@partner.example", "approve", time.Now()); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (int, string) {
		t.Helper()
		return runBouncer(t, "", append(args, "--home", home)...)
	}
	if st, out := run("trust", "add", "--server", "outbox", "x@y.example"); st != 1 || !strings.Contains(out, "not a terminal") {
		t.Fatalf("trust add without a terminal: %d %s", st, out)
	}
	if st, out := run("trust", "list"); st != 0 || !strings.Contains(out, "outbox  carol@partner.example  (approve)") {
		t.Fatalf("trust list: %d %s", st, out)
	}
	if st, out := run("trust", "remove", "--server", "outbox", "carol@PARTNER.example"); st != 0 || !strings.Contains(out, "Forgot") {
		t.Fatalf("trust remove: %d %s", st, out)
	}
	if st, _ := run("trust", "remove", "--server", "outbox", "carol@partner.example"); st != 1 {
		t.Fatalf("removing twice: %d", st)
	}
	if st, _ := run("trust", "nope"); st != 2 {
		t.Fatalf("unknown verb: %d", st)
	}
}

// approve --remember vouches for the destination on that server.
func TestApproveRemember(t *testing.T) {
	home := t.TempDir()
	store := approval.Open(filepath.Join(home, "pending.json"), nil)
	code, err := store.Issue(mailReq)
	if err != nil {
		t.Fatal(err)
	}
	p := startPTY(t, "approve", "--remember", code, "--home", home)
	p.waitFor(t, "Approve? [y/N] ")
	if !strings.Contains(p.output(), "from now on") {
		t.Errorf("the question does not say what --remember does:\n%s", p.output())
	}
	io.WriteString(p.f, "y\r")
	if status, out := p.wait(t); status != 0 || !strings.Contains(out, "Remembered") {
		t.Fatalf("exit %d\n%s", status, out)
	}
	if !session.OpenRemembered(home).Has(mailReq.Server, mailReq.Destination) {
		t.Fatal("not remembered")
	}
	if _, err := os.Stat(filepath.Join(home, session.RememberedFile)); err != nil {
		t.Fatal(err)
	}
}

// runBouncer runs the built binary with stdin, returning the exit status
// and stdout and stderr together.
func runBouncer(t *testing.T, stdin string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(bouncerBin(t), args...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), string(out)
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0, string(out)
}

// bouncer log -f prints lines as they are appended, and stops on SIGINT.
func TestLogFollow(t *testing.T) {
	home := t.TempDir()
	cmd := exec.Command(bouncerBin(t), "log", "-f", "--home", home, "--verdict", "deny")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 10)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	time.Sleep(300 * time.Millisecond) // the log does not exist yet: -f waits for it
	writeTaintDeny(t, home, "outbox", "first@evil.example", "inbox")
	writeTaintDeny(t, home, "outbox", "second\x1b[2J@evil.example", "inbox")
	for _, want := range []string{"to=first@evil.example", `to=second\x1b[2J@evil.example`} {
		select {
		case l := <-lines:
			if !strings.Contains(l, want) || !strings.Contains(l, " deny ") {
				t.Fatalf("line %q, want %q", l, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no line with %q", want)
		}
	}
	cmd.Process.Signal(os.Interrupt)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("log -f after SIGINT: %v", err)
	}
}
