package proxy

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/bouncer-mcp/bouncer/internal/testsupport/testserver"
)

// A client request whose id the go-sdk's jsonrpc.ID can't hold exactly
// (1.5 would become 1) is refused with -32600 and id null, alone or in a
// batch, and never reaches the upstream; ids it can hold pass exactly.
func TestClientIDsPassUnchangedOrNotAtAll(t *testing.T) {
	cmd := selfServer(t, "raw-ids", ".")
	h := newHarness(t, hopts{cmd: &cmd})
	w := h.wire()
	w.handshake("2025-06-18", false)
	w.pinned()
	for _, id := range testserver.BadIDs {
		for _, body := range []string{`"method":"ping"`, `"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}`} {
			w.send(`{"jsonrpc":"2.0","id":` + id + `,` + body + `}`)
			wantCode(t, single(t, w.answer("the answer to id "+id), "null"), -32600)
		}
	}
	w.send(`[{"jsonrpc":"2.0","id":2,"method":"ping"},{"jsonrpc":"2.0","id":1.5,"method":"ping"}]`)
	a, order := answers(t, w.answer("the batch"))
	if strings.Join(order, " ") != "2 null" || a["2"].Error == nil || a["2"].Error.Code != -32600 {
		t.Fatalf("batch with id 1.5 answered %v", order)
	}
	for _, id := range []string{"9007199254740991", "-9007199254740991", "0", `"caf\u00e9"`} {
		w.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}`)
		line := w.answer("the answer to id " + id)
		var got struct{ ID json.RawMessage }
		if err := json.Unmarshal([]byte(line), &got); err != nil {
			t.Fatal(err)
		}
		var wantV, gotV any
		_ = json.Unmarshal([]byte(id), &wantV)
		_ = json.Unmarshal(got.ID, &gotV)
		if gotV != wantV || !strings.HasPrefix(id, `"`) && string(got.ID) != id {
			t.Errorf("id %s came back as %s", id, got.ID)
		}
	}
	// Only what was passed on reached the server: the first call and the
	// four pings with ids it can hold.
	rec := h.received()
	if n, m := strings.Count(rec, `"method":"ping"`), strings.Count(rec, `"method":"tools/call"`); n != 4 || m != 1 {
		t.Fatalf("the server got %d pings and %d calls, want 4 and 1:\n%s", n, m, rec)
	}
	if got := verdicts(h.auditLines()); got != "echo:allow/default" {
		t.Fatalf("audit = %s", got)
	}
}

// The same from the upstream's side: its requests with such ids are
// refused (the upstream gets -32600, id null) and never reach the client,
// an answer with such an id (its answer to 5 written as 5.0) answers
// nothing, and a cancellation naming such an id is not relayed. The
// client's answers are held to the same rule.
func TestUpstreamIDsPassUnchangedOrNotAtAll(t *testing.T) {
	cmd := selfServer(t, "raw-ids", ".")
	h := newHarness(t, hopts{cmd: &cmd})
	w := h.wire()
	w.handshake("2025-06-18", false)
	w.pinned()
	w.send(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"poke","arguments":{}}}`)
	var answered, pinged bool
	for !answered || !pinged {
		line := w.next("poke's answer and the upstream's ping 7")
		var m wireAnswer
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		switch {
		case m.Method == "" && string(m.ID) == "5":
			if m.text() != "ok" {
				t.Fatalf("the answer to 5 is %s", line)
			}
			answered = true
		case m.Method == "ping" && string(m.ID) == "7":
			pinged = true
		case m.Method != "" && len(m.ID) > 0:
			t.Fatalf("relayed the upstream's request %s", line)
		default:
			t.Fatalf("unexpected %s", line)
		}
	}
	w.send(`{"jsonrpc":"2.0","id":7.0,"result":{}}`)
	w.send(`{"jsonrpc":"2.0","id":7,"result":{}}`)
	w.send(`{"jsonrpc":"2.0","id":8,"method":"ping"}`) // passes the client's answers on the way
	single(t, w.answer("ping 8"), "8")
	rec := h.received()
	if n := strings.Count(rec, `"id":null,"error":{"code":-32600`); n != len(testserver.BadIDs) {
		t.Errorf("the upstream got %d refusals, want %d:\n%s", n, len(testserver.BadIDs), rec)
	}
	if n := strings.Count(rec, `"id":7,"result"`); n != 1 || strings.Contains(rec, `"id":7.0`) {
		t.Errorf("the upstream got %d answers to 7, want exactly the one with id 7:\n%s", n, rec)
	}
}

// notifications/cancelled names its request as exactly as a request id: a
// requestId of 1.5 does not withdraw the call with id 1 that the proxy
// holds, and is not relayed either (the go-sdk helpdesk would take it for
// 1 and cancel the call once it is forwarded).
func TestCancelNamesTheExactID(t *testing.T) {
	h := newHarness(t, hopts{policy: helpdeskPolicy})
	w := h.wire()
	w.handshake("2025-06-18", true)
	w.pinned()
	w.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"send_email","arguments":{"to":"new@partner.example","subject":"hi"}}}`)
	q := w.request("elicitation/create")
	for _, id := range []string{"1.5", "1.0", "1e0"} {
		w.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":` + id + `}}`)
	}
	w.send(`{"jsonrpc":"2.0","id":` + q + `,"result":{"action":"accept","content":{}}}`)
	if a := single(t, w.answer("the approved call"), "1"); a.text() != "sent" {
		t.Fatalf("approved call: %+v", a)
	}
	if n := len(h.mails()); n != 1 {
		t.Fatalf("%d mails, want 1", n)
	}
}
