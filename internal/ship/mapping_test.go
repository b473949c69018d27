package ship

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode"

	otellog "go.opentelemetry.io/otel/log"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/bouncer-mcp/bouncer/internal/audit"
)

const sampleLine = `{"ts":"2026-12-01T09:30:01.123456789Z","server":"help\"desk]","tool":"send_email","args":{"to":"attacker@evil.example","body":"grüße"},"verdict":"deny","reason":"r","rule":"sink","prev":"sha256:0000000000000000000000000000000000000000000000000000000000000000"}`

func lineOf(s string) Line {
	return Line{Text: []byte(s), Hash: audit.Hash([]byte(s)), Num: 1, End: int64(len(s) + 1)}
}

func attrs(r *sdklog.Record) map[string]string {
	out := map[string]string{}
	r.WalkAttributes(func(kv otellog.KeyValue) bool {
		out[kv.Key] = kv.Value.AsString()
		return true
	})
	return out
}

func TestLogRecordMapping(t *testing.T) {
	enc := newRecordEncoder(Resource("build-7"))
	l := lineOf(sampleLine)
	garbage := lineOf(`{"ts":"2026-12-01T09:30:0`)
	binary := lineOf("not utf-8: \xff\xfe")
	recs := enc.records([]Line{l, garbage, binary})
	if len(recs) != 3 {
		t.Fatalf("%d records for 3 lines", len(recs))
	}
	r := recs[0]
	if r.Body().Kind() != otellog.KindString || r.Body().AsString() != sampleLine {
		t.Fatalf("body %v, want the line's exact text", r.Body())
	}
	if want := time.Date(2026, 12, 1, 9, 30, 1, 123456789, time.UTC); !r.Timestamp().Equal(want) {
		t.Fatalf("timestamp %v, want the line's ts %v", r.Timestamp(), want)
	}
	if r.ObservedTimestamp().IsZero() {
		t.Fatal("no observed timestamp")
	}
	want := map[string]string{
		"bouncer.server": `help"desk]`, "bouncer.tool": "send_email", "bouncer.verdict": "deny",
		"bouncer.rule": "sink", "bouncer.line_hash": audit.Hash([]byte(sampleLine)),
	}
	got := attrs(&r)
	if len(got) != len(want) {
		t.Fatalf("attributes %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("attribute %s = %q, want %q", k, got[k], v)
		}
	}
	if !strings.HasPrefix(got["bouncer.line_hash"], "sha256:") || len(got["bouncer.line_hash"]) != 71 {
		t.Fatalf("line_hash %q is not sha256:HEX", got["bouncer.line_hash"])
	}
	if r.Severity() != otellog.SeverityWarn || r.SeverityText() != "deny" {
		t.Fatalf("severity %v %q", r.Severity(), r.SeverityText())
	}
	res := r.Resource()
	if v, ok := res.Set().Value("service.name"); !ok || v.AsString() != "bouncer" {
		t.Fatalf("resource %v, want service.name bouncer", res)
	}
	if v, _ := res.Set().Value("host.name"); v.AsString() != "build-7" {
		t.Fatalf("resource %v, want host.name", res)
	}
	if r.InstrumentationScope().Name != ScopeName {
		t.Fatalf("scope %q", r.InstrumentationScope().Name)
	}

	// A line that is not an entry is shipped all the same, labelled with
	// its hash only.
	g := recs[1]
	if g.Body().AsString() != string(garbage.Text) || !g.Timestamp().IsZero() {
		t.Fatalf("garbage line: body %q ts %v", g.Body().AsString(), g.Timestamp())
	}
	if a := attrs(&g); len(a) != 1 || a["bouncer.line_hash"] != garbage.Hash {
		t.Fatalf("garbage line attributes %v", a)
	}
	// Bytes that are not UTF-8 can't be a protobuf string: the body is
	// the exact bytes.
	b := recs[2]
	if b.Body().Kind() != otellog.KindBytes || string(b.Body().AsBytes()) != string(binary.Text) {
		t.Fatalf("non-UTF-8 body %v", b.Body())
	}
}

func TestVerdictCountsMetric(t *testing.T) {
	c := newVerdictCounts()
	for _, s := range []string{
		`{"ts":"2026-12-01T09:00:00Z","server":"a","verdict":"deny","rule":"sink"}`,
		`{"ts":"2026-12-01T09:00:01Z","server":"a","verdict":"deny","rule":"sink"}`,
		`{"ts":"2026-12-01T09:00:02Z","server":"b","verdict":"allow","rule":"default"}`,
		`garbage`,
	} {
		c.add(parseFields([]byte(s)))
	}
	now := time.Now()
	rm := c.metrics(Resource(""), now)
	m := rm.ScopeMetrics[0].Metrics[0]
	sum, ok := m.Data.(metricdata.Sum[int64])
	if m.Name != "bouncer.verdicts" || !ok || sum.Temporality != metricdata.CumulativeTemporality || !sum.IsMonotonic {
		t.Fatalf("metric %s %T is not a cumulative monotonic sum", m.Name, m.Data)
	}
	if len(sum.DataPoints) != 2 {
		t.Fatalf("%d points, want 2", len(sum.DataPoints))
	}
	p := sum.DataPoints[0]
	sv, _ := p.Attributes.Value("bouncer.server")
	vv, _ := p.Attributes.Value("bouncer.verdict")
	rv, _ := p.Attributes.Value("bouncer.rule")
	if sv.AsString() != "a" || vv.AsString() != "deny" || rv.AsString() != "sink" || p.Value != 2 || p.Attributes.Len() != 3 {
		t.Fatalf("first point %v = %d", p.Attributes, p.Value)
	}
	if !p.StartTime.Equal(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)) || !p.Time.Equal(now) {
		t.Fatalf("start %v time %v: the series starts at the log's first line", p.StartTime, p.Time)
	}
	if !c.dirty(now) {
		t.Fatal("new counts are not due")
	}
	c.exported(now)
	if c.dirty(now.Add(time.Second)) || !c.dirty(now.Add(metricHeartbeat)) {
		t.Fatal("an unchanged sum is sent again only at the heartbeat")
	}
}

func TestSyslogMessage(t *testing.T) {
	l := lineOf(sampleLine)
	got := string(SyslogMessage(l, "build-7"))
	want := `<108>1 2026-12-01T09:30:01.123456Z build-7 bouncer - deny [bouncer@32473 line_hash="` + l.Hash +
		`" server="help\"desk\]" tool="send_email" verdict="deny" rule="sink"] ` + sampleLine
	if got != want {
		t.Fatalf("message\n%s\nwant\n%s", got, want)
	}
	// Severity by verdict; facility 13 (log audit).
	for v, pri := range map[string]string{"allow": "<110>", "ask": "<109>", "deny": "<108>"} {
		m := string(SyslogMessage(lineOf(`{"verdict":"`+v+`"}`), "h"))
		if !strings.HasPrefix(m, pri+"1 - h bouncer - "+v+" ") {
			t.Fatalf("%s: %s", v, m)
		}
	}
	// Not an entry: nil values, the hash only, the bytes as they are.
	g := lineOf("torn {\"ts\"")
	if m := string(SyslogMessage(g, "")); m != `<109>1 - - bouncer - - [bouncer@32473 line_hash="`+g.Hash+`"] torn {"ts"` {
		t.Fatalf("garbage: %s", m)
	}
	// A hostname with a space or a newline is not a HOSTNAME, nor is a
	// verdict with one a MSGID.
	for _, h := range []string{"my host", "h\nx", "h\x00"} {
		if m := string(SyslogMessage(g, h)); !strings.HasPrefix(m, "<109>1 - - bouncer") {
			t.Fatalf("bad hostname: %q", m)
		}
	}
	if m := string(SyslogMessage(lineOf(`{"verdict":"deny\n"}`), "h")); !strings.HasPrefix(m, "<109>1 - h bouncer - - [") {
		t.Fatalf("bad verdict: %q", m)
	}
}

// A PARAM-VALUE escapes what RFC 5424 says, and writes every control
// character as a visible escape, never raw.
func TestSDValue(t *testing.T) {
	for in, want := range map[string]string{
		"send_email":                "send_email",
		`a"b\c]d`:                   `a\"b\\c\]d`,
		"line\nfeed\r\n":            `line\nfeed\r\n`,
		"tab\tnul\x00del\x7f":       `tab\tnul\u0000del\u007f`,
		"nel\u0085ls\u2028ps\u2029": `nel\u0085ls\u2028ps\u2029`,
		"rlo\u202eisolate\u2066":    `rlo\u202eisolate\u2066`,
		// The name's own backslash-n is told apart from a newline.
		`back\nslash`: `back\\nslash`,
		"grüße ✓":     "grüße ✓",
	} {
		if got := sdValue(in); got != want {
			t.Errorf("sdValue(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestFrameCountsOctets(t *testing.T) {
	msg := []byte("<110>1 - - bouncer - - - grüße") // ü and ß are two bytes each
	f := Frame(msg)
	if string(f) != "32 "+string(msg) || len([]rune(string(msg))) != 30 {
		t.Fatalf("frame %q", f)
	}
	// A receiver reading octet-counted frames gets the messages back.
	var stream []byte
	for _, s := range []string{sampleLine, "x", strings.Repeat("é", 5000)} {
		stream = append(stream, Frame(SyslogMessage(lineOf(s), "h"))...)
	}
	want := []string{sampleLine, "x", strings.Repeat("é", 5000)}
	got := readFrames(bufio.NewReader(strings.NewReader(string(stream))))
	if len(got) != len(want) {
		t.Fatalf("read %d frames, want %d", len(got), len(want))
	}
	for i, s := range want {
		if !strings.HasSuffix(got[i], "] "+s) {
			t.Fatalf("frame did not hold the message: %q", got[i])
		}
	}
}

// readFrames reads octet-counted frames (RFC 6587) until the stream ends
// or one is malformed, and returns their messages.
func readFrames(rd *bufio.Reader) []string {
	var msgs []string
	for {
		n, err := rd.ReadString(' ')
		if err != nil {
			return msgs
		}
		size, err := strconv.Atoi(strings.TrimSpace(n))
		if err != nil || size < 0 {
			return msgs
		}
		buf := make([]byte, size)
		if _, err := io.ReadFull(rd, buf); err != nil {
			return msgs
		}
		msgs = append(msgs, string(buf))
	}
}

// receiver is a syslog receiver on loopback whose behaviour after reading a
// connection is chosen by the test.
func receiver(t *testing.T, handle func(c *net.TCPConn)) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return serve(t, ln, func(c net.Conn) { handle(c.(*net.TCPConn)) })
}

// serve hands each connection ln accepts to handle, until the test ends,
// and returns ln's address.
func serve(t *testing.T, ln net.Listener, handle func(c net.Conn)) string {
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go handle(c)
		}
	}()
	return ln.Addr().String()
}

func TestSyslogDeliveredOnlyWhenReceiverClosed(t *testing.T) {
	lines := []Line{lineOf(sampleLine), lineOf("two")}
	ctx := context.Background()

	// Reads to the end, then closes: delivered.
	got := make(chan string, 1)
	addr := receiver(t, func(c *net.TCPConn) {
		b, _ := io.ReadAll(c)
		got <- string(b)
		c.Close()
	})
	d, _ := newSyslogDest("tcp://"+addr, nil, "h")
	if err := d.Send(ctx, lines); err != nil {
		t.Fatal(err)
	}
	want := string(Frame(SyslogMessage(lines[0], "h"))) + string(Frame(SyslogMessage(lines[1], "h")))
	if s := <-got; s != want {
		t.Fatalf("receiver read %q, want %q", s, want)
	}

	// Reads but never closes: not known to be delivered.
	hold := make(chan struct{})
	t.Cleanup(func() { close(hold) })
	addr = receiver(t, func(c *net.TCPConn) {
		io.ReadAll(c)
		<-hold
		c.Close()
	})
	d, _ = newSyslogDest("tcp://"+addr, nil, "h")
	d.closeWait = 200 * time.Millisecond
	if err := d.Send(ctx, lines); err == nil || !strings.Contains(err.Error(), "did not close the connection") {
		t.Fatalf("a receiver that never closed: %v", err)
	}

	// Closes without reading everything (the kernel answers with a
	// reset): not delivered.
	addr = receiver(t, func(c *net.TCPConn) {
		c.Read(make([]byte, 10))
		c.SetLinger(0)
		c.Close()
	})
	d, _ = newSyslogDest("tcp://"+addr, nil, "h")
	big := []Line{lineOf(strings.Repeat("x", 4<<20))}
	if err := d.Send(ctx, big); err == nil {
		t.Fatal("a receiver that reset the connection counted as delivered")
	}

	// Nothing listening.
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	closed := ln.Addr().String()
	ln.Close()
	d, _ = newSyslogDest("tcp://"+closed, nil, "h")
	if err := d.Send(ctx, lines); err == nil || !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("nothing listening: %v", err)
	}
}

// TestSyslogTLSBatches ships a log in batches, each over its own TLS
// session, to a Go receiver that reads each session to its close_notify and
// then closes: every line arrives exactly once, in order, and the cursor
// ends at the last line.
func TestSyslogTLSBatches(t *testing.T) {
	dir := t.TempDir()
	ca, files := testPKI(t, dir)
	cert, err := tls.LoadX509KeyPair(files.cert, files.key)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var got []string
	sessions := 0
	addr := serve(t, ln, func(c net.Conn) {
		// To io.EOF, the sender's close_notify; then the close that
		// tells the sender the batch was delivered. The sender opens
		// the next session only after that, so sessions don't overlap.
		msgs := readFrames(bufio.NewReader(c))
		mu.Lock()
		got = append(got, msgs...)
		sessions++
		mu.Unlock()
		c.Close()
	})
	l := newTestLog(t, dir)
	l.add(12)
	res := Run(context.Background(), Config{Log: l.path, StateDir: dir, Dests: syslogDests(t, "tls://"+addr, ca), Once: true, MaxLines: 5})
	if res[0].Err != nil || res[0].Shipped != 12 {
		t.Fatalf("%+v", res[0])
	}
	mu.Lock()
	defer mu.Unlock()
	want := stringsOf(readLines(t, l.path))
	if len(got) != len(want) || sessions != 3 {
		t.Fatalf("%d sessions delivered %d messages, want 3 sessions and the log's %d lines", sessions, len(got), len(want))
	}
	for i, w := range want {
		if !strings.HasSuffix(got[i], "] "+w) {
			t.Fatalf("message %d is %q, want the log's line %d, %q", i, got[i], i, w)
		}
	}
}

// FuzzSyslogMessage: whatever a log line holds, its message is one
// well-formed frame whose MSG is the line's exact bytes, and the structured
// data's values can't end the element early.
func FuzzSyslogMessage(f *testing.F) {
	f.Add([]byte(sampleLine))
	f.Add([]byte(`{"server":"a\"] b","verdict":"deny\\"}`))
	f.Add([]byte("\xff\x00\n"))
	f.Add([]byte(`{"tool":"a\nb\u0000\u2028","server":"\r","verdict":"deny\u0085"}`))
	f.Fuzz(func(t *testing.T, text []byte) {
		l := lineOf(string(text))
		msg := SyslogMessage(l, "h")
		frame := Frame(msg)
		n, rest, ok := strings.Cut(string(frame), " ")
		if !ok || n != strconv.Itoa(len(rest)) || rest != string(msg) {
			t.Fatalf("bad frame %q", frame)
		}
		if !strings.HasSuffix(string(msg), "] "+string(text)) {
			t.Fatalf("MSG is not the line: %q", msg)
		}
		// The SD element ends at the first ']' not escaped by '\'.
		sd := string(msg[strings.Index(string(msg), "["):])
		end := -1
		for i := 1; i < len(sd); i++ {
			if sd[i] == '\\' {
				i++
				continue
			}
			if sd[i] == ']' {
				end = i
				break
			}
		}
		if end < 0 || sd[end+1:] != " "+string(text) {
			t.Fatalf("structured data does not end before MSG: %q", sd)
		}
		// Before MSG, no control character: a receiver that writes lines
		// gets one line.
		head := string(msg[:strings.Index(string(msg), "[")+end+1])
		if i := strings.IndexFunc(head, unicode.IsControl); i >= 0 {
			t.Fatalf("a control character in the header or structured data: %q", head)
		}
	})
}
