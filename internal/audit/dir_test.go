package audit

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The log's directory must be this user's and closed to other users'
// writes: they could remove or replace the log and its head file, which
// no check on the files themselves would see.
func TestOpenRefusesOpenDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "audit.jsonl")
	l, err := Open(path)
	if err == nil {
		l.Close()
	}
	if err == nil || !strings.Contains(err.Error(), "mode 0777 lets other users write in it") || !strings.Contains(err.Error(), "chmod 700 "+dir) {
		t.Fatalf("Open in a world-writable directory: %v", err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("a log was made there: %v", err)
	}
}
