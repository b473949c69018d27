//go:build unix

package audit

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// within fails the test if fn has not returned in 5 s: an open that waits
// on a FIFO's writer never does.
func within(t *testing.T, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { fn(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("still waiting after 5s (on a FIFO with no writer)")
	}
}

// A head file, or a log, that is a FIFO is refused at once by verify and
// by Open, never waited on.
func TestFIFORefused(t *testing.T) {
	t.Run("head", func(t *testing.T) {
		path, _ := writeLog(t, 2)
		os.Remove(HeadPath(path))
		if err := syscall.Mkfifo(HeadPath(path), 0o600); err != nil {
			t.Fatal(err)
		}
		within(t, func() {
			rep, err := VerifyFileReport(path)
			if err != nil || rep.OK() || !strings.Contains(rep.Problems[0].Msg, HeadPath(path)+": not a regular file but a named pipe (FIFO)") {
				t.Errorf("verify: %v %v", rep, err)
			}
			if l, err := Open(path); err == nil || !strings.Contains(err.Error(), "named pipe") {
				l.Close()
				t.Errorf("Open: %v", err)
			}
		})
	})
	t.Run("log", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "audit.jsonl")
		if err := syscall.Mkfifo(path, 0o600); err != nil {
			t.Fatal(err)
		}
		within(t, func() {
			if _, err := VerifyFileReport(path); err == nil || !strings.Contains(err.Error(), "audit "+path+": open "+path+": not a regular file but a named pipe") {
				t.Errorf("verify: %v", err)
			}
			if _, err := ReadFile(path); err == nil || !strings.Contains(err.Error(), "named pipe") {
				t.Errorf("ReadFile: %v", err)
			}
			if l, err := Open(path); err == nil || !strings.Contains(err.Error(), "named pipe") {
				l.Close()
				t.Errorf("Open: %v", err)
			}
		})
	})
}
