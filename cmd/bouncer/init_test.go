package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBouncerCommand checks what a wrapped entry launches: "bouncer" when a
// PATH lookup finds it, else this binary by its absolute path, with a note.
func TestBouncerCommand(t *testing.T) {
	empty := t.TempDir()
	t.Setenv("PATH", empty)
	cmd, note := bouncerCommand()
	exe, _ := os.Executable()
	exe, _ = filepath.EvalSymlinks(exe)
	if cmd != exe || !filepath.IsAbs(cmd) {
		t.Errorf("not on PATH: command %q, want %q", cmd, exe)
	}
	if !strings.Contains(note, "not on PATH") || !strings.Contains(note, exe) {
		t.Errorf("note %q", note)
	}

	withBouncer := t.TempDir()
	if err := os.WriteFile(filepath.Join(withBouncer, "bouncer"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", withBouncer)
	if cmd, note := bouncerCommand(); cmd != "bouncer" || note != "" {
		t.Errorf("on PATH: command %q, note %q", cmd, note)
	}
}
