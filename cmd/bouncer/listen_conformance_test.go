package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bouncer-mcp/bouncer/internal/testsupport/need"
	"github.com/bouncer-mcp/bouncer/internal/testsupport/syncbuf"
)

// The MCP conformance suite's scenarios about the transport: bouncer
// listen's own streamable HTTP, which must pass every check of them.
var listenTransportScenarios = []string{
	"server-initialize", "ping", "server-session-lifecycle", "dns-rebinding-protection", "server-sse-multiple-streams",
}

// listenConformanceChanges are the checks whose outcome bouncer listen
// changes on purpose, against a direct run of the same server: scenario
// and check id → the status listen gets ("": the suite does not make the
// check, and says so only in an INFO line), and why. docs/listen.md lists
// them too.
var listenConformanceChanges = map[string]struct{ status, why string }{
	// A call's answer, when nothing else goes on its POST's response, is
	// that response as JSON, which the transport allows: the suite's
	// checks of an event stream on a POST then do not apply (its INFO line
	// says "Server returned JSON"). Nor would they pass on a stream:
	// streams are not resumable, so they have no priming event and no
	// retry field.
	"server-sse-multiple-streams/server-sse-streams-functional": {"", "a POST's lone answer is JSON, not an event stream"},
	"server-sse-polling/server-sse-priming-event":               {"", "a POST's lone answer is JSON; streams are not resumable (no event ids)"},
	"server-sse-polling/server-sse-retry-field":                 {"", "a POST's lone answer is JSON; streams are not resumable (no retry field)"},
}

// listenConformanceExtra are scenarios the suite keeps out of its default
// (active) run that still apply to a 2025-11-25 server; they run too.
var listenConformanceExtra = []string{"json-schema-2020-12", "server-sse-polling"}

// TestListenConformance runs the official MCP conformance suite
// (@modelcontextprotocol/conformance, pinned in
// internal/oauth/testdata/conformance) in server mode against the real
// bouncer listen, in front of the go-sdk's conformance server (its
// everything-server, built from the go-sdk module this repository pins)
// on stdio, and, at the same time, against a direct run of the same
// server over streamable HTTP. The transport scenarios must pass
// every check through listen; every other check must come out as it
// does directly, but for listenConformanceChanges.
//
// Not run: the scenarios of the 2026-07-28 draft (listen speaks up to
// 2025-11-25, and answers such a client so it initializes) and the
// extensions (tasks, skills), which neither side implements.
func TestListenConformance(t *testing.T) {
	need.Long(t, "runs the MCP conformance suite against bouncer listen")
	dir, err := filepath.Abs("../../internal/oauth/testdata/conformance")
	if err != nil {
		t.Fatal(err)
	}
	index := need.File(t, filepath.Join(dir, "node_modules/@modelcontextprotocol/conformance/dist/index.js"),
		"the MCP conformance suite", "run npm ci in internal/oauth/testdata/conformance")
	node := need.Node(t)
	tmp := t.TempDir()
	server := filepath.Join(tmp, "everything-server")
	if out, err := exec.Command("go", "build", "-o", server, "github.com/modelcontextprotocol/go-sdk/conformance/everything-server").CombinedOutput(); err != nil {
		t.Fatalf("building the go-sdk's conformance server: %v\n%s", err, out)
	}

	// The direct run: the server on streamable HTTP, with sessions.
	direct := freeAddr(t)
	ds := exec.Command(server, "-http", direct, "-stateless=false")
	startProcess(t, ds)
	// bouncer listen in front of the same server on stdio, no auth on
	// loopback.
	cfg := filepath.Join(tmp, "mcp.json")
	data, _ := json.Marshal(map[string]any{
		"mcpServers": map[string]any{"everything": map[string]any{"command": server}},
		"x-bouncer-listen": map[string]any{"replica": "r1",
			// The suite opens a session per scenario, many at once: at
			// the default spawn rate (a user's share of 25 a second) a
			// listener that starts sessions fast enough refuses some.
			"limits": map[string]any{"spawn_rate": 1000, "spawn_burst": 1000}},
	})
	if err := os.WriteFile(cfg, data, 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	ls := exec.Command("bouncer", "listen", "--config", cfg, "--home", filepath.Join(tmp, "home"), "--sandbox", "off", "--addr", addr)
	stderr := startProcess(t, ls)
	waitReady(t, "http://"+addr+"/readyz", stderr)
	waitReady(t, "http://"+direct+"/", nil)

	run := func(url, out string) (map[string]string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		var logs strings.Builder
		suite := func(args ...string) {
			cmd := exec.CommandContext(ctx, node, append([]string{"--import", "./register.mjs", index, "server", "--url", url, "-o", out}, args...)...)
			cmd.Dir, cmd.Env = dir, append(os.Environ(), "NO_COLOR=1")
			b, _ := cmd.CombinedOutput() // it exits non-zero when a check fails; the checks say which
			logs.Write(b)
		}
		suite() // the active suite
		for _, sc := range listenConformanceExtra {
			suite("--scenario", sc)
		}
		got, err := conformanceChecks(out)
		if err != nil {
			return nil, fmt.Errorf("%v\n%s", err, logs.String())
		}
		return got, nil
	}
	var wg sync.WaitGroup
	var viaListen, viaDirect map[string]string
	var errListen, errDirect error
	wg.Add(2)
	go func() {
		defer wg.Done()
		viaListen, errListen = run("http://"+addr+"/mcp", filepath.Join(tmp, "listen"))
	}()
	go func() {
		defer wg.Done()
		viaDirect, errDirect = run("http://"+direct+"/mcp", filepath.Join(tmp, "direct"))
	}()
	wg.Wait()
	if errListen != nil || errDirect != nil {
		t.Fatalf("the suite through listen: %v; directly: %v", errListen, errDirect)
	}

	scenarios := map[string]bool{}
	for k := range viaListen {
		scenarios[strings.SplitN(k, "/", 2)[0]] = true
	}
	for _, sc := range append(listenTransportScenarios, "tools-call-elicitation", "tools-call-sampling", "tools-call-with-progress", "resources-subscribe") {
		if !scenarios[sc] {
			t.Errorf("scenario %s did not run through listen", sc)
		}
	}
	if len(scenarios) < 30 {
		t.Errorf("only %d scenarios ran through listen", len(scenarios))
	}
	for _, sc := range listenTransportScenarios {
		for k, st := range viaListen {
			if strings.HasPrefix(k, sc+"/") && st != "SUCCESS" {
				t.Errorf("transport check %s through listen: %s", k, st)
			}
		}
	}
	var keys []string
	for k := range viaDirect {
		keys = append(keys, k)
	}
	for k := range viaListen {
		if _, ok := viaDirect[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		want := viaDirect[k]
		if c, ok := listenConformanceChanges[k]; ok {
			want = c.status
		}
		if got := viaListen[k]; got != want {
			t.Errorf("%s: %q through listen, %q directly (want %q)", k, got, viaDirect[k], want)
		}
	}
	for k, c := range listenConformanceChanges {
		seen := viaListen
		if c.status == "" {
			seen = viaDirect
		}
		if _, ok := seen[k]; !ok {
			t.Errorf("the deliberate change %s was not seen: the suite no longer has the check", k)
		}
	}
}

// conformanceChecks reads the suite's results under dir: scenario/check →
// status, INFO records left out.
func conformanceChecks(dir string) (map[string]string, error) {
	files, _ := filepath.Glob(filepath.Join(dir, "server-*", "checks.json"))
	if len(files) == 0 {
		return nil, fmt.Errorf("no results in %s", dir)
	}
	name := regexp.MustCompile(`^server-(.+)-\d{4}-\d{2}-\d{2}T`)
	out := map[string]string{}
	for _, f := range files {
		m := name.FindStringSubmatch(filepath.Base(filepath.Dir(f)))
		if m == nil {
			return nil, fmt.Errorf("%s: a results directory not named for its scenario", f)
		}
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var checks []struct{ ID, Status string }
		if err := json.Unmarshal(data, &checks); err != nil {
			return nil, fmt.Errorf("%s: %v", f, err)
		}
		for _, c := range checks {
			if c.Status == "INFO" {
				continue // a record of the traffic, not an outcome
			}
			k := m[1] + "/" + c.ID
			if prev, dup := out[k]; dup && prev != c.Status {
				// A check the scenario records more than once (per
				// message) keeps its worst outcome.
				if rank(c.Status) < rank(prev) {
					continue
				}
			}
			out[k] = c.Status
		}
	}
	return out, nil
}

func rank(status string) int {
	return map[string]int{"SKIPPED": 1, "SUCCESS": 2, "WARNING": 3, "FAILURE": 4}[status]
}

// startProcess starts cmd, stopped when the test ends, and returns its
// stderr as it is written.
func startProcess(t *testing.T, cmd *exec.Cmd) *syncbuf.Buffer {
	t.Helper()
	var stderr syncbuf.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return &stderr
}

// waitReady waits until url answers (200, or any status when stderr is
// nil: a server with no probe).
func waitReady(t *testing.T, url string, stderr *syncbuf.Buffer) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 || stderr == nil {
				return
			}
		}
		if time.Now().After(deadline) {
			msg := ""
			if stderr != nil {
				msg = stderr.String()
			}
			t.Fatalf("%s never ready:\n%s", url, msg)
		}
	}
}
