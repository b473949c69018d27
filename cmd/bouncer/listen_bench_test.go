package main

// bouncer listen's benchmarks, each paired in the same run with its floor
// (docs/listen.md, "Performance", has the figures and the commands):
//
//   - session setup with a stdio server, against spawnBridge: a
//     spawn-per-session bridge that judges nothing;
//   - session setup with a remote server, and calls at 50 concurrent
//     sessions (a trivial one, a 1 MiB result), against
//     httputil.ReverseProxy in front of the same server;
//   - the Go heap an idle session holds, over 5,000 sessions;
//   - how long readiness takes to fail after SIGTERM.
//
// Every arm is reached by the same go-sdk client over the same kind of
// HTTP client; sub-benchmarks are named impl=… so that benchstat compares
// them with -col /impl.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bouncer-mcp/bouncer/internal/testsupport/syncbuf"
	"github.com/bouncer-mcp/bouncer/internal/testsupport/testserver"
)

// benchLimits lifts the listener's limits out of the benchmarks' way.
const benchLimits = `{"limits": {"sessions": 100000, "sessions_per_user": 100000, "processes_per_user": 100000, "spawn_rate": 100000, "spawn_burst": 100000}}`

// benchHTTP is every arm's HTTP client: enough keep-alive connections for
// 50 sessions at once, so no arm pays for new connections the others
// don't.
func benchHTTP(token string) *http.Client {
	return &http.Client{Transport: bearerTransport{token, &http.Transport{MaxIdleConns: 512, MaxIdleConnsPerHost: 512, IdleConnTimeout: time.Minute}}}
}

// benchConnect opens a session at endpoint, as the tests' clients do: no
// GET stream, no retries.
func benchConnect(b *testing.B, endpoint string, hc *http.Client) *mcp.ClientSession {
	c := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc, DisableStandaloneSSE: true, MaxRetries: -1}, nil)
	if err != nil {
		b.Fatal(err)
	}
	return cs
}

// benchCall calls tool and fails the benchmark on an error result.
func benchCall(b *testing.B, cs *mcp.ClientSession, tool string, args map[string]any) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		b.Error(err)
		return
	}
	if res.IsError {
		b.Errorf("%s: %v", tool, res.Content)
	}
}

// buildHelpdesk builds the stdio helpdesk as a program of its own
// (internal/testsupport/testserver/helpdesk) into dir and returns its
// path. The stdio arms start it rather than this test binary re-executed:
// a 45 MB test binary takes about 55 ms of CPU to start, the small one
// about 30, and a setup rate should measure the listener, not the test
// binary's start-up. Both arms start the same program.
func buildHelpdesk(b *testing.B, dir string) string {
	bin := dir + "/helpdesk"
	cmd := exec.Command("go", "build", "-o", bin, "github.com/bouncer-mcp/bouncer/internal/testsupport/testserver/helpdesk")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("building the helpdesk: %v\n%s", err, out)
	}
	return bin
}

// helpdeskStdio is the command of the stdio helpdesk bin, as the bridge
// starts it, with its side effects in a directory of its own.
func helpdeskStdio(b *testing.B, bin string) *exec.Cmd {
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), testserver.EnvDir+"="+b.TempDir())
	return cmd
}

// helpdeskHTTP starts the helpdesk over streamable HTTP in a process of
// its own (so that its heap and its garbage are not the listener's) and
// returns its endpoint.
func helpdeskHTTP(b *testing.B) string {
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), testserver.EnvServer+"=helpdesk-http", testserver.EnvDir+"="+b.TempDir())
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		b.Fatal(err)
	}
	return strings.TrimSpace(line)
}

// reverseProxy is the floor of a remote server: httputil.ReverseProxy in
// front of it, streaming events as they come; it returns its endpoint.
func reverseProxy(b *testing.B, upstream string) string {
	u, err := url.Parse(upstream)
	if err != nil {
		b.Fatal(err)
	}
	p := &httputil.ReverseProxy{
		Rewrite:       func(r *httputil.ProxyRequest) { r.SetURL(&url.URL{Scheme: u.Scheme, Host: u.Host}) },
		FlushInterval: -1,
		Transport:     &http.Transport{MaxIdleConns: 512, MaxIdleConnsPerHost: 512, IdleConnTimeout: time.Minute},
	}
	srv := httptest.NewServer(p)
	b.Cleanup(srv.Close)
	return srv.URL + u.Path
}

// spawnBridge is the floor of a stdio server: streamable HTTP in front of
// a process per session, judging nothing. An initialize starts the
// process; each POST's message goes to its stdin, and a request's answer
// is read from its stdout and sent back as JSON; DELETE kills it.
type spawnBridge struct {
	cmd func() *exec.Cmd

	mu       sync.Mutex
	sessions map[string]*bridged
	next     int
}

type bridged struct {
	cmd  *exec.Cmd
	in   io.WriteCloser
	mu   sync.Mutex
	wait map[string]chan []byte // by request id, as JSON
}

func (br *spawnBridge) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	sid := r.Header.Get("Mcp-Session-Id")
	br.mu.Lock()
	s := br.sessions[sid]
	br.mu.Unlock()
	switch {
	case r.Method == http.MethodDelete && s != nil:
		br.mu.Lock()
		delete(br.sessions, sid)
		br.mu.Unlock()
		s.cmd.Process.Kill()
		go s.cmd.Wait()
		w.WriteHeader(http.StatusNoContent)
		return
	case r.Method != http.MethodPost:
		http.Error(w, "no", http.StatusMethodNotAllowed)
		return
	case sid == "":
		var err error
		if s, err = br.start(); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		br.mu.Lock()
		br.next++
		sid = fmt.Sprint("s", br.next)
		br.sessions[sid] = s
		br.mu.Unlock()
	case s == nil:
		http.Error(w, "no such session", http.StatusNotFound)
		return
	}
	body, _ := io.ReadAll(r.Body)
	var msg struct{ ID json.RawMessage }
	_ = json.Unmarshal(body, &msg)
	var ch chan []byte
	if len(msg.ID) > 0 {
		ch = make(chan []byte, 1)
		s.mu.Lock()
		s.wait[string(msg.ID)] = ch
		s.mu.Unlock()
	}
	s.in.Write(append(body, '\n'))
	w.Header().Set("Mcp-Session-Id", sid)
	if ch == nil {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	select {
	case answer := <-ch:
		w.Header().Set("Content-Type", "application/json")
		w.Write(answer)
	case <-r.Context().Done():
	}
}

func (br *spawnBridge) start() (*bridged, error) {
	cmd := br.cmd()
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &bridged{cmd: cmd, in: in, wait: map[string]chan []byte{}}
	go func() {
		rd := bufio.NewReaderSize(out, 64<<10)
		for {
			line, err := rd.ReadBytes('\n')
			if err != nil {
				return
			}
			var msg struct {
				ID     json.RawMessage
				Method string
			}
			if json.Unmarshal(line, &msg) != nil || msg.Method != "" {
				continue // the server's own requests and notifications
			}
			s.mu.Lock()
			ch := s.wait[string(msg.ID)]
			delete(s.wait, string(msg.ID))
			s.mu.Unlock()
			if ch != nil {
				ch <- line
			}
		}
	}()
	return s, nil
}

// cpuNow is the CPU time this process has used, user and system: the
// client's and the listener's (or the floor's), not the servers', which
// are processes of their own. On a shared machine it is steadier than the
// wall clock; benchmarks report it per op as cpu-ms/op.
func cpuNow() time.Duration { return rusage(syscall.RUSAGE_SELF) }

// childCPUNow is the CPU time of this process's children that have exited
// and been waited for: the stdio servers, one per session. Benchmarks of
// a stdio server report it per op as child-cpu-ms/op, since the servers'
// CPU, on the same cores, bounds how many sessions a second start.
// childCPUNow is the CPU of this process's children: those waited for,
// and those still running with what they have waited for. The spawner
// (sandbox.Spawner) runs until the listener closes and waits for the
// confined servers itself, so without the second part their CPU would not
// show until then.
func childCPUNow() time.Duration { return rusage(syscall.RUSAGE_CHILDREN) + liveChildrenCPU() }

// liveChildrenCPU sums utime, stime, cutime and cstime of this process's
// running children (/proc/PID/stat).
func liveChildrenCPU() time.Duration {
	ents, _ := os.ReadDir("/proc")
	me := os.Getpid()
	var ticks int64
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// The fields after the command, which is in parentheses.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		// f[0] is field 3 (state): ppid is field 4, utime to cstime 14–17.
		if len(f) < 15 || f[1] != strconv.Itoa(me) {
			continue
		}
		for _, v := range f[11:15] {
			n, _ := strconv.ParseInt(v, 10, 64)
			ticks += n
		}
	}
	return time.Duration(ticks) * time.Second / 100 // USER_HZ
}

func rusage(who int) time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(who, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkListenSetup times a session from initialize to its first call
// answered, and its end (DELETE): with a stdio server, bouncer listen
// against spawnBridge; with a remote one, against httputil.ReverseProxy.
// One session after another (connect-ms, call-ms and close-ms split the
// time), and for a stdio server also 8 clients at once (stdio-8), whose
// sessions/s is what the machine can start.
func BenchmarkListenSetup(b *testing.B) {
	echo := map[string]any{"text": "hi"}
	run := func(b *testing.B, endpoint string, hc *http.Client) {
		var tc, tk, tx time.Duration
		cpu, child := cpuNow(), childCPUNow()
		for b.Loop() {
			t0 := time.Now()
			cs := benchConnect(b, endpoint, hc)
			t1 := time.Now()
			benchCall(b, cs, "echo", echo)
			t2 := time.Now()
			cs.Close()
			tc += t1.Sub(t0)
			tk += t2.Sub(t1)
			tx += time.Since(t2)
		}
		b.ReportMetric(float64(tc.Milliseconds())/float64(b.N), "connect-ms")
		b.ReportMetric(float64(tk.Milliseconds())/float64(b.N), "call-ms")
		b.ReportMetric(float64(tx.Milliseconds())/float64(b.N), "close-ms")
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "sessions/s")
		b.ReportMetric((cpuNow()-cpu).Seconds()*1000/float64(b.N), "cpu-ms/op")
		b.ReportMetric((childCPUNow()-child).Seconds()*1000/float64(b.N), "child-cpu-ms/op")
	}
	// Sessions set up by 8 clients at once: what the two cores can start.
	parallel := func(b *testing.B, endpoint string, hc *http.Client) {
		b.SetParallelism(max(1, 8/runtime.GOMAXPROCS(0)))
		cpu, child := cpuNow(), childCPUNow()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				cs := benchConnect(b, endpoint, hc)
				benchCall(b, cs, "echo", echo)
				cs.Close()
			}
		})
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "sessions/s")
		b.ReportMetric((cpuNow()-cpu).Seconds()*1000/float64(b.N), "cpu-ms/op")
		b.ReportMetric((childCPUNow()-child).Seconds()*1000/float64(b.N), "child-cpu-ms/op")
	}
	bin := buildHelpdesk(b, b.TempDir())
	bridge := func(b *testing.B) string {
		br := &spawnBridge{cmd: func() *exec.Cmd { return helpdeskStdio(b, bin) }, sessions: map[string]*bridged{}}
		srv := httptest.NewServer(br)
		b.Cleanup(srv.Close)
		return srv.URL + "/mcp"
	}
	// The listener's stdio server is the same program; sandbox is its
	// --sandbox: off for the rows paired with the bridge, which confines
	// nothing, and auto for the impl=confined rows, which pay for a
	// confined start (through the spawner, sandbox.Spawner).
	listener := func(b *testing.B, sandbox string) *listenTest {
		servers := map[string]any{"helpdesk": map[string]any{
			"command": bin,
			"env":     map[string]string{testserver.EnvDir: b.TempDir()},
		}}
		lt := startListenTestIn(b, b.TempDir(), sandbox, servers, benchLimits)
		lt.waitPinned()
		return lt
	}
	b.Run("stdio/impl=listen", func(b *testing.B) {
		lt := listener(b, "off")
		run(b, lt.srv.URL+"/mcp", benchHTTP(lt.tokens["alice"]))
	})
	b.Run("stdio/impl=bridge", func(b *testing.B) { run(b, bridge(b), benchHTTP("")) })
	b.Run("stdio/impl=confined", func(b *testing.B) {
		lt := listener(b, "auto")
		run(b, lt.srv.URL+"/mcp", benchHTTP(lt.tokens["alice"]))
	})
	b.Run("stdio-8/impl=listen", func(b *testing.B) {
		lt := listener(b, "off")
		parallel(b, lt.srv.URL+"/mcp", benchHTTP(lt.tokens["alice"]))
	})
	b.Run("stdio-8/impl=bridge", func(b *testing.B) { parallel(b, bridge(b), benchHTTP("")) })
	b.Run("stdio-8/impl=confined", func(b *testing.B) {
		lt := listener(b, "auto")
		parallel(b, lt.srv.URL+"/mcp", benchHTTP(lt.tokens["alice"]))
	})
	upstream := helpdeskHTTP(b)
	b.Run("remote/impl=listen", func(b *testing.B) {
		lt := newListenTestServers(b, map[string]any{"remote": map[string]any{"url": upstream}}, benchLimits)
		run(b, lt.srv.URL+"/mcp", benchHTTP(lt.tokens["alice"]))
	})
	b.Run("remote/impl=proxy", func(b *testing.B) {
		run(b, reverseProxy(b, upstream), benchHTTP(""))
	})
}

// benchSessions is how many sessions call at once in BenchmarkListenCall.
const benchSessions = 50

// BenchmarkListenCall times calls through bouncer listen and through
// httputil.ReverseProxy, in front of the same remote server: a trivial
// call (echo) from 50 sessions at once, each calling as soon as its last
// call is answered, and a call whose result is 1 MiB (big) from one
// session. ns/op is the time per call of all the sessions together;
// lat-ms is each call's own time, averaged (with 50 sessions always
// busy, 50 × ns/op, as long as b.N is well above 50).
func BenchmarkListenCall(b *testing.B) {
	upstream := helpdeskHTTP(b)
	for _, c := range []struct {
		name     string
		sessions int
		tool     string
		args     map[string]any
	}{
		{"trivial-50", benchSessions, "echo", map[string]any{"text": "hi"}},
		{"1MiB", 1, "big", map[string]any{"n": 1 << 20}},
	} {
		run := func(b *testing.B, endpoint string, hc *http.Client) {
			sessions := make(chan *mcp.ClientSession, c.sessions)
			for range c.sessions {
				cs := benchConnect(b, endpoint, hc)
				benchCall(b, cs, c.tool, c.args) // the session is pinned, the connection warm
				sessions <- cs
			}
			defer func() {
				close(sessions)
				for cs := range sessions {
					cs.Close()
				}
			}()
			var mu sync.Mutex
			var total time.Duration
			procs := runtime.GOMAXPROCS(0)
			b.SetParallelism((c.sessions + procs - 1) / procs)
			b.ResetTimer()
			cpu := cpuNow()
			b.RunParallel(func(pb *testing.PB) {
				cs := <-sessions
				defer func() { sessions <- cs }()
				var mine time.Duration
				for pb.Next() {
					start := time.Now()
					benchCall(b, cs, c.tool, c.args)
					mine += time.Since(start)
				}
				mu.Lock()
				total += mine
				mu.Unlock()
			})
			b.StopTimer()
			b.ReportMetric((cpuNow()-cpu).Seconds()*1000/float64(b.N), "cpu-ms/op")
			b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "lat-ms")
		}
		b.Run(c.name+"/impl=listen", func(b *testing.B) {
			lt := newListenTestServers(b, map[string]any{"remote": map[string]any{"url": upstream}}, benchLimits)
			run(b, lt.srv.URL+"/mcp", benchHTTP(lt.tokens["alice"]))
		})
		b.Run(c.name+"/impl=proxy", func(b *testing.B) {
			run(b, reverseProxy(b, upstream), benchHTTP(""))
		})
	}
}

// idleSessions is how many sessions BenchmarkListenIdleHeap holds.
const idleSessions = 5000

// BenchmarkListenIdleHeap measures the Go heap (and goroutine stacks) an
// idle session holds in bouncer listen: 5,000 sessions of a remote server
// (in a process of its own), each initialized, pinned and with one call
// answered, then idle, with the client's connections closed. The clients
// here are plain HTTP requests, so the heap measured is the listener's.
// Run it with -benchtime=1x: each op opens and measures 5,000 sessions.
func BenchmarkListenIdleHeap(b *testing.B) {
	upstream := helpdeskHTTP(b)
	lt := newListenTestServers(b, map[string]any{"remote": map[string]any{"url": upstream}}, benchLimits)
	hc := benchHTTP(lt.tokens["alice"])
	post := func(sid, body string) (string, error) {
		req, _ := http.NewRequest(http.MethodPost, lt.srv.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
			req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		}
		resp, err := hc.Do(req)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		if resp.StatusCode/100 != 2 {
			return "", fmt.Errorf("%d %s", resp.StatusCode, data)
		}
		return resp.Header.Get("Mcp-Session-Id"), nil
	}
	open := func() (string, error) {
		sid, err := post("", initBody)
		if err != nil {
			return "", err
		}
		if _, err := post(sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); err != nil {
			return "", err
		}
		_, err = post(sid, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`)
		return sid, err
	}
	heap := func() (heap, stack uint64) {
		hc.CloseIdleConnections()
		time.Sleep(200 * time.Millisecond) // the server's side of them closes
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc, m.StackInuse
	}
	var perHeap, perStack float64
	for b.Loop() {
		h0, s0 := heap()
		ids := make([]string, idleSessions)
		var wg sync.WaitGroup
		errs := make(chan error, idleSessions)
		work := make(chan int)
		for range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range work {
					sid, err := open()
					if err != nil {
						errs <- err
						return
					}
					ids[i] = sid
				}
			}()
		}
		for i := range idleSessions {
			work <- i
		}
		close(work)
		wg.Wait()
		close(errs)
		if err := <-errs; err != nil {
			b.Fatal(err)
		}
		h1, s1 := heap()
		perHeap = (float64(h1) - float64(h0)) / idleSessions
		perStack = (float64(s1) - float64(s0)) / idleSessions
		for _, sid := range ids {
			req, _ := http.NewRequest(http.MethodDelete, lt.srv.URL+"/mcp", nil)
			req.Header.Set("Mcp-Session-Id", sid)
			if resp, err := hc.Do(req); err == nil {
				resp.Body.Close()
			}
		}
	}
	b.ReportMetric(perHeap/1024, "heap-KiB/session")
	b.ReportMetric(perStack/1024, "stack-KiB/session")
}

// BenchmarkListenReadyAfterSIGTERM times the real bouncer listen process
// from SIGTERM to its first /readyz that is not 200 (polled every
// millisecond); the start before it is not timed.
func BenchmarkListenReadyAfterSIGTERM(b *testing.B) {
	lt := &listenTest{t: b, home: b.TempDir(), dir: b.TempDir(), tokens: map[string]string{}}
	cfgFile, pol := lt.writeConfig(nil, "")
	hc := &http.Client{Timeout: 5 * time.Second}
	ready := func(addr string) bool {
		resp, err := hc.Get("http://" + addr + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	}
	b.StopTimer()
	for i := 0; i < b.N; i++ {
		addr := freeAddr(b)
		cmd := exec.Command("bouncer", "listen", "--config", cfgFile, "--policy", pol, "--home", b.TempDir(), "--sandbox", "off", "--addr", addr)
		var stderr syncbuf.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		for deadline := time.Now().Add(60 * time.Second); !ready(addr); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				cmd.Process.Kill()
				b.Fatalf("never ready:\n%s", stderr.String())
			}
		}
		b.StartTimer()
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			b.Fatal(err)
		}
		for ready(addr) {
			time.Sleep(time.Millisecond)
		}
		b.StopTimer()
		if err := cmd.Wait(); err != nil {
			b.Fatalf("bouncer listen after SIGTERM: %v\n%s", err, stderr.String())
		}
	}
}

// BenchmarkListenUnderAttack times a well-behaved session's trivial call
// (one after another) with nobody else there (impl=quiet), and while
// hostile clients run, each kind alone and all together (impl=attack):
// slowloris, 200 connections dripping their headers a byte every 100 ms
// (opened again when the header timeout closes them); flood, two clients
// of another user posting initializes past their session limit (429) as
// fast as they are answered; oversized, two more posting 100 KB bodies
// (413). The hostile clients run in this process, on the same two cores
// as the listener and the well-behaved client, as an attacker's traffic
// would reach a small replica. hostile/s is how many hostile requests were
// answered meanwhile.
func BenchmarkListenUnderAttack(b *testing.B) {
	for _, mode := range []string{"quiet", "slowloris", "flood", "oversized", "attack"} {
		b.Run("impl="+mode, func(b *testing.B) {
			lt := newListenTest(b, `{"limits": {"sessions_per_user": 5, "max_body": 65536}}`)
			cs := benchConnect(b, lt.srv.URL+"/mcp", benchHTTP(lt.tokens["bob"]))
			defer cs.Close()
			echo := map[string]any{"text": "hi"}
			benchCall(b, cs, "echo", echo)
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			var hostile atomic.Int64
			if mode == "slowloris" || mode == "attack" {
				host := strings.TrimPrefix(lt.srv.URL, "http://")
				for range 200 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for ctx.Err() == nil {
							c, err := net.Dial("tcp", host)
							if err != nil {
								return
							}
							fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: %s\r\nX-Drip: ", host)
							for ctx.Err() == nil {
								time.Sleep(100 * time.Millisecond)
								if _, err := c.Write([]byte("a")); err != nil {
									break // closed at the header timeout
								}
							}
							c.Close()
						}
					}()
				}
			}
			hc := benchHTTP(lt.tokens["alice"])
			big := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"pad":"` + strings.Repeat("x", 100000) + `"}}`
			post := func(body string) {
				defer wg.Done()
				for ctx.Err() == nil {
					req, _ := http.NewRequestWithContext(ctx, http.MethodPost, lt.srv.URL+"/mcp", strings.NewReader(body))
					req.Header.Set("Content-Type", "application/json")
					req.Header.Set("Accept", "application/json, text/event-stream")
					resp, err := hc.Do(req)
					if err != nil {
						continue
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					hostile.Add(1)
				}
			}
			for range 2 {
				if mode == "flood" || mode == "attack" {
					wg.Add(1)
					go post(initBody)
				}
				if mode == "oversized" || mode == "attack" {
					wg.Add(1)
					go post(big)
				}
			}
			if mode != "quiet" {
				time.Sleep(time.Second) // the attack is under way
			}
			start := hostile.Load()
			b.ResetTimer()
			for b.Loop() {
				benchCall(b, cs, "echo", echo)
			}
			b.StopTimer()
			b.ReportMetric(float64(hostile.Load()-start)/b.Elapsed().Seconds(), "hostile/s")
			cancel()
			wg.Wait()
		})
	}
}
