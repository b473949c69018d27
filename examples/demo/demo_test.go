package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bouncer-mcp/bouncer/internal/testsupport/need"
)

// TestDemo runs the whole demo: the real bouncer binary in front of the real
// helpdesk server, the pseudo-terminal approval, the state checks and the
// review pack. It fails if any attack got through.
func TestDemo(t *testing.T) {
	need.Long(t, "builds two binaries and runs the full demo")
	repo, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out")
	// No bouncer installed: the demo builds its own (TestInstalled has
	// the other case).
	t.Setenv("GOBIN", t.TempDir())
	var log bytes.Buffer
	if err := run(repo, out, &log); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	transcript := log.String()
	for _, want := range []string{"  built bouncer in ", "  built helpdesk in ", "Attack 1", "[bouncer blocked] ", "bouncer approve ", "Every attack was stopped",
		filepath.Join(out, "policy.yaml"), filepath.Join(out, "home", "audit.jsonl"), filepath.Join(out, "review-pack.md")} {
		if !strings.Contains(transcript, want) {
			t.Errorf("transcript lacks %q:\n%s", want, transcript)
		}
	}
	// Every blocked call's message is shown in full, every line of it:
	// the last lines say what a human does (bouncer approve CODE).
	b, err := os.ReadFile(filepath.Join(out, "home", "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	denies := 0
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var e struct{ Verdict, Reason, Code string }
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatal(err)
		}
		if e.Verdict != "deny" {
			continue
		}
		denies++
		reason := e.Reason
		if e.Code != "" {
			// The audit line says on one line what the agent's message
			// lays out, the command on a line of its own.
			before, _, ok := strings.Cut(reason, "; waiting for: ")
			if !ok {
				t.Errorf("the line issuing code %s does not say what it waits for: %q", e.Code, reason)
			}
			reason = before
			if !strings.Contains(transcript, "bouncer approve "+e.Code) {
				t.Errorf("the transcript lacks the command for code %s", e.Code)
			}
		}
		for _, l := range strings.Split(strings.ReplaceAll(reason, out, "out"), "\n") {
			if !strings.Contains(transcript, l) {
				t.Errorf("the transcript cuts a blocked message; it lacks %q", l)
			}
		}
	}
	if denies != 5 {
		t.Errorf("%d deny lines in the audit log, want 5", denies)
	}
	// It ends with what to do next.
	next := transcript[strings.LastIndex(transcript, "\n== "):]
	if !strings.HasPrefix(next, "\n== Next") || !strings.Contains(next, "bouncer init") || !strings.Contains(next, " log --home ") {
		t.Errorf("the transcript does not end with the next steps:\n%s", next)
	}
	pack, err := os.ReadFile(filepath.Join(out, "review-pack.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(pack, []byte("What Bouncer enforces and what it does not")) {
		t.Errorf("review pack lacks its limits section")
	}
}

// The demo takes the bouncer go install put in GOBIN when Go finds it up
// to date with this source, and builds its own otherwise.
func TestInstalled(t *testing.T) {
	need.Long(t, "installs bouncer twice")
	repo, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	goBin := need.Program(t, "go", "install Go")
	gobin := t.TempDir()
	t.Setenv("GOBIN", gobin)
	if got := installed(goBin, repo, "./cmd/bouncer"); got != "" {
		t.Fatalf("nothing installed yet, installed = %q", got)
	}
	install := func(args ...string) {
		t.Helper()
		cmd := exec.Command(goBin, append(append([]string{"install"}, args...), "./cmd/bouncer")...)
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go install: %v\n%s", err, out)
		}
	}
	install()
	if got, want := installed(goBin, repo, "./cmd/bouncer"), filepath.Join(gobin, "bouncer"); got != want {
		t.Fatalf("after go install, installed = %q, want %q", got, want)
	}
	// Another version is not this one.
	install("-ldflags=-X main.version=9.9.9")
	if got := installed(goBin, repo, "./cmd/bouncer"); got != "" {
		t.Fatalf("another version installed, installed = %q", got)
	}
}
