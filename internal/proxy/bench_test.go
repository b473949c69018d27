package proxy

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bouncer-mcp/bouncer/internal/testsupport/syncbuf"
	"github.com/bouncer-mcp/bouncer/internal/testsupport/testserver"
)

var (
	bouncerOnce sync.Once
	bouncerPath string
	bouncerErr  error
)

// bouncerBinary builds ./cmd/bouncer once, so benchmarks measure the real
// `bouncer run` process.
func bouncerBinary(b testing.TB) string {
	b.Helper()
	bouncerOnce.Do(func() {
		dir, err := os.MkdirTemp("", "bouncer-bench")
		if err != nil {
			bouncerErr = err
			return
		}
		bouncerPath = filepath.Join(dir, "bouncer")
		// Built as the release is: static, so no dynamic loader runs at
		// each start (see .goreleaser.yaml).
		build := exec.Command("go", "build", "-trimpath", "-o", bouncerPath, "../../cmd/bouncer")
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		out, err := build.CombinedOutput()
		if err != nil {
			bouncerErr = &buildError{out: string(out), err: err}
		}
	})
	if bouncerErr != nil {
		b.Fatal(bouncerErr)
	}
	return bouncerPath
}

// benchSession connects a go-sdk client to the helpdesk, directly or
// through a real `bouncer run` process.
func benchSession(b *testing.B, proxied bool) (*mcp.ClientSession, *exec.Cmd) {
	b.Helper()
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	env := append(os.Environ(), testserver.EnvServer+"=helpdesk", testserver.EnvDir+"="+dir, "BOUNCER_HOME="+benchHome(b, dir))
	var cmd *exec.Cmd
	if proxied {
		cmd = exec.Command(bouncerBinary(b), "run", "--sandbox", "off", "--", exe)
	} else {
		cmd = exec.Command(exe)
	}
	cmd.Env = env
	return commandBenchSession(b, cmd), cmd
}

// Arguments of the two benchmarked calls: a one-word echo, and a result of
// 1 MiB of text.
var (
	trivialArgs = map[string]any{"text": "hello"}
	bigArgs     = map[string]any{"n": 1 << 20}
)

// timedCall makes one call that must succeed and returns how long it took.
func timedCall(b *testing.B, cs *mcp.ClientSession, tool string, args map[string]any) time.Duration {
	start := time.Now()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil || res.IsError {
		b.Fatalf("%s: %v %+v", tool, err, res)
	}
	return time.Since(start)
}

func benchCall(b *testing.B, proxied bool, tool string, args map[string]any) {
	cs, _ := benchSession(b, proxied)
	timedCall(b, cs, tool, args) // the first call waits for the pin; keep it out of the timing
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		timedCall(b, cs, tool, args)
	}
}

// benchPaired alternates one call on a direct session with one on a proxied
// session and reports each side's mean and their ratio. The machine's speed
// drifts between runs (a shared virtual machine, here by ±30%), which moves
// separate direct and proxied benchmarks apart; calls taken in turn share
// the drift, so the ratio is what this one is for.
func benchPaired(b *testing.B, tool string, args map[string]any) {
	direct, _ := benchSession(b, false)
	proxied, _ := benchSession(b, true)
	pairedCalls(b, direct, proxied, tool, args)
}

// pairedCalls makes b.N calls on each session, in turn, and reports each
// side's mean and their ratio. The first proxied call waits for the pin,
// so one call on each side is made before the timer starts.
func pairedCalls(b *testing.B, direct, proxied *mcp.ClientSession, tool string, args map[string]any) {
	timedCall(b, direct, tool, args)
	timedCall(b, proxied, tool, args)
	b.ResetTimer()
	var d, p time.Duration
	for i := 0; i < b.N; i++ {
		d += timedCall(b, direct, tool, args)
		p += timedCall(b, proxied, tool, args)
	}
	b.ReportMetric(float64(d.Microseconds())/float64(b.N), "direct-µs")
	b.ReportMetric(float64(p.Microseconds())/float64(b.N), "proxied-µs")
	b.ReportMetric(float64(p)/float64(d), "ratio")
}

// BenchmarkPairedTrivial and BenchmarkPairedCall1MiB are the ratios of
// BenchmarkCallTrivial and BenchmarkCall1MiB, measured in turn.
func BenchmarkPairedTrivial(b *testing.B) {
	benchPaired(b, "echo", trivialArgs)
}

func BenchmarkPairedCall1MiB(b *testing.B) {
	benchPaired(b, "big", bigArgs)
}

// BenchmarkPairedStartup alternates a direct and a proxied start (spawn and
// initialize) and reports the time the proxy adds.
func BenchmarkPairedStartup(b *testing.B) {
	bouncerBinary(b)
	start := func(proxied bool) time.Duration {
		t := time.Now()
		cs, _ := benchSession(b, proxied)
		d := time.Since(t)
		cs.Close()
		return d
	}
	start(false)
	start(true)
	b.ResetTimer()
	var d, p time.Duration
	for i := 0; i < b.N; i++ {
		d += start(false)
		p += start(true)
	}
	b.ReportMetric(float64(d.Microseconds())/1000/float64(b.N), "direct-ms")
	b.ReportMetric(float64(p.Microseconds())/1000/float64(b.N), "proxied-ms")
	b.ReportMetric((p-d).Seconds()*1000/float64(b.N), "added-ms")
}

// BenchmarkCallTrivial is one small tools/call round trip.
func BenchmarkCallTrivial(b *testing.B) {
	b.Run("direct", func(b *testing.B) { benchCall(b, false, "echo", trivialArgs) })
	b.Run("proxied", func(b *testing.B) { benchCall(b, true, "echo", trivialArgs) })
}

// BenchmarkCall1MiB is a tools/call whose result carries 1 MiB of text,
// which the proxy records as untrusted before relaying.
func BenchmarkCall1MiB(b *testing.B) {
	b.Run("direct", func(b *testing.B) { b.SetBytes(1 << 20); benchCall(b, false, "big", bigArgs) })
	b.Run("proxied", func(b *testing.B) { b.SetBytes(1 << 20); benchCall(b, true, "big", bigArgs) })
}

// BenchmarkStartup starts the server and completes initialize, directly or
// through `bouncer run`; the difference is the proxy's startup overhead.
func BenchmarkStartup(b *testing.B) {
	for _, proxied := range []bool{false, true} {
		name := "direct"
		if proxied {
			name = "proxied"
		}
		b.Run(name, func(b *testing.B) {
			if proxied {
				bouncerBinary(b)
				b.ResetTimer() // not the build
			}
			for i := 0; i < b.N; i++ {
				cs, _ := benchSession(b, proxied)
				b.StopTimer()
				cs.Close()
				b.StartTimer()
			}
		})
	}
}

// BenchmarkIdleRSS reports the resident memory of an idle `bouncer run`
// (after initialize, the pin and one call): RSS-KiB is VmRSS, anon-KiB its
// RssAnon part (heap and stacks; the rest is the binary's own pages).
func BenchmarkIdleRSS(b *testing.B) {
	var rss, anon float64
	for i := 0; i < b.N; i++ {
		cs, cmd := benchSession(b, true)
		timedCall(b, cs, "echo", trivialArgs)
		time.Sleep(200 * time.Millisecond)
		st, err := procStatus(cmd.Process.Pid)
		if err != nil {
			b.Fatal(err)
		}
		rss += float64(st["VmRSS"])
		anon += float64(st["RssAnon"])
		cs.Close()
	}
	b.ReportMetric(rss/float64(b.N), "RSS-KiB")
	b.ReportMetric(anon/float64(b.N), "anon-KiB")
}

// procStatus reads the kB fields of /proc/PID/status.
func procStatus(pid int) (map[string]int, error) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		if n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB")); err == nil {
			out[k] = n
		}
	}
	if _, ok := out["VmRSS"]; !ok {
		return nil, os.ErrNotExist
	}
	return out, sc.Err()
}

// benchHome is the state directory for a benchmark session: under
// $BENCH_HOME when set (a tmpfs there takes the audit log's fsync out of
// the figure), else in the test's temporary directory.
func benchHome(b testing.TB, dir string) string {
	if d := os.Getenv("BENCH_HOME"); d != "" {
		h, err := os.MkdirTemp(d, "home")
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { os.RemoveAll(h) })
		return h
	}
	return filepath.Join(dir, "home")
}

// remoteBenchSession connects a go-sdk client to the helpdesk served over
// streamable HTTP (one server process, on loopback): directly with the
// go-sdk's streamable client, or through a real `bouncer run --url`.
func remoteBenchSession(b *testing.B, url string, proxied bool) *mcp.ClientSession {
	b.Helper()
	if proxied {
		cmd := exec.Command(bouncerBinary(b), "run", "--sandbox", "off", "--url", url)
		cmd.Env = append(os.Environ(), "BOUNCER_HOME="+benchHome(b, b.TempDir()))
		return commandBenchSession(b, cmd)
	}
	return connectBench(b, &mcp.StreamableClientTransport{Endpoint: url, MaxEventSize: -1}, nil)
}

// commandBenchSession connects a go-sdk client to cmd over its stdio. The
// command's stderr is kept off the benchmark's own output (it would break
// its lines) and shown when the session fails.
func commandBenchSession(b *testing.B, cmd *exec.Cmd) *mcp.ClientSession {
	b.Helper()
	stderr := &syncbuf.Buffer{}
	cmd.Stderr = stderr
	return connectBench(b, &mcp.CommandTransport{Command: cmd}, stderr)
}

// connectBench connects a go-sdk client over t, showing stderr (if any)
// when that fails.
func connectBench(b *testing.B, t mcp.Transport, stderr *syncbuf.Buffer) *mcp.ClientSession {
	b.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, t, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		out := ""
		if stderr != nil {
			out = stderr.String()
		}
		b.Fatalf("%v\n%s", err, out)
	}
	b.Cleanup(func() { cs.Close() })
	return cs
}

// benchPairedRemote is benchPaired for a remote upstream: a call through
// `bouncer run --url` against the same call made directly, in turn, to
// the same loopback server.
func benchPairedRemote(b *testing.B, tool string, args map[string]any) {
	url, _ := startHTTPServer(b, b.TempDir(), "streamable", "")
	direct := remoteBenchSession(b, url, false)
	proxied := remoteBenchSession(b, url, true)
	pairedCalls(b, direct, proxied, tool, args)
}

// BenchmarkPairedRemoteTrivial and BenchmarkPairedRemoteCall1MiB: a
// proxied remote call against a direct one (targets: ≤1.3× and ≤1.25×).
func BenchmarkPairedRemoteTrivial(b *testing.B) {
	benchPairedRemote(b, "echo", trivialArgs)
}

func BenchmarkPairedRemoteCall1MiB(b *testing.B) {
	benchPairedRemote(b, "big", bigArgs)
}
