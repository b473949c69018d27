package proxy

import (
	"strings"
	"testing"
)

// pinCase is a session with a raw test server that changes its tools.
func pinSession(t *testing.T, mode string, o hopts, elicit bool) (*harness, *wireClient) {
	t.Helper()
	cmd := selfServer(t, "raw-"+mode, ".")
	o.cmd = &cmd
	h := newHarness(t, o)
	w := h.wire()
	w.handshake("2025-06-18", elicit)
	return h, w
}

func wantPinningDeny(t *testing.T, a wireAnswer, says string) {
	t.Helper()
	wantBlocked(t, a)
	if !strings.Contains(a.text(), says) {
		t.Fatalf("reason %q does not say %q", a.text(), says)
	}
}

// A list_changed that comes while the pin is being taken is not lost: the
// upstream announces the change before answering the pin's tools/list with
// the old list, and the call that waited for the pin is decided on the new
// one.
func TestListChangedDuringPin(t *testing.T) {
	h, w := pinSession(t, "pinrace", hopts{}, false)
	wantPinningDeny(t, w.pinned(), "changed")
	if got := verdicts(h.auditLines()); got != "echo:deny/pinning" {
		t.Fatalf("audit = %s", got)
	}
}

// A tools/list result the client gets while the pin is being taken is
// compared with the pin before any call is decided: the upstream shows the
// client a new description of echo and the proxy the old one.
func TestClientListDuringPin(t *testing.T) {
	h, w := pinSession(t, "listorder", hopts{}, false)
	w.send(`{"jsonrpc":"2.0","id":"l","method":"tools/list"}`)
	if a := w.answer("the client's tools/list"); !strings.Contains(a, "attacker@evil.example") {
		t.Fatalf("the client's list: %s", a)
	}
	wantPinningDeny(t, w.pinned(), "changed")
	if got := verdicts(h.auditLines()); got != "echo:deny/pinning" {
		t.Fatalf("audit = %s", got)
	}
}

// Once list_changed has arrived, the next call waits for the re-list it
// asked for: the client calls echo the moment it has the notification,
// while the upstream takes 300 ms to list its changed tools.
func TestCallAfterListChangedWaitsForTheRelist(t *testing.T) {
	h, w := pinSession(t, "change", hopts{}, false)
	if a := w.pinned(); a.text() != "ok" {
		t.Fatalf("echo before the change: %+v", a)
	}
	w.send(`{"jsonrpc":"2.0","id":"c","method":"tools/call","params":{"name":"change","arguments":{}}}`)
	w.until("list_changed", func(line string) bool { return strings.Contains(line, "notifications/tools/list_changed") })
	w.send(`{"jsonrpc":"2.0","id":"e","method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}`)
	if a := single(t, w.answer("change"), `"c"`); a.text() != "changed" {
		t.Fatalf("change: %+v", a)
	}
	wantPinningDeny(t, single(t, w.answer("echo"), `"e"`), "changed")
	if got := verdicts(h.auditLines()); got != "echo:allow/default change:allow/default echo:deny/pinning" {
		t.Fatalf("audit = %s", got)
	}
}

// A re-list that fails leaves the change unknown: the call that waited for
// it is denied with rule pinning, not decided on the old pin. The next call
// asks for another re-list, which succeeds (nothing changed after all).
func TestFailedRelistDenies(t *testing.T) {
	h, w := pinSession(t, "changefail", hopts{}, false)
	w.pinned()
	w.send(`{"jsonrpc":"2.0","id":"c","method":"tools/call","params":{"name":"change","arguments":{}}}`)
	w.until("list_changed", func(line string) bool { return strings.Contains(line, "notifications/tools/list_changed") })
	w.send(`{"jsonrpc":"2.0","id":"e1","method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}`)
	single(t, w.answer("change"), `"c"`)
	wantPinningDeny(t, single(t, w.answer("echo e1"), `"e1"`), "could not be re-read")
	w.send(`{"jsonrpc":"2.0","id":"e2","method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}`)
	if a := single(t, w.answer("echo e2"), `"e2"`); a.text() != "ok" {
		t.Fatalf("echo after a successful re-list: %+v", a)
	}
	if got := verdicts(h.auditLines()); got != "echo:allow/default change:allow/default echo:deny/pinning echo:allow/default" {
		t.Fatalf("audit = %s", got)
	}
}

// A human's yes is decided again on the current tool list: the tool
// changed while the human was asked, so the approved call is denied.
func TestApprovalWaitsForTheRelist(t *testing.T) {
	h, w := pinSession(t, "change", hopts{policy: helpdeskPolicy}, true)
	w.pinned()
	w.send(`{"jsonrpc":"2.0","id":"m","method":"tools/call","params":{"name":"send_email","arguments":{"to":"new@partner.example"}}}`)
	q := w.request("elicitation/create")
	w.send(`{"jsonrpc":"2.0","id":"c","method":"tools/call","params":{"name":"change","arguments":{}}}`)
	single(t, w.answer("change"), `"c"`)
	w.send(`{"jsonrpc":"2.0","id":` + q + `,"result":{"action":"accept","content":{}}}`)
	wantPinningDeny(t, single(t, w.answer("the approved mail"), `"m"`), "changed")
	if strings.Contains(h.received(), `"name":"send_email"`) {
		t.Fatal("the mail reached the server")
	}
	if got := verdicts(h.auditLines()); got != "echo:allow/default send_email:ask/sink change:allow/default send_email:deny/pinning" {
		t.Fatalf("audit = %s", got)
	}
}
