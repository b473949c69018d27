package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/bouncer-mcp/bouncer/internal/listen"
	"github.com/bouncer-mcp/bouncer/internal/testsupport/testserver"
)

// An outsider's ways into a session that is not quite theirs, in raw
// HTTP where a client would not go, against the real listener with two
// servers: the session of one server sent to the other's endpoint, the id
// in another case or with its replica changed, the id of a call still in
// flight used again by a second POST. Each is refused, and the session
// itself is untouched. (Random, near-miss and other users' ids are
// TestListenSessionIDs'.)
func TestListenSessionIDAttacks(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	helpdesk := func() map[string]any {
		return map[string]any{"command": exe, "env": map[string]string{testserver.EnvServer: "helpdesk", testserver.EnvDir: t.TempDir()}}
	}
	lt := newListenTestServers(t, map[string]any{"a": helpdesk(), "b": helpdesk()}, "")
	post := func(server, sid, body string) (int, string, http.Header) {
		t.Helper()
		var hdr map[string]string
		if sid != "" {
			hdr = map[string]string{"Mcp-Session-Id": sid}
		}
		return lt.rawAt("alice", "/servers/"+server+"/mcp", http.MethodPost, body, hdr)
	}
	st, _, h := post("a", "", initBody)
	sid := h.Get("Mcp-Session-Id")
	if st != http.StatusOK || !strings.HasPrefix(sid, "r1.") {
		t.Fatalf("initialize: %d, id %q", st, sid)
	}
	if st, _, _ := post("a", sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); st != http.StatusAccepted {
		t.Fatalf("notifications/initialized: %d", st)
	}
	ping := `{"jsonrpc":"2.0","id":2,"method":"ping"}`
	for name, try := range map[string]struct{ server, sid string }{
		"on the other server's endpoint": {"b", sid},
		"in upper case":                  {"a", strings.ToUpper(sid)},
		"with another replica":           {"a", "r2" + strings.TrimPrefix(sid, "r1")},
		"percent-encoded":                {"a", strings.Replace(sid, ".", "%2E", 1)},
		"with a space after it":          {"a", sid + " x"},
	} {
		if st, body, _ := post(try.server, try.sid, ping); st != http.StatusNotFound {
			t.Errorf("alice's session %s: %d %s; want 404", name, st, body)
		}
	}
	// A call in flight; a second POST with its id is refused, and the
	// call still gets its own answer, once.
	slow := make(chan string, 1)
	go func() {
		_, body, _ := post("a", sid, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"slow","arguments":{"ms":1500}}}`)
		slow <- body
	}()
	time.Sleep(300 * time.Millisecond)
	if st, body, _ := post("a", sid, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"echo","arguments":{"text":"again"}}}`); st != http.StatusBadRequest || !strings.Contains(body, "still awaiting its answer") {
		t.Errorf("id 5 again while the first is in flight: %d %s; want 400", st, body)
	}
	if body := <-slow; strings.Count(body, `"id":5`) != 1 || !strings.Contains(body, "slept") {
		t.Errorf("the call in flight: %s; want its own answer, once", body)
	}
	if st, body, _ := post("a", sid, ping); st != http.StatusOK || !strings.Contains(body, `"result":{}`) {
		t.Fatalf("alice's session afterwards: %d %s", st, body)
	}
}

// Held calls are cheap to send and dear to hold: a client that says it
// can be asked, and never answers, sends calls Bouncer asks a human about
// (a tool with no budget); each would keep a question, a goroutine and a
// timer in the listener for the five minutes a question waits.
//
//   - 2,000 of them in one 300 KB batch, without the MCP-Protocol-Version
//     header, in a session at 2025-11-25, where batches are no longer
//     part of MCP: refused with 400 (the session's version is the one its
//     initialize settled, with or without the header);
//   - 200 POSTs of one each at once: a session has at most maxInFlight
//     requests awaiting answers, and a POST past it gets 429.
//
// The session answers a ping after the first; after the second it is full
// until its questions time out, and alice's next session is not.
func TestListenHeldCallsBounded(t *testing.T) {
	lt := startListenTestPolicy(t, t.TempDir(), "off", nil, "", `
send_email:
  exfiltrating: true
  sink_params: [to]
`)
	lt.waitPinned()
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"raw","version":"1"}}}`
	st, _, h := lt.raw("alice", "POST", init, nil)
	sid := h.Get("Mcp-Session-Id")
	if st != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %d", st)
	}
	hdr := map[string]string{"Mcp-Session-Id": sid}
	if st, _, _ := lt.raw("alice", "POST", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, hdr); st != http.StatusAccepted {
		t.Fatalf("notifications/initialized: %d", st)
	}
	send := func(id int) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"send_email","arguments":{"to":"x%d@partner.example","subject":"s","body":"b"}}}`, id, id)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	open := func(body string) *http.Response {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, lt.srv.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", sid)
		resp, err := (&http.Client{Transport: bearerTransport{token: lt.tokens["alice"]}}).Do(req)
		if err != nil {
			t.Error(err)
			return nil
		}
		return resp
	}
	alive := func(what string) {
		t.Helper()
		if st, body, _ := lt.raw("alice", "POST", `{"jsonrpc":"2.0","id":2,"method":"ping"}`, hdr); st != http.StatusOK || !strings.Contains(body, `"result":{}`) {
			t.Fatalf("the session after %s: %d %s", what, st, body)
		}
	}

	var batch []string
	for i := range 2000 {
		batch = append(batch, send(10+i))
	}
	before := runtime.NumGoroutine()
	resp := open("[" + strings.Join(batch, ",") + "]")
	if resp == nil {
		t.FailNow()
	}
	if resp.StatusCode != http.StatusBadRequest {
		time.Sleep(time.Second)
		held := runtime.NumGoroutine() - before
		buf := make([]byte, 300)
		n, _ := io.ReadFull(resp.Body, buf)
		t.Fatalf("a batch of 2,000 calls held for a human, in a 2025-11-25 session: %d, and %d more goroutines in the listener; want 400\n%s", resp.StatusCode, held, buf[:n])
	}
	resp.Body.Close()
	alive("its batch was refused")

	codes := make(chan int, 200)
	for i := range 200 {
		go func() {
			if resp := open(send(5000 + i)); resp != nil {
				codes <- resp.StatusCode
				if resp.StatusCode != http.StatusOK {
					resp.Body.Close()
				}
				return // a held call's stream stays open until ctx ends
			}
			codes <- 0
		}()
	}
	count := map[int]int{}
	for range 200 {
		count[<-codes]++
	}
	if count[http.StatusTooManyRequests] == 0 || count[http.StatusOK] > listen.MaxInFlight {
		t.Fatalf("200 POSTs of a held call each: %v by status; want at most %d held, the rest 429", count, listen.MaxInFlight)
	}
	// That session is full until its questions time out; alice's next
	// session is not.
	if text, isErr := call(t, lt.client("alice", nil), "echo", map[string]any{"text": "hi"}); isErr || text != "hi" {
		t.Fatalf("alice's next session: %q", text)
	}
}

// The listener's config file (which starts every server) and its users'
// token files (each the credential of a user, who can approve that user's
// codes with it) are Bouncer's own files, as bouncer run's launching
// config is: no server is made to write them. An injected agent of alice
// that overwrote bob's token file would sign in as bob once the listener
// restarts, and one that rewrote the config would run its own command as
// a server. Here, with --sandbox off, only the argument checks stand.
func TestListenCredentialsAreOwnFiles(t *testing.T) {
	lt := newListenTest(t, "")
	cs := lt.client("alice", nil)
	for _, path := range []string{lt.config, filepath.Join(filepath.Dir(lt.config), "bob.token")} {
		before, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		text, isErr := call(t, cs, "write_file", map[string]any{"path": path, "content": "evil"})
		after, _ := os.ReadFile(path)
		if !isErr || !strings.HasPrefix(text, "[bouncer blocked] ") || string(after) != string(before) {
			t.Errorf("write_file %s: %q (isError %v); the file now holds %q; want it refused and the file untouched", filepath.Base(path), text, isErr, after)
		}
	}
}

// A call the listener judges one way and the upstream (the helpdesk, a
// go-sdk server) reads another: each body below names boss@corp.example
// (trusted, allowed) where Bouncer might look and attacker@evil.example
// where a server might, through the listener's own body decoder, raw, in
// one session. None gets a mail to the attacker out: each is refused, or
// sent to the boss alone. (The pump's parsing of these is the proxy's
// tests' on stdio; this is the same through the HTTP side.)
func TestListenCallDifferentials(t *testing.T) {
	lt := newListenTest(t, "")
	st, _, h := lt.raw("alice", "POST", initBody, nil)
	sid := h.Get("Mcp-Session-Id")
	if st != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %d", st)
	}
	hdr := map[string]string{"Mcp-Session-Id": sid}
	if st, _, _ := lt.raw("alice", "POST", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, hdr); st != http.StatusAccepted {
		t.Fatalf("notifications/initialized: %d", st)
	}
	const boss, evil = `"boss@corp.example"`, `"attacker@evil.example"`
	args := func(to string) string { return `{"to":` + to + `,"subject":"s","body":"b"}` }
	bodies := map[string]string{
		"duplicate to, attacker last":      `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"send_email","arguments":{"to":` + boss + `,"to":` + evil + `,"subject":"s","body":"b"}}}`,
		"duplicate to, attacker first":     `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"send_email","arguments":{"to":` + evil + `,"to":` + boss + `,"subject":"s","body":"b"}}}`,
		"escaped duplicate key":            `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"send_email","arguments":{"to":` + boss + `,"\u0074o":` + evil + `,"subject":"s","body":"b"}}}`,
		"key in another case":              `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"send_email","arguments":{"to":` + boss + `,"To":` + evil + `,"subject":"s","body":"b"}}}`,
		"arguments twice":                  `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"send_email","arguments":` + args(boss) + `,"arguments":` + args(evil) + `}}`,
		"arguments in another case":        `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"send_email","arguments":` + args(boss) + `,"Arguments":` + args(evil) + `}}`,
		"name twice":                       `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","name":"send_email","arguments":{"text":"hi","to":` + evil + `,"subject":"s","body":"b"}}}`,
		"params twice":                     `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"send_email","arguments":` + args(boss) + `},"params":{"name":"send_email","arguments":` + args(evil) + `}}`,
		"method twice":                     `{"jsonrpc":"2.0","id":%d,"method":"ping","method":"tools/call","params":{"name":"send_email","arguments":` + args(evil) + `}}`,
		"method in another case":           `{"jsonrpc":"2.0","id":%d,"method":"Tools/call","params":{"name":"send_email","arguments":` + args(evil) + `}}`,
		"method with a space":              `{"jsonrpc":"2.0","id":%d,"method":"tools/call ","params":{"name":"send_email","arguments":` + args(evil) + `}}`,
		"Method key in another case":       `{"jsonrpc":"2.0","id":%d,"Method":"tools/call","method":"ping","params":{"name":"send_email","arguments":` + args(evil) + `}}`,
		"params as an array":               `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":["send_email",` + args(evil) + `]}`,
		"a NUL in the address":             `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"send_email","arguments":` + args(`"boss@corp.example\u0000attacker@evil.example"`) + `}}`,
		"a lone surrogate in the address":  `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"send_email","arguments":` + args(`"attacker@evil.example\ud800"`) + `}}`,
		"a huge number beside the address": `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"send_email","arguments":{"to":` + boss + `,"subject":"s","body":"b","n":1e400}}}`,
		"a BOM before the body":            "\ufeff" + `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"send_email","arguments":` + args(evil) + `}}`,
		"as a notification":                `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"send_email","arguments":` + args(evil) + `}}`,
	}
	id := 10
	for name, body := range bodies {
		if strings.Contains(body, "%d") {
			body = fmt.Sprintf(body, id)
			id++
		}
		st, resp, _ := lt.raw("alice", "POST", body, hdr)
		if st >= 500 {
			t.Errorf("%s: %d %s", name, st, resp)
		}
		t.Logf("%s: %d %.160s", name, st, resp)
	}
	// The session still works, and its last call is done when answered.
	if st, body, _ := lt.raw("alice", "POST", fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"text":"done"}}}`, id), hdr); st != http.StatusOK || !strings.Contains(body, "done") {
		t.Fatalf("the session afterwards: %d %s", st, body)
	}
	mails, _ := os.ReadFile(filepath.Join(lt.dir, "mails.jsonl"))
	if strings.Contains(string(mails), "attacker") {
		t.Fatalf("a mail reached the attacker:\n%s", mails)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(mails)), "\n") {
		if line != "" && !strings.Contains(line, "boss@corp.example") {
			t.Errorf("a mail to someone else than the boss: %s", line)
		}
	}
	t.Logf("mails sent (to the boss alone): %d", strings.Count(string(mails), "\n"))
}

// One user's client in a reconnect loop (initialize, DELETE, again) ends
// each process it starts, so the limit on a user's processes never binds:
// without a share of its own, it would take the whole spawn rate, and
// every other user's sessions would be refused until it stopped. A user
// takes at most a quarter of the rate and burst; bob still gets his
// session.
func TestListenSpawnRateShared(t *testing.T) {
	lt := newListenTest(t, `{"limits": {"spawn_rate": 0.05, "spawn_burst": 8}}`)
	started := 0
	for range 20 {
		st, _, h := lt.raw("alice", "POST", initBody, nil)
		if st == http.StatusTooManyRequests {
			break
		}
		if st != http.StatusOK {
			t.Fatalf("alice's initialize: %d", st)
		}
		started++
		lt.raw("alice", "DELETE", "", map[string]string{"Mcp-Session-Id": h.Get("Mcp-Session-Id")})
	}
	if st, body, _ := lt.raw("bob", "POST", initBody, nil); st != http.StatusOK {
		t.Fatalf("bob's initialize after alice started %d sessions in a loop: %d %s; want his session", started, st, body)
	}
}
