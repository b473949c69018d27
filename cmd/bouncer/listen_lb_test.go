package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bouncer-mcp/bouncer/internal/testsupport/need"
	"github.com/bouncer-mcp/bouncer/internal/testsupport/syncbuf"
)

// replica is one bouncer listen process.
type replica struct {
	name, addr string
	cmd        *exec.Cmd
	stderr     *syncbuf.Buffer
}

// startReplicas starts bouncer-0 and bouncer-1 with the same config, each
// with a state directory of its own, and waits until both are ready.
func startReplicas(t *testing.T, lt *listenTest) []*replica {
	cfgFile, pol := lt.writeConfig(nil, `{"replica": null}`)
	var rs []*replica
	for i := range 2 {
		r := &replica{name: fmt.Sprintf("bouncer-%d", i), addr: freeAddr(t), stderr: &syncbuf.Buffer{}}
		r.cmd = exec.Command("bouncer", "listen", "--config", cfgFile, "--policy", pol, "--home", t.TempDir(),
			"--sandbox", "off", "--addr", r.addr)
		r.cmd.Env = append(os.Environ(), "BOUNCER_REPLICA="+r.name)
		r.cmd.Stderr = r.stderr
		if err := r.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.cmd.Process.Kill(); r.cmd.Wait() })
		rs = append(rs, r)
	}
	for _, r := range rs {
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			resp, err := http.Get("http://" + r.addr + "/readyz")
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == 200 {
					break
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s never ready:\n%s", r.name, r.stderr.String())
			}
		}
	}
	return rs
}

// recipe reads a recipe from deploy/ with the replicas' and the
// balancer's addresses put in place of its example ones.
func recipe(t *testing.T, path string, rs []*replica, front string) string {
	data, err := os.ReadFile(filepath.Join("..", "..", "deploy", path))
	if err != nil {
		t.Fatal(err)
	}
	return strings.NewReplacer("127.0.0.1:18081", rs[0].addr, "127.0.0.1:18082", rs[1].addr,
		"127.0.0.1:18080", front, "127.0.0.1:18090", front).Replace(string(data))
}

// TestListenBehindNginx and TestListenBehindHAProxy run two replicas of
// the real bouncer listen behind the real balancer with the recipe from
// deploy/, and kill one with SIGKILL: its clients get 404 for their
// sessions (not an error of the balancer's) and initialize again on the
// other replica, and the other replica's sessions never see an error.
func TestListenBehindNginx(t *testing.T) {
	nginx := need.Program(t, "nginx", "apt-get install nginx", "/usr/sbin/nginx")
	lt := &listenTest{t: t, home: t.TempDir(), dir: t.TempDir(), tokens: map[string]string{}}
	rs := startReplicas(t, lt)
	front := freeAddr(t)
	dir := t.TempDir()
	conf := filepath.Join(dir, "nginx.conf")
	main := fmt.Sprintf("worker_processes 1;\npid %s/nginx.pid;\nerror_log %s/error.log;\ndaemon off;\nevents {}\nhttp {\naccess_log off;\nclient_body_temp_path %s;\nproxy_temp_path %s;\n%s\n}\n",
		dir, dir, dir, dir, recipe(t, "nginx/bouncer.conf", rs, front))
	if err := os.WriteFile(conf, []byte(main), 0o600); err != nil {
		t.Fatal(err)
	}
	lb := exec.Command(nginx, "-c", conf, "-p", dir)
	lb.Stderr = &syncbuf.Buffer{}
	if err := lb.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lb.Process.Kill(); lb.Wait() })
	failover(t, lt, rs, front, 0)
}

func TestListenBehindHAProxy(t *testing.T) {
	haproxy := need.Program(t, "haproxy", "apt-get install haproxy", "/usr/sbin/haproxy")
	lt := &listenTest{t: t, home: t.TempDir(), dir: t.TempDir(), tokens: map[string]string{}}
	rs := startReplicas(t, lt)
	front := freeAddr(t)
	cfg := filepath.Join(t.TempDir(), "haproxy.cfg")
	if err := os.WriteFile(cfg, []byte(recipe(t, "haproxy/haproxy.cfg", rs, front)), 0o600); err != nil {
		t.Fatal(err)
	}
	lb := exec.Command(haproxy, "-f", cfg, "-db")
	lb.Stderr = &syncbuf.Buffer{}
	if err := lb.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lb.Process.Kill(); lb.Wait() })
	// HAProxy learns a replica is gone from its health check (500 ms).
	failover(t, lt, rs, front, 1500*time.Millisecond)
}

// failover opens sessions through the balancer until each replica has
// some, kills bouncer-0, and checks what each client sees.
func failover(t *testing.T, lt *listenTest, rs []*replica, front string, settle time.Duration) {
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		resp, err := http.Get("http://" + front + "/livez")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the balancer never answered")
		}
	}
	lt.srv = nil
	type sess struct {
		cs *mcp.ClientSession
		on string
	}
	var ss []sess
	on := map[string]int{}
	for i := 0; i < 12 && (on["bouncer-0"] < 2 || on["bouncer-1"] < 2); i++ {
		cs := lbClient(t, lt, front)
		r, _, _ := strings.Cut(cs.ID(), ".")
		on[r]++
		ss = append(ss, sess{cs, r})
	}
	if on["bouncer-0"] == 0 || on["bouncer-1"] == 0 {
		t.Fatalf("sessions per replica: %v; the balancer sent every initialize to one", on)
	}
	for _, s := range ss {
		if text, isErr := call(t, s.cs, "echo", map[string]any{"text": "before"}); isErr || text != "before" {
			t.Fatalf("echo on %s: %q", s.on, text)
		}
	}
	if err := rs[0].cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	rs[0].cmd.Wait()
	time.Sleep(settle)
	for _, s := range ss {
		if s.on == "bouncer-1" {
			// The surviving replica's sessions: no error, ever.
			for range 3 {
				if text, isErr := call(t, s.cs, "echo", map[string]any{"text": "after"}); isErr || text != "after" {
					t.Fatalf("a bouncer-1 session after bouncer-0 died: %q", text)
				}
			}
			continue
		}
		// The lost replica's sessions: 404 for the session, through the
		// balancer, then a new session on bouncer-1.
		st := lbPing(t, lt, front, s.cs.ID())
		if st != http.StatusNotFound {
			t.Fatalf("a bouncer-0 session's request after bouncer-0 died: %d, want 404 (the client then initializes again)", st)
		}
		cs := lbClient(t, lt, front)
		if r, _, _ := strings.Cut(cs.ID(), "."); r != "bouncer-1" {
			t.Fatalf("the new session is on %q", r)
		}
		if text, isErr := call(t, cs, "echo", map[string]any{"text": "again"}); isErr || text != "again" {
			t.Fatalf("echo on the new session: %q", text)
		}
	}
}

func lbClient(t *testing.T, lt *listenTest, front string) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "lb-test", Version: "1"}, nil)
	tr := &mcp.StreamableClientTransport{Endpoint: "http://" + front + "/mcp", DisableStandaloneSSE: true, MaxRetries: -1,
		HTTPClient: &http.Client{Transport: bearerTransport{token: lt.tokens["alice"]}}}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("connect through the balancer: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func lbPing(t *testing.T, lt *listenTest, front, sid string) int {
	req, _ := http.NewRequest(http.MethodPost, "http://"+front+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":99,"method":"ping"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	resp, err := (&http.Client{Transport: bearerTransport{token: lt.tokens["alice"]}}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
