package audit

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/bouncer-mcp/bouncer/internal/testsupport/smallfs"
)

// A full disk, the kernel's (a small tmpfs): a line that does not fit
// fails its Append with ENOSPC (its call is denied), Writable says so
// before that, and once space is freed the log takes lines again, with the
// cut line left visible to verification as one bad line and the chain
// going on after it.
func TestFullDisk(t *testing.T) {
	dir, ok := smallfs.Dir(t, 4<<20)
	if !ok {
		return
	}
	path := filepath.Join(dir, "audit.jsonl")
	l, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for i := range 3 {
		if err := l.Append(entry(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Writable(); err != nil {
		t.Fatalf("Writable with 4 MiB free: %v", err)
	}

	filler := smallfs.Fill(t, dir)
	if err := l.Writable(); err == nil || !strings.Contains(err.Error(), "free space there") {
		t.Fatalf("Writable on a full disk: %v; want it to say the disk is full", err)
	}
	big := entry(3)
	big.Args = json.RawMessage(`{"to":"bob@x.com","body":"` + strings.Repeat("a", 256<<10) + `"}`)
	if err := l.Append(big); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Append of a 256 KiB line on a full disk: %v; want ENOSPC", err)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if err := l.Writable(); err != nil {
		t.Fatalf("Writable once space is freed: %v", err)
	}
	for i := 4; i < 6; i++ {
		if err := l.Append(entry(i)); err != nil {
			t.Fatalf("Append once space is freed: %v", err)
		}
	}
	rep, err := VerifyFileReport(path)
	if err != nil {
		t.Fatal(err)
	}
	// Lines 1-3, the cut line 4 (its call was denied), 5 and 6 chained to it.
	if rep.Lines != 6 || len(rep.Problems) != 1 || rep.Problems[0].Line != 4 {
		t.Fatalf("verification after the full disk: %d lines, problems %v; want 6 lines and line 4, the cut one, the only problem", rep.Lines, rep.Problems)
	}
}
