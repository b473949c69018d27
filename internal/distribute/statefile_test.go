package distribute

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// In a shared install directory the lock file is 0600 like every lock
// Bouncer takes (only the installer opens it); the mark and the set stay
// readable, and no temporary file is left beside them.
func TestInstallSharedLockPrivate(t *testing.T) {
	k := newKey(t)
	dir := filepath.Join(t.TempDir(), "policy")
	if _, err := Install(dir, artifact(t, k, "one", 1, baseYAML, "a.yaml"), opts(false)); err != nil {
		t.Fatal(err)
	}
	if _, err := Install(dir, artifact(t, k, "two", 2, teamYAML, "a.yaml"), opts(false)); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(dir, lockName)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("lock file: %v %v, want 0600", fi.Mode(), err)
	}
	if fi, err := os.Stat(filepath.Join(dir, highWaterName)); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("high-water mark: %v %v, want 0644", fi.Mode(), err)
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if n := e.Name(); n != currentLink && n != lockName && n != highWaterName && !strings.HasPrefix(n, setPrefix) {
			t.Errorf("left in %s: %s", dir, n)
		}
	}
}

// The high-water mark is read as a file of its own, never through a
// symbolic link (statefile.ReadCapped): Bouncer never links it, so a link
// is someone else's doing, and the set is not taken as verified.
func TestHighWaterNotThroughLink(t *testing.T) {
	k := newKey(t)
	dir := t.TempDir()
	if _, err := Install(dir, artifact(t, k, "one", 1, baseYAML, "a.yaml"), opts(true)); err != nil {
		t.Fatal(err)
	}
	hw := filepath.Join(dir, highWaterName)
	real := filepath.Join(t.TempDir(), "mark.json")
	if err := os.Rename(hw, real); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, hw); err != nil {
		t.Fatal(err)
	}
	_, err := VerifyInstalled(dir, k.verifier(), Freshness{})
	if !errors.Is(err, ErrNotAsPulled) || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("verified through a linked mark: %v", err)
	}
}
