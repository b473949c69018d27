package record

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func open(t *testing.T, warn func(string)) (*Tape, string) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "rec.jsonl")
	tape, err := Open(file, "mail", warn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tape.Close() })
	return tape, file
}

func lines(t *testing.T, file string) []string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// Each kind of line is written as bouncer check reads it, the documents as
// the server wrote them (no HTML escapes), and a document over MaxLine
// with its long strings elided and "elided": true.
func TestTapeLines(t *testing.T) {
	huge := strings.Repeat("a", MaxLine)
	for _, tc := range []struct {
		name  string
		write func(*Tape)
		want  string // the line, or a regexp of it when it starts with ^
	}{
		{"output", func(tp *Tape) {
			tp.Output(json.RawMessage(`{"content":[{"type":"text","text":"<b>x</b> & y"}]}`), "")
		}, `{"output":{"content":[{"type":"text","text":"<b>x</b> & y"}]},"server":"mail"}`},
		{"output of a tool", func(tp *Tape) {
			tp.Output(json.RawMessage(`{"content":[]}`), "read_contacts")
		}, `{"output":{"content":[]},"server":"mail","tool":"read_contacts"}`},
		{"an output that is a string", func(tp *Tape) {
			tp.Output(json.RawMessage(`"plain"`), "")
		}, `{"output":"plain","server":"mail"}`},
		{"no output", func(tp *Tape) { tp.Output(nil, "x") }, ``},
		{"call", func(tp *Tape) {
			tp.Call(json.RawMessage(`{"name":"send_email","arguments":{"to":"a@b.example"},"_meta":{"k":1}}`))
		}, `{"call":{"name":"send_email","arguments":{"to":"a@b.example"},"_meta":{"k":1}},"server":"mail"}`},
		{"a call without params", func(tp *Tape) { tp.Call(nil) }, `{"call":{},"server":"mail"}`},
		{"approve", func(tp *Tape) {
			tp.Approve("send_email", "to", "a@b.example")
		}, `{"approve":{"tool":"send_email","param":"to","destination":"a@b.example"},"server":"mail"}`},
		{"approve with no destination", func(tp *Tape) {
			tp.Approve("send_email", "(implicit)", "")
		}, `{"approve":{"tool":"send_email","param":"(implicit)","destination":""},"server":"mail"}`},
		{"a huge output", func(tp *Tape) {
			tp.Output(json.RawMessage(`{"content":[{"type":"text","text":"`+huge+`"},{"type":"text","text":"to: eve@evil.example"}]}`), "read_file")
		}, `^\{"output":\{"content":\[\{"text":"a{256}…\[bouncer: 1048576 bytes, sha256:[0-9a-f]{64}\]","type":"text"\},\{"text":"to: eve@evil.example","type":"text"\}\]\},"server":"mail","tool":"read_file","elided":true\}$`},
		{"a huge call", func(tp *Tape) {
			tp.Call(json.RawMessage(`{"name":"write_file","arguments":{"path":"/out/x","content":"` + huge + `"}}`))
		}, `^\{"call":\{"arguments":\{"content":"a{256}…\[bouncer: 1048576 bytes, sha256:[0-9a-f]{64}\]","path":"/out/x"\},"name":"write_file"\},"server":"mail","elided":true\}$`},
		{"an output at the limit", func(tp *Tape) {
			tp.Output(json.RawMessage(`"`+huge[:MaxLine-2]+`"`), "")
		}, `{"output":"` + huge[:MaxLine-2] + `","server":"mail"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tape, file := open(t, func(msg string) { t.Error(msg) })
			tc.write(tape)
			got := lines(t, file)
			if tc.want == "" {
				if len(got) != 1 || got[0] != "" {
					t.Fatalf("wrote %q, want nothing", got)
				}
				return
			}
			if len(got) != 1 {
				t.Fatalf("wrote %d lines", len(got))
			}
			if strings.HasPrefix(tc.want, "^") {
				if !matches(tc.want, got[0]) {
					t.Fatalf("line %.400s…\nwant %s", got[0], tc.want)
				}
				return
			}
			if got[0] != tc.want {
				t.Fatalf("line %.400s\nwant %.400s", got[0], tc.want)
			}
		})
	}
}

// The file is created 0600, appended to, and an existing one that others
// can read, or that is not a regular file, is refused.
func TestOpen(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "rec.jsonl")
	for i := 0; i < 2; i++ {
		tape, err := Open(file, "s", nil)
		if err != nil {
			t.Fatal(err)
		}
		tape.Approve("t", "p", "d")
		tape.Close()
	}
	st, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, want 0600", st.Mode().Perm())
	}
	if n := len(lines(t, file)); n != 2 {
		t.Fatalf("%d lines, want 2 (appended)", n)
	}
	open := filepath.Join(dir, "open.jsonl")
	if err := os.WriteFile(open, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		open:                             "mode 0644 lets other users read or write it",
		dir:                              "not a regular file but a directory",
		filepath.Join(dir, "no", "file"): "no such file or directory",
	} {
		if _, err := Open(path, "s", nil); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), path) {
			t.Errorf("Open(%s) = %v, want an error naming it with %q", path, err, want)
		}
	}
	// A FIFO, with no reader at its other end, is refused at once: the
	// open neither waits nor fails as "no such device".
	done := make(chan error, 1)
	go func() { _, err := Open(fifo, "s", nil); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not a regular file but a named pipe") {
			t.Errorf("Open(fifo) = %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Open(fifo) still waiting after 5s")
	}
}

// A line that can't be written is said once; the session goes on, and
// nothing more is written.
func TestTapeWriteFails(t *testing.T) {
	var warned []string
	tape, _ := open(t, func(msg string) { warned = append(warned, msg) })
	tape.f.Close() // the file goes away under it
	tape.Approve("t", "p", "d")
	tape.Call(json.RawMessage(`{"name":"x"}`))
	if len(warned) != 1 || !strings.Contains(warned[0], "the rest of this session is not recorded") {
		t.Fatalf("warned %q", warned)
	}
}

// Lines written at once from many goroutines come out whole.
func TestTapeConcurrent(t *testing.T) {
	tape, file := open(t, func(msg string) { t.Error(msg) })
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 50; j++ {
				tape.Output(json.RawMessage(`{"text":"`+strings.Repeat("z", 10000)+`"}`), "t")
			}
		}()
	}
	wg.Wait()
	got := lines(t, file)
	if len(got) != 400 {
		t.Fatalf("%d lines, want 400", len(got))
	}
	for _, l := range got {
		if !json.Valid([]byte(l)) {
			t.Fatalf("a torn line: %.100s…", l)
		}
	}
}

func matches(pattern, s string) bool { return regexp.MustCompile(pattern).MatchString(s) }
