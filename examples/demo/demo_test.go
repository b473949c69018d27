package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDemo runs the whole demo: the real bouncer binary in front of the real
// helpdesk server, the pseudo-terminal approval, the state checks and the
// review pack. It fails if any attack got through.
func TestDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two binaries and runs the full demo")
	}
	repo, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out")
	var log bytes.Buffer
	if err := run(repo, out, &log); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	for _, want := range []string{"Attack 1", "[bouncer blocked] ", "bouncer approve ", "Every attack was stopped"} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("transcript lacks %q:\n%s", want, log.String())
		}
	}
	pack, err := os.ReadFile(filepath.Join(out, "review-pack.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(pack, []byte("What Bouncer enforces and what it does not")) {
		t.Errorf("review pack lacks its limits section")
	}
}
