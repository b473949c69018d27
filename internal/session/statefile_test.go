package session

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Remembered destinations and the session's key are trusted only as
// statefile trusts a file: not through a symbolic link, even to a file of
// this user's, and not when another user owns them.
func TestRememberedNotThroughLink(t *testing.T) {
	state := t.TempDir()
	r := OpenRemembered(state)
	now := time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)
	if err := r.Add("mail", "carol@partner.example", "x", now); err != nil {
		t.Fatal(err)
	}
	real := filepath.Join(state, "elsewhere.json")
	if err := os.Rename(r.Path(), real); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, r.Path()); err != nil {
		t.Fatal(err)
	}
	fresh := OpenRemembered(state)
	if _, err := fresh.List(); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("a link in place of %s: %v", r.Path(), err)
	}
	if fresh.Has("mail", "carol@partner.example") {
		t.Error("a link in place of the file vouches")
	}
	if err := fresh.Add("mail", "dave@partner.example", "x", now); err == nil {
		t.Error("Add went on over a file it could not trust")
	}
}

// A key in place of the session's that is a link is not used: the
// process goes on with a session of its own.
func TestSessionKeyNotThroughLink(t *testing.T) {
	state := t.TempDir()
	client := live(t, os.Getpid())
	join(t, state, client)
	key := filepath.Join(state, Dir, dirName(client), "key")
	b, err := os.ReadFile(key)
	if err != nil {
		t.Fatal(err)
	}
	real := filepath.Join(state, "key-elsewhere")
	if err := os.WriteFile(real, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(key); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, key); err != nil {
		t.Fatal(err)
	}
	s, err := JoinClient(state, client, func(string) {})
	if err == nil || s.Shared() || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("joined through a linked key: %v", err)
	}
}
