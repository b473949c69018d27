package approval

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The pending file is trusted only as statefile trusts a file: a
// symbolic link in its place is refused, even to a file of this user's
// that holds an approval, so no code is approved or redeemed through it.
func TestPendingNotThroughLink(t *testing.T) {
	s, _ := newStore(t)
	code := mustIssue(t, s, bob)
	if err := s.Approve(code); err != nil {
		t.Fatal(err)
	}
	real := filepath.Join(filepath.Dir(s.path), "elsewhere.json")
	if err := os.Rename(s.path, real); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, s.path); err != nil {
		t.Fatal(err)
	}
	if _, err := s.List(); err == nil || !strings.Contains(err.Error(), "symbolic link") || !strings.Contains(err.Error(), s.path) {
		t.Errorf("List through a link: %v", err)
	}
	if _, ok, err := take(s, bob); ok || err == nil {
		t.Errorf("take through a link: %v, %v", ok, err)
	}
}

// A state directory other users may write is refused before anything is
// written in it: they could replace the pending file.
func TestPendingDirOthersWrite(t *testing.T) {
	s, _ := newStore(t)
	dir := filepath.Dir(s.path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o770); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Issue(bob, nil); err == nil || !strings.Contains(err.Error(), "lets other users write in it") {
		t.Fatalf("Issue in a group-writable directory: %v", err)
	}
	if _, err := os.Stat(s.path); !os.IsNotExist(err) {
		t.Errorf("a pending file was written: %v", err)
	}
}
