package main

import (
	"bytes"
	"maps"
	"strings"
	"testing"
)

// TestRefuseUnsupported is what a Windows build does at startup
// (platform_other.go), run here where it can be: run and the commands that
// serve it refuse with one line naming Windows and why, the prompt hook
// still exits 0, and the offline commands are left alone.
func TestRefuseUnsupported(t *testing.T) {
	saved := maps.Clone(commands)
	t.Cleanup(func() { commands = saved })
	var stderr bytes.Buffer
	refuseUnsupported("windows", &stderr)

	for name := range unsupportedOffUnix {
		stderr.Reset()
		status := dispatch([]string{name, "--", "npx", "-y", "server"})
		want := exitFail
		if name == "hook" {
			want = exitOK
		}
		if status != want {
			t.Errorf("bouncer %s exited %d, want %d", name, status, want)
		}
		msg := stderr.String()
		if !strings.HasPrefix(msg, "bouncer: Windows is not supported: ") || strings.Count(msg, "\n") != 1 ||
			!strings.Contains(msg, "WSL 2") || !strings.Contains(msg, "only these commands work: ") {
			t.Errorf("bouncer %s said %q", name, msg)
		}
	}
	stderr.Reset()
	dispatch([]string{"run", "--", "x"})
	if !strings.Contains(stderr.String(), "bouncer run needs Linux or macOS") || !strings.Contains(stderr.String(), "check, ") {
		t.Errorf("bouncer run said %q", stderr.String())
	}
	for _, name := range []string{"check", "report", "verify", "sign", "serve", "audit", "version"} {
		if _, refused := unsupportedOffUnix[name]; refused {
			t.Errorf("%s is refused, but it works without Unix", name)
		}
	}
	if status := dispatch([]string{"version"}); status != exitOK {
		t.Errorf("bouncer version exited %d", status)
	}
}
