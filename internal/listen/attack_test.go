package listen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// An outsider's attacks on one session's transport, through the whole
// handler (Host, auth, lookup, decoding) of a listener whose session is
// in its table and whose pump is played by the test: it reads the
// session's view only when the test says so, as a pump does whose
// upstream is busy (a stdio server in a long call reads no stdin) or
// being started again after a crash.

// attackListener is tableListener serving every Host, and its handler.
func attackListener(t *testing.T) (*Listener, *Session, http.Handler) {
	t.Helper()
	l, id := tableListener(t)
	l.opts.Edge.Hosts = []string{"*"}
	s := l.lookup("alice", "s", id)
	if s == nil {
		t.Fatal("the session is not in the table")
	}
	return l, s, l.Handler()
}

// postTo posts body to the session (sid; none: no header) through h.
func postTo(h http.Handler, sid, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, "http://localhost/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if sid != "" {
		req.Header.Set(sessionHeader, sid)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// A notification is answered 202 as soon as it is queued, before the pump
// has taken it: without a bound, a client could post 4 MiB bodies as fast
// as the network takes them while its session's pump is not reading, and
// the listener would hold them all. What waits for the pump is bounded;
// past the bound a POST is answered 429 with Retry-After, and once the
// pump has taken what waits, the session takes messages again.
func TestSessionQueueBounded(t *testing.T) {
	_, s, h := attackListener(t)
	note := `{"jsonrpc":"2.0","method":"notifications/message","params":{"pad":"` + strings.Repeat("x", 1<<20) + `"}}`
	accepted, refused := 0, 0
	for range 64 {
		rec := postTo(h, s.id, note)
		switch rec.Code {
		case http.StatusAccepted:
			accepted++
		case http.StatusTooManyRequests:
			refused++
			if rec.Header().Get("Retry-After") == "" {
				t.Fatal("429 without Retry-After")
			}
		default:
			t.Fatalf("a notification: %d %s", rec.Code, rec.Body)
		}
	}
	if refused == 0 || accepted > maxHeldBytes>>20+1 {
		t.Fatalf("64 MiB of notifications while the pump reads nothing: %d taken, %d refused; want at most %d MiB held", accepted, refused, maxHeldBytes>>20)
	}
	// The pump takes what waits; the session takes messages again.
	v, err := s.conn.newView(false)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for range accepted {
		if _, err := v.Read(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if rec := postTo(h, s.id, note); rec.Code != http.StatusAccepted {
		t.Fatalf("a notification once the queue is read: %d %s", rec.Code, rec.Body)
	}
}

// A call posted just before the session is ended (DELETE, the idle
// timeout, a pin refusal) is answered that the session ended; the pump,
// which had not read it yet, must not read it after: it would judge and
// forward a call whose client was told it was not made (and a DELETE
// racing a POST would decide whether it was).
func TestSessionEndDropsWhatThePumpHasNotRead(t *testing.T) {
	_, s, h := attackListener(t)
	v, err := s.conn.newView(false)
	if err != nil {
		t.Fatal(err)
	}
	answered := make(chan *httptest.ResponseRecorder, 1)
	go func() {
		answered <- postTo(h, s.id, `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"send_email","arguments":{"to":"boss@corp.example"}}}`)
	}()
	deadline := time.Now().Add(5 * time.Second)
	for {
		s.conn.mu.Lock()
		n := len(s.conn.queue)
		s.conn.mu.Unlock()
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the call was not queued")
		}
		time.Sleep(time.Millisecond)
	}
	req := httptest.NewRequest(http.MethodDelete, "http://localhost/mcp", nil)
	req.Header.Set(sessionHeader, s.id)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusNoContent {
		t.Fatalf("DELETE: %d", rec.Code)
	}
	got := <-answered
	if !strings.Contains(got.Body.String(), `"id":9,"error"`) || !strings.Contains(got.Body.String(), "the session has ended") {
		t.Fatalf("the call's POST after DELETE: %d %s; want an error saying the session ended", got.Code, got.Body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if m, err := v.Read(ctx); !errors.Is(err, io.EOF) {
		t.Fatalf("the pump read %v (%v) after the session ended; want EOF", m, err)
	}
}

// Calls the session's upstream never answers (a slow tool, a question to
// a human nobody answers) each hold their POST, and what they carry, in
// the listener until answered: a client could post them 4 MiB at a time,
// as many as it has connections. What the session's client has in flight
// counts against the same bound as what waits for the pump; past it, 429.
func TestSessionInFlightBounded(t *testing.T) {
	_, s, h := attackListener(t)
	v, err := s.conn.newView(false)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { // a pump whose upstream answers nothing
		for {
			if _, err := v.Read(ctx); err != nil {
				return
			}
		}
	}()
	pad := strings.Repeat("x", 1<<20)
	codes := make(chan int, 64)
	for i := range 64 {
		go func() {
			codes <- postTo(h, s.id, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"slow","arguments":{"pad":"%s"}}}`, i, pad)).Code
		}()
	}
	refused := 0
	deadline := time.Now().Add(20 * time.Second)
	for {
		s.conn.mu.Lock()
		held := len(s.conn.streams)
		s.conn.mu.Unlock()
	drain:
		for {
			select {
			case c := <-codes:
				if c != http.StatusTooManyRequests {
					t.Fatalf("a call: %d", c)
				}
				refused++
			default:
				break drain
			}
		}
		if held+refused == 64 {
			if refused == 0 {
				t.Fatalf("64 calls of 1 MiB each, none answered: all %d held", held)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d calls held, %d refused, the rest neither", held, refused)
		}
		time.Sleep(5 * time.Millisecond)
	}
	s.conn.close()
}
