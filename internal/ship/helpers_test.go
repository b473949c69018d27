package ship

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bouncer-mcp/bouncer/internal/audit"
)

// testLog appends real, hash-chained audit lines with the audit package's
// own writer, as the proxies do.
type testLog struct {
	t    *testing.T
	path string
	log  *audit.Log
	n    int
}

func newTestLog(t *testing.T, dir string) *testLog {
	t.Helper()
	path := filepath.Join(dir, "audit.jsonl")
	l, err := audit.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	tl := &testLog{t: t, path: path, log: l}
	t.Cleanup(func() { tl.log.Close() })
	return tl
}

var verdictCycle = []struct{ verdict, rule string }{
	{"allow", "default"}, {"deny", "sink"}, {"ask", "sink"}, {"deny", "approval"}, {"allow", "approval"},
}

// add appends n lines; their arguments make each line distinct and some of
// them long, with characters outside ASCII.
func (l *testLog) add(n int) {
	l.t.Helper()
	for range n {
		l.n++
		v := verdictCycle[l.n%len(verdictCycle)]
		args, _ := json.Marshal(map[string]any{"to": fmt.Sprintf("user%d@example.com", l.n), "body": "grüße ] \" \\ " + strings.Repeat("x", l.n%7*40)})
		e := audit.Entry{
			TS:      time.Date(2026, 12, 1, 9, 30, 0, 0, time.UTC).Add(time.Duration(l.n) * 1234567 * time.Microsecond),
			Server:  []string{"helpdesk", "mail"}[l.n%2],
			Tool:    "send_email",
			Args:    args,
			Verdict: v.verdict,
			Reason:  "test",
			Rule:    v.rule,
			ID:      json.RawMessage(fmt.Sprint(l.n)),
		}
		if err := l.log.Append(e); err != nil {
			l.t.Fatal(err)
		}
	}
}

// lines returns the log's lines as written.
func readLines(t *testing.T, path string) [][]byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for _, l := range bytes.SplitAfter(data, []byte("\n")) {
		if len(l) > 0 {
			out = append(out, bytes.TrimSuffix(l, []byte("\n")))
		}
	}
	return out
}

// notes collects what the shipper says.
type notes struct {
	mu  sync.Mutex
	all []string
}

func (n *notes) logf(format string, a ...any) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.all = append(n.all, fmt.Sprintf(format, a...))
}

func (n *notes) String() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return strings.Join(n.all, "\n")
}

// fakeDest records what it accepted; fail makes the next sends fail.
type fakeDest struct {
	mu       sync.Mutex
	name     string
	got      []Line
	calls    int
	failNext int
}

func (d *fakeDest) Name() string { return d.name }
func (d *fakeDest) Send(_ context.Context, lines []Line) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.calls++
	if d.failNext > 0 {
		d.failNext--
		return fmt.Errorf("collector down")
	}
	for _, l := range lines {
		l.Text = append([]byte(nil), l.Text...)
		d.got = append(d.got, l)
	}
	return nil
}
func (d *fakeDest) Flush(context.Context) error { return nil }
func (d *fakeDest) Close()                      {}

func (d *fakeDest) texts() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []string
	for _, l := range d.got {
		out = append(out, string(l.Text))
	}
	return out
}

func waitFor(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func stringsOf(lines [][]byte) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = string(l)
	}
	return out
}
