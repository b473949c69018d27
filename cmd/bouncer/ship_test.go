package main

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
	collogpb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	"google.golang.org/protobuf/proto"

	"github.com/bouncer-mcp/bouncer/internal/audit"
)

func init() { scriptCmds["collector"] = scriptCollector }

// scriptCollector starts an OTLP/HTTP endpoint on loopback (a net/http
// server) for the rest of the script, answering as MODE says, and writes
// FILE: a trust file whose audit_ship names it, with the headers
// Authorization "Bearer ${BOUNCER_TEST_SHIP_TOKEN}" and X-Api-Key
// "${BOUNCER_TEST_SHIP_KEY}".
//
//	collector redirect FILE  answers 307 to another origin, which writes each request it gets to elsewhere.log
//	collector echo401 FILE   answers 401 with a body that echoes the credentials it got
//	collector partial FILE   answers 200 with a partial success that rejects every record, its message echoing the token
func scriptCollector(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: collector redirect|echo401|partial FILE")
	}
	var h http.HandlerFunc
	switch args[0] {
	case "redirect":
		log := ts.MkAbs("elsewhere.log")
		var mu sync.Mutex
		elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			defer mu.Unlock()
			f, err := os.OpenFile(log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
			if err == nil {
				fmt.Fprintf(f, "%s %s Authorization=%q X-Api-Key=%q\n", r.Method, r.URL.Path, r.Header.Get("Authorization"), r.Header.Get("X-Api-Key"))
				f.Close()
			}
		}))
		ts.Defer(elsewhere.Close)
		h = func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, elsewhere.URL+r.URL.Path, http.StatusTemporaryRedirect)
		}
	case "echo401":
		h = func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprintf(w, "refused Authorization: %s\nX-Api-Key: %s\n", r.Header.Get("Authorization"), r.Header.Get("X-Api-Key"))
		}
	case "partial":
		h = func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			var req collogpb.ExportLogsServiceRequest
			if r.URL.Path != "/v1/logs" || proto.Unmarshal(body, &req) != nil {
				return
			}
			n := 0
			for _, rl := range req.ResourceLogs {
				for _, sl := range rl.ScopeLogs {
					n += len(sl.LogRecords)
				}
			}
			ans, _ := proto.Marshal(&collogpb.ExportLogsServiceResponse{PartialSuccess: &collogpb.ExportLogsPartialSuccess{
				RejectedLogRecords: int64(n), ErrorMessage: "timestamp too old\nfor " + r.Header.Get("Authorization")}})
			w.Header().Set("Content-Type", "application/x-protobuf")
			w.Write(ans)
		}
	default:
		ts.Fatalf("collector: unknown mode %q", args[0])
	}
	srv := httptest.NewServer(h)
	ts.Defer(srv.Close)
	trust := "audit_ship:\n  otlp: " + srv.URL + "\n  headers: {Authorization: \"Bearer ${BOUNCER_TEST_SHIP_TOKEN}\", X-Api-Key: \"${BOUNCER_TEST_SHIP_KEY}\"}\n"
	ts.Check(os.WriteFile(ts.MkAbs(args[1]), []byte(trust), 0o600))
}

// The exit statuses of bouncer audit ship: 2 for configuration and usage
// (no audit_ship above all), 1 for a destination --once could not reach.
func TestAuditShipExitStatus(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	plain := write("plain.yaml", "require_signed: false\n")
	bad := write("bad.yaml", "audit_ship:\n  syslog: udp://127.0.0.1:514\n")
	env := write("env.yaml", "audit_ship:\n  otlp: http://127.0.0.1:9\n  headers: {X-T: \"${BOUNCER_TEST_UNSET_VAR}\"}\n")
	down := write("down.yaml", "audit_ship:\n  syslog: tcp://127.0.0.1:9\n")
	emptyHome := t.TempDir()
	home := t.TempDir()
	l, err := audit.Open(filepath.Join(home, "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	l.Append(audit.Entry{Server: "s", Tool: "t", Args: []byte(`{}`), Verdict: "allow", Rule: "default"})
	l.Close()
	for _, c := range []struct {
		name string
		args []string
		want int
	}{
		{"help", []string{"--help"}, exitOK},
		{"no trust at all", []string{"--home", emptyHome, "--once"}, exitUsage},
		{"no audit_ship", []string{"--home", emptyHome, "--trust", plain, "--once"}, exitUsage},
		{"bad audit_ship", []string{"--home", emptyHome, "--trust", bad, "--once"}, exitUsage},
		{"unset variable", []string{"--home", emptyHome, "--trust", env, "--once"}, exitUsage},
		{"extra argument", []string{"--home", emptyHome, "--trust", down, "x"}, exitUsage},
		{"nothing to ship", []string{"--home", emptyHome, "--trust", down, "--once"}, exitOK},
		{"unreachable", []string{"--home", home, "--trust", down, "--once"}, exitFail},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := dispatch(append([]string{"audit", "ship"}, c.args...)); got != c.want {
				t.Fatalf("exit %d, want %d", got, c.want)
			}
		})
	}
}

// Without --once the shipper follows the log until SIGTERM, then exits 0.
func TestAuditShipSIGTERM(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The test binary acts as bouncer when called by that name (TestMain).
	bin := filepath.Join(t.TempDir(), "bouncer")
	if err := os.Symlink(exe, bin); err != nil {
		t.Fatal(err)
	}
	// A syslog receiver that reads each connection to its end and closes.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var mu sync.Mutex
	var got bytes.Buffer
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			b, _ := io.ReadAll(c)
			mu.Lock()
			got.Write(b)
			mu.Unlock()
			c.Close()
		}
	}()
	home := t.TempDir()
	trust := filepath.Join(home, "trust.yaml")
	os.WriteFile(trust, []byte("audit_ship:\n  syslog: tcp://"+ln.Addr().String()+"\n"), 0o600)
	l, err := audit.Open(filepath.Join(home, "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	l.Append(audit.Entry{Server: "s", Tool: "first", Args: []byte(`{}`), Verdict: "allow", Rule: "default"})

	cmd := exec.Command(bin, "audit", "ship", "--home", home)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	received := func(s string) bool {
		mu.Lock()
		defer mu.Unlock()
		return strings.Contains(got.String(), s)
	}
	deadline := time.Now().Add(20 * time.Second)
	// It follows the log: a line written after it started arrives too.
	for !received(`"tool":"first"`) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	l.Append(audit.Entry{Server: "s", Tool: "second", Args: []byte(`{}`), Verdict: "deny", Rule: "sink"})
	for !received(`"tool":"second"`) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if !received(`"tool":"second"`) {
		t.Fatalf("the receiver did not get both lines; stderr:\n%s", stderr.String())
	}
	cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("after SIGTERM: %v; stderr:\n%s", err, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("still running 10s after SIGTERM; stderr:\n%s", stderr.String())
	}
	if !strings.Contains(stderr.String(), "bouncer: audit ship: shipping "+filepath.Join(home, "audit.jsonl")+" to syslog tcp://") {
		t.Fatalf("stderr:\n%s", stderr.String())
	}
}
