package proxy

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bouncer-mcp/bouncer/internal/audit"
	"github.com/bouncer-mcp/bouncer/internal/engine"
	"github.com/bouncer-mcp/bouncer/internal/fsresolve"
	"github.com/bouncer-mcp/bouncer/internal/policy"
	"github.com/bouncer-mcp/bouncer/internal/session"
	"github.com/bouncer-mcp/bouncer/internal/testsupport/need"
	"github.com/bouncer-mcp/bouncer/internal/testsupport/syncbuf"
	"github.com/bouncer-mcp/bouncer/internal/testsupport/testserver"
	"github.com/bouncer-mcp/bouncer/internal/transport"
)

// The throughput harness (issue 31). A client that keeps calls in flight
// drives one upstream server three ways in the same run: directly, through
// a process that only copies bytes (the floor any stdio proxy pays), and
// through a real `bouncer run` (built as the release is, --sandbox off).
// The client speaks raw JSON-RPC and batches as the fast clients do: it
// sends a new call for each answer, and writes whatever it has queued once
// it has read every answer that arrived.
//
// The servers: testserver.Fast, a Go server that batches its writes too,
// and the npm reference server-everything (pinned in testdata/npm).

// envStdioPump makes the test binary a byte pump between its stdio and
// the command in its arguments (see runStdioPumpIfAsked).
const envStdioPump = "BOUNCER_TEST_STDIO_PUMP"

// runStdioPumpIfAsked copies bytes between the test binary's stdio and a
// child's, and nothing else, when the binary was started as one: the
// least a stdio proxy must do.
func runStdioPumpIfAsked() {
	if os.Getenv(envStdioPump) == "" {
		return
	}
	args := os.Args[1:]
	for i, a := range args {
		if a == "--" {
			args = args[i+1:]
			break
		}
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stderr = nil, os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		os.Exit(1)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		os.Exit(1)
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "pump:", err)
		os.Exit(1)
	}
	go func() {
		_, _ = io.CopyBuffer(in, os.Stdin, make([]byte, 64<<10))
		in.Close()
	}()
	_, _ = io.CopyBuffer(os.Stdout, out, make([]byte, 64<<10))
	_ = cmd.Wait()
	os.Exit(0)
}

// flightServer is one upstream the harness drives, and the calls it
// makes of it.
type flightServer struct {
	argv []string
	env  []string
	call func(id int) string // a tools/call line, without its line end
}

// fastServer is testserver.Fast, called with tool and args (JSON).
func fastServer(b *testing.B, tool, args string) flightServer {
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	return flightServer{
		argv: []string{exe},
		env:  []string{testserver.EnvServer + "=fast"},
		call: func(id int) string {
			return `{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + args + `}}`
		},
	}
}

// everythingServer is the npm reference server-everything, called with
// its echo tool.
func everythingServer(b *testing.B) flightServer {
	script := need.NPM(b, filepath.Join("@modelcontextprotocol", "server-everything", "dist", "index.js"))
	return flightServer{
		argv: []string{need.Node(b), script, "stdio"},
		call: func(id int) string {
			return `{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hello"}}}`
		},
	}
}

// flightCase is a server and a call, by name.
type flightCase struct {
	name   string
	server func(b *testing.B) flightServer
}

var flightCases = []flightCase{
	{"go/trivial", func(b *testing.B) flightServer { return fastServer(b, "echo", `{"text":"hello"}`) }},
	{"go/64KiB", func(b *testing.B) flightServer { return fastServer(b, "blob", `{"n":65536}`) }},
	{"go/64KiB-fresh", func(b *testing.B) flightServer { return fastServer(b, "fresh", `{"n":65536}`) }},
	{"everything/trivial", everythingServer},
}

// The ways to the server. viaOld is another bouncer binary, named by
// $BENCH_BOUNCER_OLD (an earlier commit's build), so that a before and
// an after share one run and its load.
const (
	viaDirect  = "direct"
	viaPump    = "pump"
	viaBouncer = "bouncer"
	viaOld     = "old"
)

// flightVias are the ways a benchmark takes, in turn.
func flightVias() []string {
	v := []string{viaDirect, viaPump, viaBouncer}
	if os.Getenv("BENCH_BOUNCER_OLD") != "" {
		v = append(v, viaOld)
	}
	return v
}

// flightSession is one client session over a process's stdio.
type flightSession struct {
	b    *testing.B
	cmd  *exec.Cmd
	w    *bufio.Writer
	r    *bufio.Reader
	srv  flightServer
	next int // the next request id
	err  *syncbuf.Buffer
}

// startFlight starts srv the given way and completes the handshake and
// one call (bouncer's first call waits for its tool list to be pinned).
func startFlight(b *testing.B, srv flightServer, via string) *flightSession {
	b.Helper()
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	env := append(os.Environ(), srv.env...)
	env = append(env, "BOUNCER_HOME="+benchHome(b, dir))
	var cmd *exec.Cmd
	switch via {
	case viaDirect:
		cmd = exec.Command(srv.argv[0], srv.argv[1:]...)
	case viaPump:
		cmd = exec.Command(exe, append([]string{"--"}, srv.argv...)...)
		env = append(env, envStdioPump+"=1")
	case viaBouncer, viaOld:
		bin := bouncerBinary(b)
		if via == viaOld {
			bin = os.Getenv("BENCH_BOUNCER_OLD")
		}
		cmd = exec.Command(bin, append([]string{"run", "--sandbox", "off", "--name", "bench", "--"}, srv.argv...)...)
		if p := os.Getenv("BENCH_CPUPROFILE"); p != "" {
			env = append(env, "BOUNCER_CPUPROFILE="+p)
		}
		if p := os.Getenv("BENCH_TRACE"); p != "" {
			env = append(env, "BOUNCER_TRACE="+p)
		}
	}
	cmd.Env = env
	s := &flightSession{b: b, cmd: cmd, srv: srv, err: &syncbuf.Buffer{}}
	cmd.Stderr = s.err
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		in.Close()
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	s.handshake(in, out)
	return s
}

// handshake initializes the session over in and out and makes one call.
func (s *flightSession) handshake(in io.Writer, out io.Reader) {
	b := s.b
	s.w = bufio.NewWriterSize(in, 64<<10)
	s.r = bufio.NewReaderSize(out, 1<<20)
	s.w.WriteString(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}` + "\n")
	s.w.Flush()
	if line := s.answer(); !bytes.Contains(line, []byte(`"result"`)) {
		b.Fatalf("initialize: %s\n%s", line, s.err)
	}
	s.w.WriteString(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n")
	s.w.Flush()
	s.next = 1
	s.calls(1, 1)
}

// answer reads lines until the next answer (a line with a result or an
// error and no method) and returns it.
func (s *flightSession) answer() []byte {
	for {
		line, err := s.r.ReadSlice('\n')
		if err != nil {
			s.b.Fatalf("reading: %v\n%s", err, s.err)
		}
		if isFlightAnswer(line) {
			return line
		}
	}
}

func isFlightAnswer(line []byte) bool {
	return !bytes.Contains(line, []byte(`"method"`)) &&
		(bytes.Contains(line, []byte(`"result"`)) || bytes.Contains(line, []byte(`"error"`)))
}

// calls makes n calls with up to inflight of them unanswered at a time and
// returns how long each took (from its write to its answer).
func (s *flightSession) calls(n, inflight int) []time.Duration {
	sentAt := make([]time.Time, 0, n)
	took := make([]time.Duration, 0, n)
	first := s.next
	send := func() {
		sentAt = append(sentAt, time.Now())
		s.w.WriteString(s.srv.call(s.next))
		s.w.WriteByte('\n')
		s.next++
	}
	for len(sentAt) < n && len(sentAt) < inflight {
		send()
	}
	s.w.Flush()
	for len(took) < n {
		line := s.answer()
		if bytes.Contains(line, []byte(`"error"`)) || bytes.Contains(line, []byte(BlockedPrefix)) {
			s.b.Fatalf("a call failed: %s\n%s", line, s.err)
		}
		id := answerID(line) - first
		if id < 0 || id >= len(sentAt) {
			s.b.Fatalf("an answer to id %d, which was not sent: %.200s", id+first, line)
		}
		took = append(took, time.Since(sentAt[id]))
		if len(sentAt) < n {
			send()
		}
		if buf, _ := s.r.Peek(s.r.Buffered()); bytes.IndexByte(buf, '\n') < 0 {
			s.w.Flush() // no whole answer is waiting: send what queued up
		}
	}
	s.w.Flush()
	return took
}

// answerID is the integer id of an answer line.
func answerID(line []byte) int {
	i := bytes.Index(line, []byte(`"id":`))
	if i < 0 {
		return -1
	}
	j := i + 5
	k := j
	for k < len(line) && line[k] >= '0' && line[k] <= '9' {
		k++
	}
	n, err := strconv.Atoi(string(line[j:k]))
	if err != nil {
		return -1
	}
	return n
}

// cpu is the CPU time the session's process (for bouncer and the pump,
// the proxy, not the server) has used so far, from the scheduler's
// per-thread figures (nanoseconds, not clock ticks).
func (s *flightSession) cpu() time.Duration {
	if s.cmd == nil {
		return 0
	}
	dir := fmt.Sprintf("/proc/%d/task", s.cmd.Process.Pid)
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	var sum time.Duration
	for _, t := range tasks {
		b, err := os.ReadFile(filepath.Join(dir, t.Name(), "schedstat"))
		if err != nil {
			continue
		}
		f := strings.Fields(string(b))
		if len(f) > 0 {
			n, _ := strconv.ParseInt(f[0], 10, 64)
			sum += time.Duration(n)
		}
	}
	return sum
}

// flightRound is the number of calls each way makes in turn.
const flightRound = 2000

// BenchmarkInflight drives each server with 32 calls in flight directly,
// through the byte pump and through bouncer, in rounds taken in turn (one
// op is a round of flightRound calls each way), and reports each way's
// calls per second, the pump's and bouncer's as a percentage of direct,
// and the CPU time bouncer's process used per call.
//
//	go test -run '^$' -bench Inflight -benchtime 10x -count 10 ./internal/proxy
func BenchmarkInflight(b *testing.B) {
	for _, c := range flightCases {
		b.Run(c.name, func(b *testing.B) {
			srv := c.server(b)
			vias := flightVias()
			sessions := make([]*flightSession, len(vias))
			for i, via := range vias {
				sessions[i] = startFlight(b, srv, via)
			}
			for _, s := range sessions {
				s.calls(flightRound/4, 32) // warm up
			}
			b.ResetTimer()
			wall := make([]time.Duration, len(vias))
			cpu := make([]time.Duration, len(vias))
			for range b.N {
				for i, s := range sessions {
					c0 := s.cpu()
					t0 := time.Now()
					s.calls(flightRound, 32)
					wall[i] += time.Since(t0)
					cpu[i] += s.cpu() - c0
				}
			}
			calls := float64(b.N * flightRound)
			rate := func(i int) float64 { return calls / wall[i].Seconds() }
			b.ReportMetric(rate(0), "direct-calls/s")
			for i, via := range vias[1:] {
				b.ReportMetric(100*rate(i+1)/rate(0), via+"-%")
				b.ReportMetric(float64(cpu[i+1].Nanoseconds())/1e3/calls, via+"-cpu-µs/call")
			}
			b.ReportMetric(0, "ns/op")
		})
	}
}

// BenchmarkLatency makes one call at a time, in turn directly, through the
// pump and through bouncer, and reports the median of each way's call
// times and the pump's and bouncer's as a multiple of direct, with the CPU
// time each proxy's process used per call. One op is one call each way.
//
//	go test -run '^$' -bench Latency -benchtime 2000x -count 10 ./internal/proxy
func BenchmarkLatency(b *testing.B) { latency(b, 0) }

// BenchmarkLatencyQuiet is BenchmarkLatency with a pause of quietGap
// before each round, as an agent's calls come: a call after a quiet spell
// finds every thread asleep, the audit log synced and the caches cold.
// The CPU time per call counts the pauses too, since what a process does
// while it waits (the Go runtime's monitor, the audit log's sync) is paid
// for each call.
//
//	go test -run '^$' -bench LatencyQuiet -benchtime 300x -count 10 ./internal/proxy
func BenchmarkLatencyQuiet(b *testing.B) { latency(b, quietGap) }

// quietGap is BenchmarkLatencyQuiet's pause between calls: longer than
// audit.SyncInterval, so that each call's line is synced on its own.
const quietGap = 25 * time.Millisecond

// latency makes b.N rounds of one call each way, in turn, with a pause
// before each round.
func latency(b *testing.B, pause time.Duration) {
	srv := flightCases[0].server(b)
	vias := flightVias()
	sessions := make([]*flightSession, len(vias))
	for i, via := range vias {
		sessions[i] = startFlight(b, srv, via)
		sessions[i].calls(200, 1)
	}
	took := make([][]time.Duration, len(vias))
	cpu := make([]time.Duration, len(vias))
	if pause > 0 {
		// The whole run, pauses included: what a process does while it
		// waits is paid for the call that woke it.
		for i, s := range sessions {
			cpu[i] -= s.cpu()
		}
	}
	b.ResetTimer()
	for range b.N {
		if pause > 0 {
			time.Sleep(pause)
		}
		for i, s := range sessions {
			c0 := s.cpu()
			took[i] = append(took[i], s.calls(1, 1)...)
			if pause == 0 {
				cpu[i] += s.cpu() - c0
			}
		}
	}
	if pause > 0 {
		for i, s := range sessions {
			cpu[i] += s.cpu()
		}
	}
	p50 := make([]float64, len(vias))
	for i := range took {
		slices.Sort(took[i])
		p50[i] = float64(took[i][len(took[i])/2].Nanoseconds()) / 1e3
	}
	b.ReportMetric(p50[0], "direct-p50-µs")
	for i, via := range vias[1:] {
		b.ReportMetric(p50[i+1]/p50[0], via+"-x")
		b.ReportMetric(float64(cpu[i+1].Nanoseconds())/1e3/float64(b.N), via+"-cpu-µs/call")
	}
	b.ReportMetric(0, "ns/op")
}

// BenchmarkPumpInProcess is BenchmarkInflight's trivial call through a
// proxy running in the benchmark's own process (the fast Go server is a
// process of its own, as always), so that allocs/op counts what the pump
// allocates per call (and the raw client's few). One op is one call.
//
//	go test -run '^$' -bench PumpInProcess -benchtime 20000x -count 6 ./internal/proxy
func BenchmarkPumpInProcess(b *testing.B) {
	dir := b.TempDir()
	pol, err := policy.Load()
	if err != nil {
		b.Fatal(err)
	}
	log, err := audit.Open(filepath.Join(benchHome(b, dir), "audit.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { log.Close() })
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	cmd := transport.Command{Path: exe, Env: append(os.Environ(), testserver.EnvServer+"=fast"), Name: "fast"}
	up, err := transport.Start(cmd, io.Discard)
	if err != nil {
		b.Fatal(err)
	}
	sess := session.New()
	store := sess.Output("fast")
	p := New(Config{
		Server:  "fast",
		Engine:  engine.New(pol, store, engine.Options{Resolve: fsresolve.Existing, WorkDir: dir, Session: sess, Server: "fast"}),
		Store:   store,
		Audit:   log,
		Session: "bench",
	})
	c2pR, c2pW := io.Pipe()
	p2cR, p2cW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx, transport.NewConn(c2pR, p2cW), up) }()
	b.Cleanup(func() {
		cancel()
		c2pW.Close()
		_ = up.Stop(time.Second)
		<-done
	})
	s := &flightSession{b: b, srv: fastServer(b, "echo", `{"text":"hello"}`), err: &syncbuf.Buffer{}}
	s.handshake(c2pW, p2cR)
	s.calls(2000, 32)
	b.ReportAllocs()
	b.ResetTimer()
	s.calls(b.N, 32)
}
