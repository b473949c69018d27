package ship

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bouncer-mcp/bouncer/internal/audit"
)

func testReader(path string, cur Cursor, n *notes) *reader {
	cur.Dest = "fake x"
	return &reader{path: path, cur: cur, note: n.logf, maxLines: 500, maxBytes: 1 << 20}
}

// drain reads and commits until nothing is left, returning the texts.
func drain(t *testing.T, r *reader) []string {
	t.Helper()
	var out []string
	for {
		lines, err := r.next()
		if err != nil {
			t.Fatal(err)
		}
		if len(lines) == 0 {
			return out
		}
		for _, l := range lines {
			if l.Hash != audit.Hash(l.Text) {
				t.Fatalf("line %d: hash %s is not the hash of its text", l.Num, l.Hash)
			}
			out = append(out, string(l.Text))
		}
		r.commit(lines)
	}
}

func TestReaderNoLogYet(t *testing.T) {
	var n notes
	r := testReader(filepath.Join(t.TempDir(), "audit.jsonl"), Cursor{}, &n)
	if got := drain(t, r); len(got) != 0 {
		t.Fatalf("got %d lines from a log that does not exist", len(got))
	}
}

func TestReaderGrowthAndLineNumbers(t *testing.T) {
	dir := t.TempDir()
	l := newTestLog(t, dir)
	l.add(3)
	var n notes
	r := testReader(l.path, Cursor{}, &n)
	defer r.close()
	if got := drain(t, r); len(got) != 3 {
		t.Fatalf("got %d lines, want 3", len(got))
	}
	l.add(4)
	lines, err := r.next()
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != 4 || lines[0].Num != 4 || lines[3].Num != 7 {
		t.Fatalf("after growth: %d lines numbered %d..%d, want 4 lines 4..7", len(lines), lines[0].Num, lines[len(lines)-1].Num)
	}
	r.commit(lines)
	want := stringsOf(readLines(t, l.path))
	if r.cur.Offset != int64(len(strings.Join(want, "\n"))+1) || r.cur.Line != 7 || r.cur.Hash != audit.Hash([]byte(want[6])) {
		t.Fatalf("cursor %+v is not past line 7", r.cur)
	}
	if n.String() != "" {
		t.Fatalf("unexpected notes: %s", n.String())
	}
}

func TestReaderBatchLimits(t *testing.T) {
	l := newTestLog(t, t.TempDir())
	l.add(20)
	var n notes
	r := testReader(l.path, Cursor{}, &n)
	r.maxLines = 7
	defer r.close()
	lines, _ := r.next()
	if len(lines) != 7 {
		t.Fatalf("batch of %d lines, want 7", len(lines))
	}
	r.commit(lines)
	r.maxBytes = 10 // smaller than any line: one line at a time, read whole
	lines, _ = r.next()
	if len(lines) != 1 || lines[0].Num != 8 || !strings.HasSuffix(string(lines[0].Text), "}") {
		t.Fatalf("got %d lines (first %d), want line 8 alone and whole", len(lines), lines[0].Num)
	}
	r.commit(lines)
	r.maxBytes = 1 << 20
	r.maxLines = 500
	if got := drain(t, r); len(got) != 12 {
		t.Fatalf("rest: %d lines, want 12", len(got))
	}
}

func TestReaderTornLineWaits(t *testing.T) {
	dir := t.TempDir()
	l := newTestLog(t, dir)
	l.add(2)
	whole := readLines(t, l.path)
	// A write cut short: half a line with no newline.
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"ts":"2026-12-01T10:00:00.000000000Z","server":"hel`)
	f.Close()
	var n notes
	r := testReader(l.path, Cursor{}, &n)
	defer r.close()
	if got := drain(t, r); !slices.Equal(got, stringsOf(whole)) {
		t.Fatalf("got %d lines, want the 2 whole ones and not the torn one", len(got))
	}
	if got := drain(t, r); len(got) != 0 {
		t.Fatal("the torn line was shipped before its newline")
	}
	// The next append ends the fragment with a newline (audit.Append) and
	// adds its own line: both are shipped now, the fragment as it is.
	l.add(1)
	got := drain(t, r)
	if len(got) != 2 || !strings.HasSuffix(got[0], `"server":"hel`) {
		t.Fatalf("after the next append got %q, want the fragment then the new line", got)
	}
}

func TestReaderTruncated(t *testing.T) {
	dir := t.TempDir()
	l := newTestLog(t, dir)
	l.add(5)
	var n notes
	r := testReader(l.path, Cursor{}, &n)
	defer r.close()
	drain(t, r)
	// Truncated in place (same file), then two new lines.
	if err := os.Truncate(l.path, 0); err != nil {
		t.Fatal(err)
	}
	l.add(2)
	got := drain(t, r)
	if !slices.Equal(got, stringsOf(readLines(t, l.path))) {
		t.Fatalf("after truncation got %d lines, want the 2 of the truncated file from its start", len(got))
	}
	if !strings.Contains(n.String(), "was truncated below this destination's cursor (line 5); shipping it again from the start") {
		t.Fatalf("notes: %q", n.String())
	}
}

func TestReaderRewrittenInPlace(t *testing.T) {
	dir := t.TempDir()
	l := newTestLog(t, dir)
	l.add(3)
	var n notes
	r := testReader(l.path, Cursor{}, &n)
	defer r.close()
	drain(t, r)
	// Another log copied over this one (same inode, longer, different
	// lines): the line at the cursor is not the cursor's line any more.
	other := newTestLog(t, t.TempDir())
	other.add(1)
	other.n = 100
	other.add(6)
	data, _ := os.ReadFile(other.path)
	if err := os.WriteFile(l.path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	got := drain(t, r)
	if !slices.Equal(got, stringsOf(readLines(t, other.path))) {
		t.Fatalf("after a rewrite got %d lines, want all 7 of the new content", len(got))
	}
	if !strings.Contains(n.String(), "was rewritten: line 3 is not the line this destination's cursor recorded") {
		t.Fatalf("notes: %q", n.String())
	}
}

func TestReaderRotated(t *testing.T) {
	dir := t.TempDir()
	l := newTestLog(t, dir)
	l.add(3)
	var n notes
	r := testReader(l.path, Cursor{}, &n)
	defer r.close()
	drain(t, r)
	// Rotation: the log is renamed away; a line still goes to the old
	// file (an appender that wrote before it noticed), and then the
	// appender moves to a new file at the path.
	old := l.path + ".1"
	if err := os.Rename(l.path, old); err != nil {
		t.Fatal(err)
	}
	f, _ := os.OpenFile(old, os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString("{\"late\":1}\n{\"torn\":")
	f.Close()
	l.add(2) // audit.Log notices the rename and creates a new file
	got := drain(t, r)
	want := append([]string{`{"late":1}`, `{"torn":`}, stringsOf(readLines(t, l.path))...)
	if !slices.Equal(got, want) {
		t.Fatalf("after rotation got\n%q\nwant the old file's rest (its torn end too), then the new file:\n%q", got, want)
	}
	if !strings.Contains(n.String(), "was rotated; the old file is shipped to its end (line 5), shipping the new one from its start") {
		t.Fatalf("notes: %q", n.String())
	}
}

func TestCursorRestart(t *testing.T) {
	dir := t.TempDir()
	l := newTestLog(t, dir)
	l.add(4)
	d := &fakeDest{name: "fake x"}
	var n notes
	cfg := Config{Log: l.path, StateDir: dir, Dests: []Destination{d}, Once: true, Logf: n.logf}
	res := Run(context.Background(), cfg)
	if res[0].Err != nil || res[0].Shipped != 4 {
		t.Fatalf("first run: %+v", res[0])
	}
	cpath := cursorPath(dir, "fake x")
	fi, err := os.Stat(cpath)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("cursor mode %v, want 0600", fi.Mode().Perm())
	}
	if ents, _ := os.ReadDir(filepath.Dir(cpath)); len(ents) != 1 {
		t.Fatalf("the ship directory holds %d files, want the one cursor (no temporary left)", len(ents))
	}
	c, err := loadCursor(cpath)
	if err != nil || c.Line != 4 || c.Dest != "fake x" || c.Log != l.path {
		t.Fatalf("cursor %+v, %v", c, err)
	}
	// A restart sends nothing again; new lines only.
	res = Run(context.Background(), cfg)
	if res[0].Shipped != 0 || len(d.got) != 4 {
		t.Fatalf("restart resent: %+v, %d lines in all", res[0], len(d.got))
	}
	l.add(2)
	res = Run(context.Background(), cfg)
	if res[0].Shipped != 2 || !slices.Equal(d.texts(), stringsOf(readLines(t, l.path))) {
		t.Fatalf("after growth: %+v", res[0])
	}
	if n.String() != "" {
		t.Fatalf("notes: %s", n.String())
	}
}

func TestCursorLogReplacedWhileStopped(t *testing.T) {
	dir := t.TempDir()
	l := newTestLog(t, dir)
	l.add(4)
	d := &fakeDest{name: "fake x"}
	var n notes
	cfg := Config{Log: l.path, StateDir: dir, Dests: []Destination{d}, Once: true, Logf: n.logf}
	Run(context.Background(), cfg)

	// A copy of the log put in its place (another inode, same lines): the
	// line at the cursor is the same, so nothing is sent again.
	data, _ := os.ReadFile(l.path)
	os.Remove(l.path)
	os.WriteFile(l.path, data, 0o600)
	res := Run(context.Background(), cfg)
	if res[0].Shipped != 0 || !strings.Contains(n.String(), "is another file than when this destination's cursor was saved, with the same line 4; resuming after it") {
		t.Fatalf("copy: %+v; notes %q", res[0], n.String())
	}

	// Another log in its place, longer: sent from the start.
	other := newTestLog(t, t.TempDir())
	other.n = 50
	other.add(6)
	data, _ = os.ReadFile(other.path)
	os.Remove(l.path)
	os.WriteFile(l.path, data, 0o600)
	res = Run(context.Background(), cfg)
	if res[0].Shipped != 6 || !strings.Contains(n.String(), "no longer has at line 4 the line this destination's cursor recorded") {
		t.Fatalf("replaced: %+v; notes %q", res[0], n.String())
	}

	// A shorter one: sent from the start too.
	os.WriteFile(l.path, []byte("{\"a\":1}\n"), 0o600)
	res = Run(context.Background(), cfg)
	if res[0].Shipped != 1 || !strings.Contains(n.String(), "is shorter than this destination's cursor (line 6)") {
		t.Fatalf("shorter: %+v; notes %q", res[0], n.String())
	}
}

func TestCursorDamagedFileResendsAll(t *testing.T) {
	dir := t.TempDir()
	l := newTestLog(t, dir)
	l.add(3)
	cpath := cursorPath(dir, "fake x")
	os.MkdirAll(filepath.Dir(cpath), 0o700)
	os.WriteFile(cpath, []byte("{not json"), 0o600)
	d := &fakeDest{name: "fake x"}
	var n notes
	res := Run(context.Background(), Config{Log: l.path, StateDir: dir, Dests: []Destination{d}, Once: true, Logf: n.logf})
	if res[0].Shipped != 3 || !strings.Contains(n.String(), "not a cursor file") {
		t.Fatalf("%+v; notes %q", res[0], n.String())
	}
}

func TestRunRetriesInOrderAndMovesOnlyOnSuccess(t *testing.T) {
	dir := t.TempDir()
	l := newTestLog(t, dir)
	l.add(10)
	d := &fakeDest{name: "fake x", failNext: 2}
	var n notes
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan []Result)
	cfg := Config{Log: l.path, StateDir: dir, Dests: []Destination{d}, Logf: n.logf,
		Poll: 10 * time.Millisecond, MinBackoff: 10 * time.Millisecond, MaxBackoff: 40 * time.Millisecond, MaxLines: 4}
	go func() { done <- Run(ctx, cfg) }()
	waitFor(t, "10 lines", 5*time.Second, func() bool { return len(d.texts()) == 10 })
	l.add(5)
	waitFor(t, "15 lines", 5*time.Second, func() bool { return len(d.texts()) == 15 })
	cancel()
	res := <-done
	if res[0].Err != nil {
		t.Fatal(res[0].Err)
	}
	if !slices.Equal(d.texts(), stringsOf(readLines(t, l.path))) {
		t.Fatal("the destination did not get exactly the log, in order")
	}
	if !strings.Contains(n.String(), "fake x: sending lines 1-4: collector down; trying again in") ||
		!strings.Contains(n.String(), "fake x: delivered again, from line 1") {
		t.Fatalf("notes: %q", n.String())
	}
	c, _ := loadCursor(cursorPath(dir, "fake x"))
	if c.Line != 15 {
		t.Fatalf("cursor at line %d, want 15", c.Line)
	}
}

func TestRunOnceUnreachable(t *testing.T) {
	dir := t.TempDir()
	l := newTestLog(t, dir)
	l.add(3)
	bad := &fakeDest{name: "fake down", failNext: 1000}
	good := &fakeDest{name: "fake up"}
	res := Run(context.Background(), Config{Log: l.path, StateDir: dir, Dests: []Destination{bad, good}, Once: true,
		MinBackoff: time.Millisecond, OnceAttempts: 3})
	if res[0].Err == nil || res[0].Shipped != 0 || bad.calls != 3 {
		t.Fatalf("down: %+v after %d calls, want an error after 3", res[0], bad.calls)
	}
	if res[1].Err != nil || res[1].Shipped != 3 {
		t.Fatalf("up: %+v", res[1])
	}
	un := Unreachable(res)
	if len(un) != 1 || !strings.HasPrefix(un[0], "fake down: sending lines 1-3: collector down") {
		t.Fatalf("Unreachable = %q", un)
	}
	if _, err := os.Stat(cursorPath(dir, "fake down")); !os.IsNotExist(err) {
		t.Fatal("a cursor was written for a destination that accepted nothing")
	}
}

func TestCursorPathPerDestination(t *testing.T) {
	a := cursorPath("/s", "otlp https://a:4318")
	b := cursorPath("/s", "otlp https://b:4318")
	c := cursorPath("/s", "syslog tls://a:6514")
	if a == b || a == c || !strings.HasPrefix(filepath.Base(a), "otlp-") || !strings.HasPrefix(filepath.Base(c), "syslog-") || filepath.Dir(a) != "/s/ship" {
		t.Fatalf("cursor paths %s %s %s", a, b, c)
	}
}
