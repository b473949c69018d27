package audit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// forgedLog writes, with the package's own Append, a log of n lines into a
// directory of its own: a chain that verifies on its own, as a server that
// could write the state directory would make one. first is the entry of its
// first line; the others are entry(i) with the recipient the attacker's.
func forgedLog(t *testing.T, n int, first Entry) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l := openLog(t, path)
	for i := 0; i < n; i++ {
		e := first
		if i > 0 {
			e = entry(i)
			e.Verdict, e.Reason, e.Rule = "allow", "vouched: typed by the user", "sink"
		}
		if err := l.Append(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if rep, err := VerifyFileReport(path); err != nil || !rep.OK() {
		t.Fatalf("the forged log does not verify on its own: %v %v", rep, err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func problemLines(rep *Report) []int {
	var out []int
	for _, p := range rep.Problems {
		out = append(out, p.Line)
	}
	return out
}

// A log replaced whole by another chain that verifies, cut short, or
// rewritten from its first line fails verification against its head
// file, and still does after the proxy has appended to it since.
func TestHeadCatchesAReplacedLog(t *testing.T) {
	for _, c := range []struct {
		name string
		// replace returns what the log (5 lines, ls) is replaced with.
		replace func(t *testing.T, ls []string) []byte
		// problems are the lines verify must flag (0: the whole log)
		// before any append, and after one.
		problems, after []int
		msg             string // in the first problem
	}{
		{"replaced whole by a longer chain", func(t *testing.T, ls []string) []byte {
			return forgedLog(t, 7, entry(100))
		}, []int{1, 5}, []int{0}, "not the first line bouncer wrote"},
		{"replaced whole by a chain as long", func(t *testing.T, ls []string) []byte {
			return forgedLog(t, 5, entry(100))
		}, []int{1, 5}, []int{0}, "not the first line bouncer wrote"},
		{"replaced whole by a shorter chain", func(t *testing.T, ls []string) []byte {
			return forgedLog(t, 2, entry(100))
		}, []int{1, 3}, []int{0}, "not the first line bouncer wrote"},
		{"first line swapped, the rest chained again", func(t *testing.T, ls []string) []byte {
			e := entry(0)
			e.Verdict = "allow"
			return forgedLog(t, 5, e)
		}, []int{1, 5}, []int{0}, "not the first line bouncer wrote"},
		{"last two lines cut", func(t *testing.T, ls []string) []byte {
			return []byte(strings.Join(ls[:3], ""))
		}, []int{4}, []int{0}, "missing: the head file records 5 lines, and the log ends at line 3"},
		{"emptied and refilled by another chain", func(t *testing.T, ls []string) []byte {
			return forgedLog(t, 1, entry(100))
		}, []int{1, 2}, []int{0}, "not the first line bouncer wrote"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path, ls := writeLog(t, 5)
			if err := os.WriteFile(path, c.replace(t, ls), 0o600); err != nil {
				t.Fatal(err)
			}
			rep, err := VerifyFileReport(path)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(problemLines(rep)) != fmt.Sprint(c.problems) || !strings.Contains(rep.Problems[0].Msg, c.msg) {
				t.Fatalf("problems %v, want them at lines %v, the first saying %q", rep.Problems, c.problems, c.msg)
			}
			// The proxy appends on: the log now ends with its line, but
			// the head file keeps what it found.
			l := openLog(t, path)
			if err := l.Append(entry(9)); err != nil {
				t.Fatal(err)
			}
			rep, err = VerifyFileReport(path)
			if err != nil {
				t.Fatal(err)
			}
			if got := problemLines(rep); len(got) == 0 || got[0] != 0 || !strings.Contains(rep.Problems[0].Msg, "bouncer found this log was not what it had written") {
				t.Fatalf("after an append: problems %v, want the divergence first", rep.Problems)
			}
			if fmt.Sprint(problemLines(rep)) != fmt.Sprint(c.after) {
				t.Errorf("after an append: problems at %v, want %v", problemLines(rep), c.after)
			}
			// It stays after more lines, from this Log or another.
			if err := openLog(t, path).Append(entry(10)); err != nil {
				t.Fatal(err)
			}
			if err := l.Append(entry(11)); err != nil {
				t.Fatal(err)
			}
			if rep, _ := VerifyFileReport(path); rep.OK() {
				t.Error("the divergence was lost after more appends")
			}
			// Removing the head file accepts the log as it is: the next
			// line starts a new head, noted as adopted.
			if err := os.Remove(HeadPath(path)); err != nil {
				t.Fatal(err)
			}
			if rep, _ := VerifyFileReport(path); !rep.OK() || !rep.Unanchored {
				t.Errorf("without a head file: problems %v, unanchored %v", rep.Problems, rep.Unanchored)
			}
			if err := l.Append(entry(12)); err != nil {
				t.Fatal(err)
			}
			rep, _ = VerifyFileReport(path)
			if !rep.OK() || rep.Unanchored || len(rep.Notes) != 1 || !strings.Contains(rep.Notes[0], "the head file was started on") {
				t.Errorf("after the head file was removed: problems %v, notes %q", rep.Problems, rep.Notes)
			}
		})
	}
}

// A writer killed between its line and its head leaves a log longer than
// the head by lines that chain on: a note, not a forgery; the next Append
// records them. Lines past the head that do not chain are a problem.
func TestHeadCrashBetweenLineAndHead(t *testing.T) {
	path, ls := writeLog(t, 3)
	// What Append writes before it records the head.
	e := entry(3)
	e.Prev = Hash([]byte(strings.TrimSuffix(ls[2], "\n")))
	line, err := Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(append(line, '\n'))
	f.Close()
	rep, err := VerifyFileReport(path)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() || len(rep.Notes) != 1 || !strings.Contains(rep.Notes[0], "lines 4-4 are past the head file's line 3") {
		t.Fatalf("problems %v, notes %q; want one note about line 4", rep.Problems, rep.Notes)
	}
	l := openLog(t, path)
	if err := l.Append(entry(4)); err != nil {
		t.Fatal(err)
	}
	rep, _ = VerifyFileReport(path)
	if !rep.OK() || len(rep.Notes) != 0 || rep.Anchor.Lines != 5 || rep.Lines != 5 {
		t.Fatalf("after the next append: problems %v, notes %q, head %+v", rep.Problems, rep.Notes, rep.Anchor)
	}

	// A line past the head that does not chain on is the chain's problem.
	f, _ = os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString(`{"ts":"2026-12-02T14:00:00Z","tool":"x","verdict":"allow","prev":"` + Genesis + "\"}\n")
	f.Close()
	rep, _ = VerifyFileReport(path)
	if fmt.Sprint(problemLines(rep)) != "[6]" {
		t.Errorf("problems %v, want line 6", rep.Problems)
	}
}

// Renaming the log away (rotation), or removing it, starts a new log
// whose head remembers the old one and whose first line chains to the old
// one's last; verify passes, says so, and checks the two together.
func TestHeadFollowsRotation(t *testing.T) {
	for _, how := range []string{"rename", "remove"} {
		t.Run(how, func(t *testing.T) {
			path, ls := writeLog(t, 3)
			oldHead := Hash([]byte(strings.TrimSuffix(ls[2], "\n")))
			l := openLog(t, path)
			if how == "rename" {
				if err := os.Rename(path, path+".1"); err != nil {
					t.Fatal(err)
				}
			} else {
				// Kept open elsewhere, so that its inode is not reused
				// for the new file (a reused one reads as emptied).
				f, err := os.Open(path)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				if err := os.Remove(path); err != nil {
					t.Fatal(err)
				}
			}
			if err := l.Append(entry(7)); err != nil {
				t.Fatal(err)
			}
			rep, err := VerifyFileReport(path)
			if err != nil {
				t.Fatal(err)
			}
			if !rep.OK() || rep.Lines != 1 || len(rep.Notes) != 1 ||
				!strings.Contains(rep.Notes[0], "the one before it had 3 lines and ended with "+oldHead+", and this log's first line chains to it") {
				t.Fatalf("problems %v, notes %q", rep.Problems, rep.Notes)
			}
			if rep.Anchor.Lines != 1 || rep.Anchor.First != rep.Head || rep.Anchor.Previous.Last != oldHead {
				t.Errorf("head %+v", rep.Anchor)
			}
			if got := lines(t, path); !strings.Contains(got[0], `"prev":"`+oldHead+`"`) {
				t.Errorf("the new log's first line does not chain to the old one's last: %s", got[0])
			}
			if how != "rename" {
				return
			}
			// The old log, and the new one after it: the chain across both.
			old, err := os.Open(path + ".1")
			if err != nil {
				t.Fatal(err)
			}
			defer old.Close()
			orep, err := Verify(old)
			if err != nil || !orep.OK() || orep.Head != oldHead {
				t.Fatalf("old log: %v %v", orep, err)
			}
			if rep, err := VerifyFileAfter(path, orep.Head); err != nil || !rep.OK() {
				t.Fatalf("new log after the old: %v %v", rep, err)
			}
			// After another log's head, the first line is a break, and the
			// head file disagrees.
			rep, err = VerifyFileAfter(path, Genesis)
			if err != nil || fmt.Sprint(problemLines(rep)) != "[0 1]" || !strings.Contains(rep.Problems[1].Msg, "prev is not the genesis value") {
				t.Fatalf("after the wrong log: %v %v", rep.Problems, err)
			}
		})
	}
}

// A log emptied in place (truncated to zero, or rewritten as a new chain
// from nothing) is no rotation: nothing of the old lines is left to check.
// The next append records a divergence that verify reports, and a log
// started again at the genesis value where the head records a predecessor
// is a break at line 1, whoever wrote it.
func TestHeadRefusesAnEmptiedLog(t *testing.T) {
	t.Run("truncated and appended", func(t *testing.T) {
		path, _ := writeLog(t, 3)
		l := openLog(t, path)
		if err := os.Truncate(path, 0); err != nil {
			t.Fatal(err)
		}
		if err := l.Append(entry(7)); err != nil {
			t.Fatal(err)
		}
		rep, err := VerifyFileReport(path)
		if err != nil {
			t.Fatal(err)
		}
		if rep.OK() || !rep.Problems[0].Anchor || !strings.Contains(rep.Problems[0].Msg, "the log was emptied in place") {
			t.Fatalf("problems %v, notes %q", rep.Problems, rep.Notes)
		}
		// It stays so after more appends, and after another rotation.
		if err := l.Append(entry(8)); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(path, path+".1"); err != nil {
			t.Fatal(err)
		}
		if err := l.Append(entry(9)); err != nil {
			t.Fatal(err)
		}
		if rep, _ := VerifyFileReport(path); rep.OK() {
			t.Fatal("the emptied log's record was lost")
		}
	})
	t.Run("started again at genesis", func(t *testing.T) {
		// A log rotated by bouncer, then replaced by one whose first line
		// starts over: the head's count and first line match it (the
		// forger wrote the head too), and line 1 still breaks.
		path, _ := writeLog(t, 3)
		l := openLog(t, path)
		os.Rename(path, path+".1")
		if err := l.Append(entry(7)); err != nil {
			t.Fatal(err)
		}
		l.Close()
		h, err := ReadHead(HeadPath(path))
		if err != nil {
			t.Fatal(err)
		}
		forged := forgedLog(t, 1, entry(7))
		if err := os.WriteFile(path, forged, 0o600); err != nil {
			t.Fatal(err)
		}
		h.First = Hash(bytes.TrimSuffix(forged, []byte("\n")))
		h.Last, h.Size = h.First, int64(len(forged))
		marks, _ := encodeMarks(h)
		rec, err := appendHead(nil, h, marks)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(HeadPath(path), rec, 0o600); err != nil {
			t.Fatal(err)
		}
		rep, err := VerifyFileReport(path)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(problemLines(rep)) != "[1]" || !strings.Contains(rep.Problems[0].Msg, "the last hash of the log before this one") {
			t.Fatalf("problems %v", rep.Problems)
		}
	})
}

// A rotation recorded by an earlier bouncer (a previous mark without
// "chained") started the new log at the genesis value; that log still
// verifies.
func TestHeadOldRotationStillVerifies(t *testing.T) {
	path, _ := writeLog(t, 2)
	h, err := ReadHead(HeadPath(path))
	if err != nil {
		t.Fatal(err)
	}
	h.Ino = 0
	h.Previous = &Mark{At: "2026-12-04T10:00:00Z", Lines: 9, Size: 3000, First: Hash([]byte("a")), Last: Hash([]byte("b"))}
	marks, _ := encodeMarks(h)
	rec, _ := appendHead(nil, h, marks)
	if err := os.WriteFile(HeadPath(path), rec, 0o600); err != nil {
		t.Fatal(err)
	}
	rep, err := VerifyFileReport(path)
	if err != nil || !rep.OK() || len(rep.Notes) != 1 || !strings.Contains(rep.Notes[0], "--no-head --expect-head") {
		t.Fatalf("%v %v %q", err, rep.Problems, rep.Notes)
	}
	// Appending goes on from it, at the genesis chain it has.
	l := openLog(t, path)
	if err := l.Append(entry(5)); err != nil {
		t.Fatal(err)
	}
	if rep, err := VerifyFileReport(path); err != nil || !rep.OK() {
		t.Fatalf("%v %v", err, rep.Problems)
	}
}

// A head file removed from under a log that continues a rotated one is
// started again over the log as it is, taking its first line's prev as
// the last hash of a log before it.
func TestHeadAdoptsAContinuedLog(t *testing.T) {
	path, _ := writeLog(t, 2)
	l := openLog(t, path)
	os.Rename(path, path+".1")
	if err := l.Append(entry(7)); err != nil {
		t.Fatal(err)
	}
	l.Close()
	os.Remove(HeadPath(path))
	l = openLog(t, path)
	if err := l.Append(entry(8)); err != nil {
		t.Fatal(err)
	}
	rep, err := VerifyFileReport(path)
	if err != nil || !rep.OK() || rep.Lines != 2 || rep.Anchor.Adopted == nil || rep.Anchor.Previous == nil {
		t.Fatalf("%v %v %+v", err, rep.Problems, rep.Anchor)
	}
}

// A head file that does not parse is a problem for verify; the next
// Append starts a new head and keeps the finding.
func TestHeadDamaged(t *testing.T) {
	for _, c := range []struct{ name, data string }{
		{"garbage", "not json"},
		{"torn", `{"v":1,"lines":3,"size":900,"first":"` + Genesis + `","last":"` + Genesis + `"}   {"v":1,`},
		{"lines without size", `{"v":1,"lines":3,"size":0,"first":"` + Genesis + `","last":"` + Genesis + `"}`},
		{"bad hash", `{"v":1,"lines":1,"size":10,"first":"sha256:00","last":"sha256:00"}`},
		{"other version", `{"v":2,"lines":0,"size":0,"first":"` + Genesis + `","last":"` + Genesis + `"}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			path, _ := writeLog(t, 3)
			if err := os.WriteFile(HeadPath(path), []byte(c.data), 0o600); err != nil {
				t.Fatal(err)
			}
			rep, err := VerifyFileReport(path)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(problemLines(rep)) != "[0]" || !strings.Contains(rep.Problems[0].Msg, HeadPath(path)) {
				t.Fatalf("problems %v", rep.Problems)
			}
			l := openLog(t, path)
			if err := l.Append(entry(3)); err != nil {
				t.Fatal(err)
			}
			rep, _ = VerifyFileReport(path)
			if fmt.Sprint(problemLines(rep)) != "[0]" || !strings.Contains(rep.Problems[0].Msg, "the head file could not be read") {
				t.Fatalf("after an append: problems %v", rep.Problems)
			}
			if rep.Anchor.Lines != 4 {
				t.Errorf("head %+v, want 4 lines", rep.Anchor)
			}
		})
	}
}

// A head file removed or replaced while a Log has it open: the next
// Append writes the file that is now at the path, not the one it had open.
func TestHeadFileReplacedUnderAnOpenLog(t *testing.T) {
	path, _ := writeLog(t, 2)
	l := openLog(t, path)
	if err := l.Append(entry(2)); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(HeadPath(path)); err != nil {
		t.Fatal(err)
	}
	if err := l.Append(entry(3)); err != nil { // the fast path: nobody else wrote
		t.Fatal(err)
	}
	h, err := ReadHead(HeadPath(path))
	if err != nil || h == nil || h.Lines != 4 || h.Adopted == nil || h.Adopted.Lines != 3 {
		t.Fatalf("head %+v, %v; want 4 lines, adopted at 3", h, err)
	}
}

// The head file is created 0600, and one other users can write is refused
// as the log is.
func TestHeadFileMode(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l := openLog(t, path)
	if err := l.Append(entry(0)); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(HeadPath(path))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 || fi.Size() != headSize {
		t.Errorf("head file mode %v, size %d", fi.Mode(), fi.Size())
	}
	os.Chmod(HeadPath(path), 0o622)
	if _, err := Open(path); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("Open with a head file others can write: %v", err)
	}
}

// Every head record is exactly headSize bytes and reads back as written,
// marks and all.
func TestHeadRecordRoundTrip(t *testing.T) {
	h1 := Hash([]byte("a"))
	for _, h := range []*Head{
		{First: Genesis, Last: Genesis},
		{Lines: 3, Size: 900, First: h1, Last: Hash([]byte("b"))},
		{Lines: 3, Size: 900, First: h1, Last: h1,
			Adopted:  &Mark{At: "2026-12-04T10:00:00Z", Lines: 1, Size: 300, First: h1, Last: h1},
			Previous: &Mark{At: "2026-12-04T10:00:00Z", Lines: 1 << 40, Size: 1 << 50, First: h1, Last: h1},
			Diverged: &Mark{At: "2026-12-04T10:00:00Z", Lines: 1 << 40, Size: 1 << 50, First: h1, Last: h1,
				Found: "the head file could not be read: " + strings.Repeat("x", 250)}},
	} {
		marks, err := encodeMarks(h)
		if err != nil {
			t.Fatal(err)
		}
		rec, err := appendHead(nil, h, marks)
		if err != nil {
			t.Fatal(err)
		}
		if len(rec) != headSize {
			t.Errorf("record of %d bytes", len(rec))
		}
		got, err := parseHead(rec)
		if err != nil {
			t.Fatal(err)
		}
		a, _ := json.Marshal(h)
		b, _ := json.Marshal(got)
		if string(a) != string(b) {
			t.Errorf("read back %s, wrote %s", b, a)
		}
	}
}

// FuzzParseHead: a head file is input anyone who can write the state
// directory controls. Whatever it holds, parseHead returns a record or an
// error, never panics, and a record it accepts encodes back to one that
// reads the same.
func FuzzParseHead(f *testing.F) {
	rec, _ := appendHead(nil, &Head{Lines: 2, Size: 600, First: Hash([]byte("a")), Last: Hash([]byte("b"))}, nil)
	f.Add(rec)
	rec, _ = appendHead(nil, &Head{Lines: 2, Size: 600, Ino: 1 << 62, First: Hash([]byte("a")), Last: Hash([]byte("b"))}, []byte(`,"previous":{"at":"x","lines":1,"size":2,"last":"`+Genesis+`","chained":true}`))
	f.Add(rec)
	f.Add([]byte(`{"v":1,"lines":0,"size":0,"first":"` + Genesis + `","last":"` + Genesis + `","diverged":{"at":"x","lines":1,"size":2,"found":"y"}}`))
	f.Add([]byte(`{"v":1,"lines":-1}`))
	f.Add([]byte("{}{}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if plain, ok := parsePlainHead(bytes.TrimRight(data, " \n")); ok {
			// The same record through encoding/json and every check.
			var w struct {
				V *int `json:"v"`
				Head
			}
			if err := json.Unmarshal(bytes.TrimRight(data, " \n"), &w); err != nil || w.V == nil || *w.V != 1 || w.Head != *plain {
				t.Fatalf("%q: plain %+v, json %+v %v", data, plain, w.Head, err)
			}
		}
		h, err := parseHead(data)
		if err != nil || h == nil {
			return
		}
		marks, err := encodeMarks(h)
		if err != nil {
			t.Fatal(err)
		}
		rec, err := appendHead(nil, h, marks)
		if err != nil {
			return // a record longer than a head record can be: refused on write too
		}
		again, err := parseHead(rec)
		if err != nil {
			t.Fatalf("%q re-encoded as %q: %v", data, rec, err)
		}
		a, _ := json.Marshal(h)
		b, _ := json.Marshal(again)
		if string(a) != string(b) {
			t.Fatalf("%s read back as %s", a, b)
		}
	})
}

// A head file filled with marks as long as a record allows still leaves
// room for the marks an append adds: the proxy goes on recording heads.
func TestHeadLongMarks(t *testing.T) {
	path, _ := writeLog(t, 2)
	long := &Mark{At: "2026-12-04T10:00:00Z", Lines: 1, Size: 300, First: Genesis, Last: Genesis}
	for long.Found = "x"; checkMark(long) == nil; long.Found += "<" {
	}
	long.Found = long.Found[:len(long.Found)-1]
	h, err := ReadHead(HeadPath(path))
	if err != nil {
		t.Fatal(err)
	}
	h.Diverged, h.Previous, h.Adopted = long, long, long
	marks, _ := encodeMarks(h)
	rec, err := appendHead(nil, h, marks)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(HeadPath(path), rec, 0o600)
	os.Rename(path, path+".1") // a rotation: a new Previous beside the old Diverged
	l := openLog(t, path)
	for i := 0; i < 2; i++ {
		if err := l.Append(entry(i)); err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
	}
	if h, err := ReadHead(HeadPath(path)); err != nil || h.Lines != 2 || h.Diverged == nil || h.Previous.Lines != 2 {
		t.Fatalf("head %+v, %v", h, err)
	}
	// One longer than that is no record an appender made.
	long.Found += "<"
	if _, err := parseHead([]byte(`{"v":1,"lines":0,"size":0,"first":"` + Genesis + `","last":"` + Genesis + `","diverged":` + string(must(json.Marshal(long))) + `}`)); err == nil {
		t.Error("an overlong mark was read")
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}
