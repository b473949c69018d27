package ship

import (
	"context"
	"os"
	"strings"
	"testing"
)

// A cursor other users may write is not followed: it could move past
// lines that were never shipped. The log is shipped again from its start,
// saying why, as for a damaged cursor.
func TestCursorOthersWriteResendsAll(t *testing.T) {
	dir := t.TempDir()
	l := newTestLog(t, dir)
	l.add(3)
	d := &fakeDest{name: "fake x"}
	var n notes
	cfg := Config{Log: l.path, StateDir: dir, Dests: []Destination{d}, Once: true, Logf: n.logf}
	if res := Run(context.Background(), cfg); res[0].Err != nil || res[0].Shipped != 3 {
		t.Fatalf("first run: %+v", res[0])
	}
	cpath := cursorPath(dir, "fake x")
	if err := os.Chmod(cpath, 0o666); err != nil {
		t.Fatal(err)
	}
	res := Run(context.Background(), cfg)
	if res[0].Err != nil || res[0].Shipped != 3 || !strings.Contains(n.String(), cpath+": mode 0666 lets other users write it") ||
		!strings.Contains(n.String(), "shipping the log again from the start") {
		t.Fatalf("second run: %+v; notes %q", res[0], n.String())
	}
	if fi, err := os.Stat(cpath); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the cursor was not replaced by one of this user's: %v %v", fi.Mode(), err)
	}
}
