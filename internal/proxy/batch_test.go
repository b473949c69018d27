package proxy

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// batchOf checks that line holds a batch's answers, one per id in want, in
// the batch's order, and returns them by id.
func batchOf(t *testing.T, line string, want ...string) map[string]wireAnswer {
	t.Helper()
	if !strings.HasPrefix(line, "[") {
		t.Fatalf("want the batch's answers as one array, got %s", line)
	}
	byID, order := answers(t, line)
	if strings.Join(order, " ") != strings.Join(want, " ") {
		t.Fatalf("batch answered ids %v, want %v: %s", order, want, line)
	}
	return byID
}

// single checks that line is one answer (not a batch's) for id, and
// returns it.
func single(t *testing.T, line, id string) wireAnswer {
	t.Helper()
	byID, order := answers(t, line)
	if strings.HasPrefix(line, "[") || len(order) != 1 || order[0] != id {
		t.Fatalf("want one answer for id %s, got %s", id, line)
	}
	return byID[id]
}

func wantCode(t *testing.T, a wireAnswer, code int) {
	t.Helper()
	if a.Error == nil || a.Error.Code != code {
		t.Fatalf("answer %+v (error %+v), want error %d", a, a.Error, code)
	}
}

func wantBlocked(t *testing.T, a wireAnswer) {
	t.Helper()
	if a.Result == nil || !a.Result.IsError || !strings.HasPrefix(a.text(), BlockedPrefix) {
		t.Fatalf("answer %+v, want a blocked call", a)
	}
}

// received is what the raw test server read, one line per message.
func (h *harness) received() string {
	h.t.Helper()
	b, err := os.ReadFile(filepath.Join(h.dir, "received.jsonl"))
	if err != nil {
		h.t.Fatal(err)
	}
	return string(b)
}

// waitReceived waits until the raw test server has read a line holding s.
func (h *harness) waitReceived(s string) {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(h.received(), s) {
		if time.Now().After(deadline) {
			h.t.Fatalf("the server did not get %s:\n%s", s, h.received())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Each request in a client batch gets exactly one answer, and the batch's
// answers go back as one array once the last is in, whoever answers each
// request and whatever happens to it on the way. Every case would hang (the
// array never sent) or answer a request twice without the ledger in Conn
// and the pump's handling of cancelled, refused and stray answers; reads
// time out, so a withheld answer fails the test.
func TestBatchAnswers(t *testing.T) {
	const (
		ping   = `"method":"ping"`
		mailTo = `"method":"tools/call","params":{"name":"send_email","arguments":{"to":"new@partner.example","subject":"hi"}}`
	)
	call := func(tool, args string) string {
		return `"method":"tools/call","params":{"name":"` + tool + `","arguments":` + args + `}`
	}
	req := func(id, body string) string { return `{"jsonrpc":"2.0","id":` + id + `,` + body + `}` }
	batch := func(msgs ...string) string { return "[" + strings.Join(msgs, ",") + "]" }
	cancel := func(id string) string {
		return `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":` + id + `,"reason":"no longer needed"}}`
	}
	decline := func(w *wireClient, id string) {
		w.send(`{"jsonrpc":"2.0","id":` + id + `,"result":{"action":"decline"}}`)
	}

	for _, tc := range []struct {
		name   string
		server string // a raw test server's mode; "" is the helpdesk
		run    func(t *testing.T, h *harness, w *wireClient)
	}{
		{"answered by the proxy beside the upstream", "", func(t *testing.T, h *harness, w *wireClient) {
			w.handshake("2025-03-26", false)
			w.pinned()
			w.send(batch(
				req("1", call("nope", `{}`)),
				req("2", ping),
				`{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`,
				req(`"bouncer-9"`, ping),
				req("3", `"method":"server/discover"`),
				req("4", call("echo", `{"text":"in a batch"}`)),
			))
			a := batchOf(t, w.answer("the batch"), "1", "2", `"bouncer-9"`, "3", "4")
			wantBlocked(t, a["1"])
			if a["2"].Result == nil {
				t.Errorf("ping: %+v", a["2"])
			}
			wantCode(t, a[`"bouncer-9"`], -32600)
			wantCode(t, a["3"], -32601)
			if a["4"].text() != "in a batch" {
				t.Errorf("echo: %+v", a["4"])
			}
			// A batch of notifications is owed nothing.
			w.send(batch(`{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`, `{"jsonrpc":"2.0","method":"notifications/x"}`))
			w.send(req("5", ping))
			single(t, w.answer("ping 5"), "5")
			// An empty batch gets one -32600 with id null, and the session
			// goes on.
			w.send("[]")
			wantCode(t, single(t, w.answer("the empty batch"), "null"), -32600)
			w.send(req("6", ping))
			single(t, w.answer("ping 6"), "6")
		}},
		{"the same id twice in a batch", "", func(t *testing.T, h *harness, w *wireClient) {
			w.handshake("2025-03-26", false)
			w.pinned()
			w.send(batch(
				req("7", call("send_email", `{"to":"boss@corp.example"}`)),
				req("7", ping),
				req("8", ping),
			))
			a, order := answers(t, w.answer("the refused batch"))
			if strings.Join(order, " ") != "null null 8" {
				t.Fatalf("refused batch answered %v", order)
			}
			wantCode(t, a["null"], -32600)
			wantCode(t, a["8"], -32600)
			w.send(req("9", ping))
			single(t, w.answer("ping 9"), "9")
			if h.mails() != nil {
				t.Fatal("a call in a refused batch reached the server")
			}
			if got := verdicts(h.auditLines()); got != "echo:allow/default" {
				t.Fatalf("audit = %s", got)
			}
		}},
		{"held for the pin, then cancelled in the batch", "slow", func(t *testing.T, h *harness, w *wireClient) {
			w.handshake("2025-03-26", false)
			// The upstream takes 500 ms to list its tools: the call waits.
			w.send(batch(req("10", call("echo", `{"text":"x"}`)), cancel("10"), req("11", ping)))
			a := batchOf(t, w.answer("the batch"), "10", "11")
			wantCode(t, a["10"], codeCancelled)
			wantCode(t, a["11"], -32601) // the raw server knows no ping
			w.send(req("12", call("echo", `{"text":"after"}`)))
			single(t, w.answer("echo 12"), "12")
			if n := strings.Count(h.received(), `"tools/call"`); n != 1 {
				t.Fatalf("%d calls reached the server, want 1 (the cancelled one must not):\n%s", n, h.received())
			}
		}},
		{"held for a human, then cancelled", "", func(t *testing.T, h *harness, w *wireClient) {
			w.handshake("2025-06-18", true)
			w.pinned()
			w.send(batch(req("13", mailTo), req("14", call("echo", `{"text":"meanwhile"}`))))
			w.request("elicitation/create")
			w.send(cancel("13"))
			a := batchOf(t, w.answer("the batch"), "13", "14")
			wantCode(t, a["13"], codeCancelled)
			if a["14"].text() != "meanwhile" {
				t.Fatalf("echo: %+v", a["14"])
			}
			if h.mails() != nil {
				t.Fatal("a cancelled mail reached the server")
			}
		}},
		{"cancelled after it was forwarded, to a server that does not answer", "slow", func(t *testing.T, h *harness, w *wireClient) {
			w.handshake("2025-03-26", false)
			w.pinned()
			w.send(batch(req("15", call("hang", `{}`)), req("16", ping)))
			w.send(req("17", ping)) // the batch is not answered yet
			single(t, w.answer("ping 17"), "17")
			h.waitReceived(`"id":15,"method":"tools/call"`) // forwarded, not held
			w.send(cancel("15"))
			a := batchOf(t, w.answer("the batch"), "15", "16")
			wantCode(t, a["15"], codeCancelled)
			// The upstream still has 15: an answer it sends now would be
			// taken for a new request using the id.
			w.send(req("15", ping))
			wantCode(t, single(t, w.answer("a second request 15"), "15"), -32600)
			w.send(req("30", ping)) // relayed after the cancellation
			single(t, w.answer("ping 30"), "30")
			if !strings.Contains(h.received(), `"method":"notifications/cancelled","params":{"requestId":15`) {
				t.Fatalf("the cancellation did not reach the server:\n%s", h.received())
			}
		}},
		{"an id used again while a batch waits for it", "", func(t *testing.T, h *harness, w *wireClient) {
			w.handshake("2025-06-18", true)
			w.pinned()
			w.send(batch(req("18", mailTo)))
			q := w.request("elicitation/create")
			w.send(req("18", ping))
			wantCode(t, single(t, w.answer("the reused id"), "null"), -32600)
			decline(w, q)
			wantBlocked(t, batchOf(t, w.answer("the batch"), "18")["18"])
			// The other way round: a batch reusing the id of a call in
			// flight is refused whole, and the call is answered once.
			w.send(req("19", call("slow", `{"ms":500}`)))
			w.send(batch(req("19", ping), req("20", ping)))
			a, order := answers(t, w.answer("the refused batch"))
			if strings.Join(order, " ") != "null 20" {
				t.Fatalf("refused batch answered %v", order)
			}
			wantCode(t, a["20"], -32600)
			if got := single(t, w.answer("slow 19"), "19"); got.text() != "slept" {
				t.Fatalf("slow: %+v", got)
			}
			if h.mails() != nil {
				t.Fatal("a declined mail reached the server")
			}
		}},
		{"the upstream answers ids nobody sent it", "stray", func(t *testing.T, h *harness, w *wireClient) {
			w.handshake("2025-06-18", true)
			w.pinned()
			// 23 is answered by the proxy at once; the upstream's "answer"
			// to it comes later and must not be a second one.
			w.send(batch(req("21", call("stray", `{"id":23}`)), req("22", ping), req("23", call("nope", `{}`))))
			line, before := w.until("the batch", isAnswer)
			a := batchOf(t, line, "21", "22", "23")
			wantBlocked(t, a["23"])
			// 24 waits for a human; the upstream's "answer" to it must not
			// fill its place in the batch.
			w.send(batch(req("24", mailTo), req("25", call("stray", `{"id":24}`))))
			q := w.request("elicitation/create")
			w.send(req("26", ping)) // answered after the stray one was sent
			single(t, w.answer("ping 26"), "26")
			decline(w, q)
			line2, before2 := w.until("the second batch", isAnswer)
			a = batchOf(t, line2, "24", "25")
			wantBlocked(t, a["24"])
			if a["25"].text() != "ok" {
				t.Fatalf("stray: %+v", a["25"])
			}
			for _, l := range append(append(before, line), append(before2, line2)...) {
				if strings.Contains(l, "forged") {
					t.Fatalf("the client got an answer nobody asked the upstream for: %s", l)
				}
			}
		}},
		{"the upstream exits", "", func(t *testing.T, h *harness, w *wireClient) {
			w.handshake("2025-06-18", true)
			w.pinned()
			w.send(batch(req("27", call("crash", `{}`)), req("28", mailTo), req("29", call("slow", `{"ms":60000}`))))
			a := batchOf(t, w.answer("the batch"), "27", "28", "29")
			wantCode(t, a["27"], -32603)
			wantBlocked(t, a["28"])
			wantCode(t, a["29"], -32603)
			if err := h.waitExit(); !errors.Is(err, ErrUpstreamExited) {
				t.Fatalf("Run = %v", err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := hopts{policy: helpdeskPolicy}
			if tc.server != "" {
				cmd := selfServer(t, "raw-"+tc.server, ".")
				o.cmd = &cmd
			}
			h := newHarness(t, o)
			tc.run(t, h, h.wire())
		})
	}
}

// The same for a batch the upstream sends the client: a request in it that
// the upstream cancels is answered for the client, so the upstream gets its
// batch's answers, as one array.
func TestUpstreamBatchAnswered(t *testing.T) {
	cmd := selfServer(t, "raw-upbatch", ".")
	h := newHarness(t, hopts{cmd: &cmd})
	w := h.wire()
	w.handshake("2025-03-26", false)
	w.pinned()
	w.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"batch","arguments":{}}}`)
	w.until("ping 42", func(line string) bool { return strings.Contains(line, `"id":42,"method":"ping"`) })
	w.until("the cancellation of 41", func(line string) bool { return strings.Contains(line, `"notifications/cancelled"`) })
	w.send(`{"jsonrpc":"2.0","id":42,"result":{}}`)
	w.send(`{"jsonrpc":"2.0","id":41,"result":{}}`) // too late: dropped
	w.send(`{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	w.until("ping 2", func(line string) bool { return strings.Contains(line, `"id":2,`) })
	var got []string
	for _, line := range strings.Split(h.received(), "\n") {
		if strings.Contains(line, `"id":41`) || strings.Contains(line, `"id":42`) {
			got = append(got, line)
		}
	}
	want := `[{"jsonrpc":"2.0","id":41,"error":{"code":-32800,"message":"bouncer: the request was cancelled"}},{"jsonrpc":"2.0","id":42,"result":{}}]`
	if len(got) != 1 || got[0] != want {
		t.Fatalf("the upstream got %q, want only %s", got, want)
	}
}
