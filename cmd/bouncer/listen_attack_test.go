package main

import (
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

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
