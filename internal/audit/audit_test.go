package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

func entry(i int) Entry {
	return Entry{
		TS:      time.Date(2026, 12, 2, 14, 0, 0, i, time.UTC),
		Server:  "mail",
		Tool:    "send_email",
		Args:    json.RawMessage(fmt.Sprintf(`{"to":"bob%d@x.com","body":"<b>hi</b> & bye"}`, i)),
		Verdict: "deny",
		Reason:  "destination seen in output",
		Rule:    "sink",
		Session: "s1",
		ID:      json.RawMessage(strconv.Itoa(i)),
	}
}

func openLog(t *testing.T, path string) *Log {
	t.Helper()
	l, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func lines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.SplitAfter(string(b), "\n")[:strings.Count(string(b), "\n")]
}

func TestAppendLineShape(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	path := filepath.Join(dir, "audit.jsonl")
	l := openLog(t, path)
	e := entry(0) // nanos 0: the fraction must still be written
	e.TS = time.Date(2026, 12, 2, 15, 0, 0, 0, time.FixedZone("CET", 3600))
	e.Code = "K7Q-F2M"
	if err := l.Append(e); err != nil {
		t.Fatal(err)
	}
	got := lines(t, path)
	if len(got) != 1 {
		t.Fatalf("%d lines, want 1", len(got))
	}
	want := `{"ts":"2026-12-02T14:00:00.000000000Z","server":"mail","tool":"send_email",` +
		`"args":{"to":"bob0@x.com","body":"<b>hi</b> & bye"},"verdict":"deny",` +
		`"reason":"destination seen in output","rule":"sink","session":"s1","id":0,` +
		`"code":"K7Q-F2M","prev":"` + Genesis + `"}` + "\n"
	if got[0] != want {
		t.Errorf("line\n got %s\nwant %s", got[0], want)
	}
	for p, mode := range map[string]os.FileMode{dir: 0o700, path: 0o600} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != mode {
			t.Errorf("%s: mode %o, want %o", p, fi.Mode().Perm(), mode)
		}
	}
}

func TestAppendBadArgsAndVerdict(t *testing.T) {
	l := openLog(t, filepath.Join(t.TempDir(), "a.jsonl"))
	e := entry(1)
	e.Args = json.RawMessage("{\"a\":\"x\ny\"}") // raw newline: not JSON, and would split the line
	if err := l.Append(e); err != nil {
		t.Fatalf("Append refused invalid args instead of recording them as text: %v", err)
	}
	e.Args = json.RawMessage(`{}`)
	e.Verdict = "maybe"
	if err := l.Append(e); err == nil {
		t.Fatal("Append accepted a verdict other than allow, deny or ask")
	}
	e.Verdict = "allow"
	e.Args = nil
	if err := l.Append(e); err != nil {
		t.Fatal(err)
	}
	got := lines(t, l.path)
	if len(got) != 2 || !strings.Contains(got[0], `"args":"{\"a\":\"x\ny\"}","args_form":"text",`) || !strings.Contains(got[1], `"args":null`) {
		t.Errorf("lines %q", got)
	}
	if n, err := VerifyFile(l.path); err != nil || n != 2 {
		t.Errorf("VerifyFile = %d, %v", n, err)
	}
}

func TestOpenRefusesUnsafeFile(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		mode os.FileMode
		ok   bool
	}{
		{"private", 0o600, true},
		{"group-readable", 0o640, false},
		{"world-writable", 0o602, false},
		{"python-default", 0o644, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, tc.name)
			if err := os.WriteFile(p, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(p, tc.mode); err != nil {
				t.Fatal(err)
			}
			l, err := Open(p)
			if tc.ok != (err == nil) {
				t.Fatalf("Open: %v, want ok=%v", err, tc.ok)
			}
			if err != nil && !strings.Contains(err.Error(), "chmod 600 "+p) {
				t.Errorf("error %q does not say how to fix it", err)
			}
			if l != nil {
				l.Close()
			}
			fi, _ := os.Stat(p)
			if fi.Mode().Perm() != tc.mode {
				t.Errorf("Open changed the mode to %o", fi.Mode().Perm())
			}
		})
	}
	if _, err := Open(dir); err == nil {
		t.Error("Open accepted a directory")
	}
}

func writeLog(t *testing.T, n int) (string, []string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l := openLog(t, path)
	for i := 0; i < n; i++ {
		if err := l.Append(entry(i)); err != nil {
			t.Fatal(err)
		}
	}
	return path, lines(t, path)
}

func TestChainIntact(t *testing.T) {
	path, ls := writeLog(t, 5)
	n, err := VerifyFile(path)
	if err != nil || n != 5 {
		t.Fatalf("VerifyFile = %d, %v; want 5, nil", n, err)
	}
	rep, err := VerifyFileReport(path)
	if err != nil {
		t.Fatal(err)
	}
	last := strings.TrimSuffix(ls[4], "\n")
	if rep.Head != Hash([]byte(last)) {
		t.Errorf("head %s is not the hash of the last line", rep.Head)
	}
	if rep.HasHead(Hash([]byte(strings.TrimSuffix(ls[2], "\n")))) != 3 {
		t.Error("HasHead did not find line 3")
	}
	if rep.HasHead(Genesis) != 0 {
		t.Error("HasHead found the genesis value")
	}
	// Each line's prev is the hash of the line before.
	for i := 1; i < len(ls); i++ {
		e, err := Parse([]byte(strings.TrimSuffix(ls[i], "\n")))
		if err != nil {
			t.Fatal(err)
		}
		if e.Prev != Hash([]byte(strings.TrimSuffix(ls[i-1], "\n"))) {
			t.Errorf("line %d: prev %s", i+1, e.Prev)
		}
	}
	empty := filepath.Join(t.TempDir(), "empty")
	os.WriteFile(empty, nil, 0o600)
	if n, err := VerifyFile(empty); err != nil || n != 0 {
		t.Errorf("empty log: %d, %v", n, err)
	}
}

func TestVerifyFindsTampering(t *testing.T) {
	cases := []struct {
		name   string
		tamper func(ls []string) []string
		line   int    // first broken line
		msg    string // in the first problem
	}{
		{"edit a verdict", func(ls []string) []string {
			ls[1] = strings.Replace(ls[1], `"verdict":"deny"`, `"verdict":"allow"`, 1)
			return ls
		}, 3, "line 2 was edited"},
		{"edit one byte of args", func(ls []string) []string {
			ls[2] = strings.Replace(ls[2], "bob2", "bob9", 1)
			return ls
		}, 4, "line 3 was edited"},
		{"remove a middle line", func(ls []string) []string {
			return append(ls[:2:2], ls[3:]...)
		}, 3, "not the hash of line 2"},
		{"remove the first line", func(ls []string) []string { return ls[1:] }, 1, "genesis"},
		{"swap two lines", func(ls []string) []string {
			ls[1], ls[2] = ls[2], ls[1]
			return ls
		}, 2, ""},
		{"garbage appended", func(ls []string) []string {
			return append(ls, "rm -rf /\n")
		}, 6, "not JSON"},
		{"garbage in the middle", func(ls []string) []string {
			return append(ls[:2:2], append([]string{"{\"ts\":\n"}, ls[2:]...)...)
		}, 3, "not JSON"},
		{"blank line inserted", func(ls []string) []string {
			return append(ls[:3:3], append([]string{"\n"}, ls[3:]...)...)
		}, 4, "not JSON"},
		{"line without prev", func(ls []string) []string {
			return append(ls, `{"ts":"2026-12-02T14:00:00Z","tool":"x","verdict":"allow"}`+"\n")
		}, 6, "no prev"},
		{"partial last line", func(ls []string) []string {
			ls[4] = ls[4][:len(ls[4])/2]
			return ls
		}, 5, "not JSON"},
		{"a line's own prev rewritten", func(ls []string) []string {
			ls[3] = strings.Replace(ls[3], `"prev":"sha256:`, `"prev":"sha256:f`, 1)
			return ls
		}, 4, "not the hash of line 3"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path, ls := writeLog(t, 5)
			if err := os.WriteFile(path, []byte(strings.Join(tc.tamper(ls), "")), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := VerifyFile(path)
			var le *LineError
			if !errors.As(err, &le) {
				t.Fatalf("VerifyFile: %v, want a line error", err)
			}
			if le.Line != tc.line {
				t.Errorf("broken at line %d, want %d (%v)", le.Line, tc.line, err)
			}
			if !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error %q does not say %q", err, tc.msg)
			}
		})
	}
}

// One edited line is one problem: verification picks the chain up again.
func TestVerifyResyncs(t *testing.T) {
	path, ls := writeLog(t, 8)
	ls[1] = strings.Replace(ls[1], "deny", "allow", 1)
	ls[5] = strings.Replace(ls[5], "deny", "allow", 1)
	os.WriteFile(path, []byte(strings.Join(ls, "")), 0o600)
	rep, err := VerifyFileReport(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Problems) != 2 || rep.Problems[0].Line != 3 || rep.Problems[1].Line != 7 {
		t.Errorf("problems %v, want lines 3 and 7", rep.Problems)
	}
}

// A crash that cut a line short must not stop the log: the next Append ends
// the partial line, chains to it, and verify reports just that one line.
func TestAppendAfterPartialLine(t *testing.T) {
	path, ls := writeLog(t, 2)
	// A writer that crashed in the middle of its line: part of it is in
	// the log, and its head was never recorded.
	partial := `{"ts":"2026-12-02T14`
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(partial)
	f.Close()
	l := openLog(t, path)
	if err := l.Append(entry(7)); err != nil {
		t.Fatal(err)
	}
	if err := l.Append(entry(8)); err != nil {
		t.Fatal(err)
	}
	got := lines(t, path)
	if len(got) != 5 || got[0] != ls[0] || got[2] != partial+"\n" {
		t.Fatalf("lines %q", got)
	}
	rep, err := VerifyFileReport(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Problems) != 1 || rep.Problems[0].Line != 3 {
		t.Errorf("problems %v, want one at line 3", rep.Problems)
	}
	e, _ := Parse([]byte(strings.TrimSuffix(got[3], "\n")))
	if e.Prev != Hash([]byte(partial)) {
		t.Error("the line after the partial one is not chained to its bytes")
	}
}

func TestLargeLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l := openLog(t, path)
	big := entry(1)
	body := strings.Repeat("lorem ipsum\\n", 300_000) // ~3.6 MB, several read blocks
	big.Args = json.RawMessage(`{"to":"a@b.c","body":"` + body + `"}`)
	for _, e := range []Entry{entry(0), big, entry(2), big, entry(4)} {
		if err := l.Append(e); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := VerifyFile(path); err != nil || n != 5 {
		t.Fatalf("VerifyFile = %d, %v", n, err)
	}
	es, err := ReadFile(path)
	if err != nil || len(es) != 5 {
		t.Fatalf("ReadFile: %d, %v", len(es), err)
	}
	if !bytes.Equal(es[1].Args, big.Args) {
		t.Error("big args did not read back as sent")
	}
}

func TestReadFile(t *testing.T) {
	path, ls := writeLog(t, 3)
	es, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 3 || es[2].Tool != "send_email" || string(es[2].ID) != "2" || es[1].TS.Nanosecond() != 1 {
		t.Errorf("entries %+v", es)
	}
	os.WriteFile(path, []byte(ls[0]+`{"ts":"2026-01-01T00:00:00Z","verdict":"maybe"}`+"\n"+ls[2]), 0o600)
	_, err = ReadFile(path)
	var le *LineError
	if !errors.As(err, &le) || le.Line != 2 || !strings.Contains(err.Error(), path) {
		t.Errorf("ReadFile: %v, want line 2 of %s", err, path)
	}
	// Scan goes past a bad line.
	f, _ := os.Open(path)
	defer f.Close()
	var seen []string
	err = Scan(f, func(n int, e Entry, err error) error {
		seen = append(seen, fmt.Sprintf("%d:%s:%v", n, e.Tool, err != nil))
		return nil
	})
	if err != nil || strings.Join(seen, " ") != "1:send_email:false 2::true 3:send_email:false" {
		t.Errorf("Scan: %v, saw %v", err, seen)
	}
	// Read stops at fn's error and passes it through.
	stop := errors.New("stop")
	n := 0
	err = Read(strings.NewReader(ls[0]+ls[1]), func(int, Entry) error { n++; return stop })
	if err != stop || n != 1 {
		t.Errorf("Read: %v after %d", err, n)
	}
}

// Renaming the log away (rotation) makes the next Append start a new file,
// whose first line chains to the old file's last.
func TestRotation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l := openLog(t, path)
	l.Append(entry(0))
	old := lines(t, path)
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	if err := l.Append(entry(1)); err != nil {
		t.Fatal(err)
	}
	got := lines(t, path)
	if len(got) != 1 || !strings.Contains(got[0], `"prev":"`+Hash([]byte(strings.TrimSuffix(old[0], "\n")))+`"`) {
		t.Errorf("after rotation: %q", got)
	}
	if len(lines(t, path+".1")) != 1 {
		t.Error("the rotated file was written to")
	}
	// Rotated again: the Log follows the file it reopened (its identity is
	// taken anew), and then writes on into the new one without reopening.
	if err := os.Rename(path, path+".2"); err != nil {
		t.Fatal(err)
	}
	for i := 2; i < 4; i++ {
		if err := l.Append(entry(i)); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(lines(t, path+".2")); n != 1 {
		t.Errorf("the second rotated file has %d lines, want 1", n)
	}
	if n := len(lines(t, path)); n != 2 {
		t.Errorf("the file after the second rotation has %d lines, want 2", n)
	}
	if _, err := VerifyFile(path); err != nil {
		t.Errorf("the chain across two rotations: %v", err)
	}
}

// TestChainAfterOthersWrote: a Log chains to the line it wrote last
// without reading the file back only while nobody else has written since.
func TestChainAfterOthersWrote(t *testing.T) {
	for _, c := range []struct {
		name string
		// between runs after a's first line and before its second.
		between func(t *testing.T, path string, b *Log)
		// problems are the lines VerifyFileReport must flag.
		problems []int
	}{
		{"another Log appends", func(t *testing.T, path string, b *Log) {
			if err := b.Append(entry(1)); err != nil {
				t.Fatal(err)
			}
		}, nil},
		{"a writer leaves a partial line", func(t *testing.T, path string, b *Log) {
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteString(`{"torn`)
			f.Close()
		}, []int{2}},
		{"the last line is rewritten in place, same size", func(t *testing.T, path string, b *Log) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			forged := strings.Replace(string(data), `"verdict":"deny"`, `"verdict":"ask" `, 1)
			if len(forged) != len(data) || forged == string(data) {
				t.Fatal("the forgery must keep the size")
			}
			if err := os.WriteFile(path, []byte(forged), 0o600); err != nil {
				t.Fatal(err)
			}
			// Line 1 is not the line the head file records, and line 2
			// (a's, chained to what a wrote) does not chain to it.
		}, []int{1, 2}},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit.jsonl")
			a, b := openLog(t, path), openLog(t, path)
			if err := a.Append(entry(0)); err != nil {
				t.Fatal(err)
			}
			c.between(t, path, b)
			if err := a.Append(entry(9)); err != nil {
				t.Fatal(err)
			}
			rep, err := VerifyFileReport(path)
			if err != nil {
				t.Fatal(err)
			}
			var got []int
			for _, p := range rep.Problems {
				got = append(got, p.Line)
			}
			if fmt.Sprint(got) != fmt.Sprint(c.problems) {
				t.Errorf("problems %v, want them at lines %v", rep.Problems, c.problems)
			}
		})
	}
}

// helperEnv makes the test binary an appender process.
const helperEnv = "BOUNCER_AUDIT_TEST_APPENDER"

func TestMain(m *testing.M) {
	if path := os.Getenv(helperEnv); path != "" {
		os.Exit(appender(path))
	}
	os.Exit(m.Run())
}

func appender(path string) int {
	l, err := Open(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer l.Close()
	n, _ := strconv.Atoi(os.Getenv("N"))
	var wg sync.WaitGroup
	errs := make(chan error, 2*n)
	for g := 0; g < 2; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < n; i++ {
				e := entry(i)
				if i%10 == 0 {
					e.Args = json.RawMessage(`{"body":"` + strings.Repeat("x", 200_000) + `"}`)
				}
				errs <- l.Append(e)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	return 0
}

// Several processes, each with several goroutines, append to one file; the
// chain must come out whole, with every line present.
func TestConcurrentAppenders(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	const procs, perGoroutine = 4, 40
	var cmds []*exec.Cmd
	for p := 0; p < procs; p++ {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), helperEnv+"="+path, "N="+strconv.Itoa(perGoroutine))
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	for _, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Fatalf("appender: %v", err)
		}
	}
	n, err := VerifyFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := procs * 2 * perGoroutine; n != want {
		t.Errorf("%d lines, want %d", n, want)
	}
}

func BenchmarkAppend(b *testing.B) {
	l, err := Open(filepath.Join(b.TempDir(), "audit.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	e := entry(1)
	b.ReportAllocs()
	for b.Loop() {
		if err := l.Append(e); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWriteNoSync is the same line written with no lock, chain or
// sync: the floor Append is measured against.
func BenchmarkWriteNoSync(b *testing.B) {
	f, err := os.OpenFile(filepath.Join(b.TempDir(), "audit.jsonl"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	line, _ := Marshal(entry(1))
	line = append(line, '\n')
	for b.Loop() {
		if _, err := f.Write(line); err != nil {
			b.Fatal(err)
		}
	}
}

func FuzzVerify(f *testing.F) {
	a, _ := Marshal(entry(0))
	f.Add(append(a, '\n'))
	f.Add([]byte("{}\n\n{\"prev\":1}\n[1]\nnull"))
	f.Add([]byte("\xff\xfe{\"prev\":\"sha256:00\"}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		rep, err := Verify(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		if want := bytes.Count(data, []byte("\n")); len(data) > 0 && data[len(data)-1] != '\n' {
			want++
			if rep.Lines != want {
				t.Fatalf("lines %d, want %d", rep.Lines, want)
			}
		}
		_ = Read(bytes.NewReader(data), func(int, Entry) error { return nil })
	})
}

func FuzzParse(f *testing.F) {
	a, _ := Marshal(entry(0))
	f.Add(a)
	f.Add([]byte(`{"ts":"x"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := Parse(data)
		if err != nil {
			return
		}
		// Whatever parses must encode again as one line.
		e.Args, e.ID = nil, nil
		line, err := Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.IndexByte(line, '\n') >= 0 {
			t.Fatal("newline in a line")
		}
	})
}

// Close flushes and stops the syncer; a later Append is refused (the call it
// describes is denied) instead of writing into a closed file.
func TestAppendAfterClose(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Append(Entry{Server: "s", Tool: "t", Args: []byte(`{}`), Verdict: "allow", Rule: "default"}); err != nil {
		t.Fatal(err)
	}
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := l.Append(Entry{Server: "s", Tool: "t", Args: []byte(`{}`), Verdict: "allow", Rule: "default"}); err == nil {
		t.Fatal("Append after Close succeeded")
	}
	if n, err := VerifyFile(path); err != nil || n != 1 {
		t.Fatalf("VerifyFile = %d, %v", n, err)
	}
}

// A burst of lines shares background syncs, at most one per SyncInterval;
// a line after a quiet spell is synced within an interval; Close does not
// wait out a pause and leaves every line on disk.
func TestSyncInterval(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for i := range 200 {
		if err := l.Append(entry(i)); err != nil {
			t.Fatal(err)
		}
	}
	// The first sync may wait for a loaded machine's disk or scheduler:
	// wait for it, then a few intervals more. However long that took, the
	// syncer may not have synced more than once an interval.
	deadline := time.Now().Add(10 * time.Second)
	for l.syncs.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(3 * SyncInterval)
	n := l.syncs.Load()
	elapsed := time.Since(start)
	if max := int64(elapsed/SyncInterval) + 2; n < 1 || n > max {
		t.Fatalf("%d background syncs for 200 lines in %v, want 1 to %d", n, elapsed, max)
	}
	if err := l.Append(entry(200)); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(10 * time.Second)
	for l.syncs.Load() == n && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if l.syncs.Load() == n {
		t.Fatal("a line after a quiet spell was never synced")
	}
	if err := l.Append(entry(201)); err != nil {
		t.Fatal(err)
	}
	closeStart := time.Now()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(closeStart); d > 10*SyncInterval {
		t.Errorf("Close took %v", d)
	}
	if n, err := VerifyFile(path); err != nil || n != 202 {
		t.Fatalf("verify: %d lines, %v", n, err)
	}
}

// BenchmarkAppendAlternating is two Logs (two proxies) appending to one
// file in turn: every append finds a line it did not write, and reads the
// log (and its head) back instead of chaining from memory.
func BenchmarkAppendAlternating(b *testing.B) {
	path := filepath.Join(b.TempDir(), "audit.jsonl")
	var logs [2]*Log
	for i := range logs {
		l, err := Open(path)
		if err != nil {
			b.Fatal(err)
		}
		defer l.Close()
		logs[i] = l
	}
	e := entry(1)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if err := logs[i%2].Append(e); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
