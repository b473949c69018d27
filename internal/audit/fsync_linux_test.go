//go:build linux

package audit

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bouncer-mcp/bouncer/internal/testsupport/faultfs"
)

// A disk whose flush fails (fsync and fdatasync return EIO, through a
// real FUSE mount): the log stops being writable, every later line is
// refused, so every later call is denied, and it stays so once the disk
// answers again, since the kernel may have dropped the lines it could not
// write. Only a new start, which reads the log back and checks its chain,
// trusts it again.
func TestSyncFails(t *testing.T) {
	f := faultfs.Mount(t)
	if f == nil {
		return
	}
	path := filepath.Join(f.Dir, "audit.jsonl")
	l, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.Append(entry(0)); err != nil {
		t.Fatal(err)
	}
	if err := l.Writable(); err != nil {
		t.Fatalf("Writable on a good disk: %v", err)
	}

	f.FailSync(true)
	if err := l.Writable(); err == nil || !strings.Contains(err.Error(), "syncing to disk: input/output error") {
		t.Fatalf("Writable while the disk fails: %v; want the failed sync", err)
	}
	// The background sync fails too: a line appended now is in the
	// kernel, but the next one is refused once its sync has failed.
	_ = l.Append(entry(1))
	deadline := time.Now().Add(5 * time.Second)
	for l.Append(entry(2)) == nil {
		if time.Now().After(deadline) {
			t.Fatal("lines are still taken after the disk failed to sync them")
		}
		time.Sleep(SyncInterval)
	}

	f.FailSync(false)
	if err := l.Append(entry(3)); err == nil {
		t.Error("a line was taken after a failed sync, once the disk answered again")
	}
	if err := l.Writable(); err == nil {
		t.Error("Writable after a failed sync, once the disk answered again")
	}
}
