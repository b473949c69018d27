package audit

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// AppendAll writes its lines in order, each chained to the one before,
// and the head file counts them all; another appender to the same file,
// before and after, chains on as usual.
func TestAppendAll(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	a, b := openLog(t, path), openLog(t, path)
	if err := b.Append(entry(0)); err != nil {
		t.Fatal(err)
	}
	var es []Entry
	for i := 1; i <= 5; i++ {
		es = append(es, entry(i))
	}
	if err := a.AppendAll(es); err != nil {
		t.Fatal(err)
	}
	if err := b.Append(entry(6)); err != nil {
		t.Fatal(err)
	}
	if err := a.AppendAll(nil); err != nil {
		t.Fatal(err)
	}
	got := lines(t, path)
	if len(got) != 7 {
		t.Fatalf("%d lines, want 7", len(got))
	}
	for i, line := range got {
		if want := fmt.Sprintf(`"id":%d,`, i); !strings.Contains(line, want) {
			t.Fatalf("line %d is %s, want the entry with %s", i+1, line, want)
		}
	}
	rep, err := VerifyFileReport(path)
	if err != nil || !rep.OK() || rep.Lines != 7 {
		t.Fatalf("the log does not verify: %v %+v", err, rep)
	}
	if rep.Anchor == nil || rep.Anchor.Lines != 7 || rep.Anchor.Last != rep.Head {
		t.Fatalf("the head file records %+v, want 7 lines ending %s", rep.Anchor, rep.Head)
	}
}

// A batch holding a line that can't be written writes none of them.
func TestAppendAllRefusesWhole(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l := openLog(t, path)
	bad := entry(2)
	bad.Verdict = "maybe"
	if err := l.AppendAll([]Entry{entry(1), bad}); err == nil {
		t.Fatal("a batch with a bad verdict was written")
	}
	if got := lines(t, path); len(got) != 0 {
		t.Fatalf("lines written: %q", got)
	}
}

// BenchmarkAppendAll is BenchmarkAppend's line written in batches of 16,
// as the proxy writes the calls it decided together; per line.
func BenchmarkAppendAll(b *testing.B) {
	l, err := Open(filepath.Join(b.TempDir(), "audit.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	es := make([]Entry, 16)
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		if n%len(es) == 0 {
			for i := range es {
				es[i] = entry(1)
			}
			if err := l.AppendAll(es); err != nil {
				b.Fatal(err)
			}
		}
		n++
	}
}
