package proxy

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/txtar"
)

var updateTranscripts = flag.Bool("update", false, "rewrite the server and audit sections of testdata/transcripts from the stdio runs")

// TestTranscripts replays testdata/transcripts/*.txtar as the go-sdk's
// conformance tests do: the client section's messages go to the proxy in
// order, and the answers it sends back must be the server section's (as
// JSON values; notifications, which the upstream may interleave anywhere,
// are not compared). The audit section, when present, lists the verdicts
// ("id tool verdict rule"), in the order the proxy promises (see
// sameAudit); the policy.yaml section is the policy. Each transcript runs
// against the helpdesk as a stdio process and over streamable HTTP: the
// pump's rules are the same for both.
func TestTranscripts(t *testing.T) {
	files, err := filepath.Glob("testdata/transcripts/*.txtar")
	if err != nil || len(files) == 0 {
		t.Fatalf("no transcripts: %v", err)
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".txtar")
		ar, err := txtar.ParseFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, kind := range []string{"stdio", "http"} {
			t.Run(name+"/"+kind, func(t *testing.T) {
				runTranscript(t, file, ar, kind)
			})
		}
	}
}

func section(ar *txtar.Archive, name string) ([]byte, bool) {
	for _, f := range ar.Files {
		if f.Name == name {
			return f.Data, true
		}
	}
	return nil, false
}

// jsonValues splits a section into its JSON values, compacted.
func jsonValues(t *testing.T, data []byte) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	var out []string
	for dec.More() {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			t.Fatalf("transcript: %v", err)
		}
		var b bytes.Buffer
		if err := json.Compact(&b, raw); err != nil {
			t.Fatal(err)
		}
		out = append(out, b.String())
	}
	return out
}

// idOf is a message's id as JSON ("" for a notification).
func idOf(t *testing.T, msg string) string {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if err := json.Unmarshal([]byte(msg), &m); err != nil {
		t.Fatalf("%s: %v", msg, err)
	}
	if m.Method != "" {
		return ""
	}
	return string(m.ID)
}

func runTranscript(t *testing.T, file string, ar *txtar.Archive, kind string) {
	pol, _ := section(ar, "policy.yaml")
	o := hopts{policy: string(pol)}
	if kind == "http" {
		o.http = "streamable"
	}
	h := newHarness(t, o)
	w := h.wire()
	clientData, ok := section(ar, "client")
	if !ok {
		t.Fatal("no client section")
	}
	// The client's requests, by id: each is owed one answer.
	owed := map[string]bool{}
	for _, msg := range jsonValues(t, clientData) {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		_ = json.Unmarshal([]byte(msg), &m)
		if m.Method != "" && len(m.ID) > 0 {
			owed[string(m.ID)] = true
		}
		w.send(msg)
	}
	want, _ := section(ar, "server")
	wantMsgs := jsonValues(t, want)
	// Read answers until every expected one came; then anything more
	// within a moment is unexpected.
	got := map[string]string{}
	var order []string
	need := len(wantMsgs)
	if *updateTranscripts {
		need = len(owed)
	}
	deadline := time.Now().Add(20 * time.Second)
	for len(got) < need && time.Now().Before(deadline) {
		line := w.nextWithin(time.Until(deadline))
		if line == "" {
			break
		}
		if id := idOf(t, line); id != "" {
			if _, dup := got[id]; dup {
				t.Errorf("two answers for id %s: %s", id, line)
			}
			got[id] = line
			order = append(order, id)
		}
	}
	for {
		line := w.nextWithin(300 * time.Millisecond)
		if line == "" {
			break
		}
		if id := idOf(t, line); id != "" {
			t.Errorf("unexpected answer: %s", line)
		}
	}
	auditGot := auditText(h)
	if *updateTranscripts {
		if kind == "stdio" {
			var b strings.Builder
			for _, id := range order {
				b.WriteString(got[id] + "\n")
			}
			writeSection(t, file, ar, "server", b.String())
			writeSection(t, file, ar, "audit", auditGot)
		}
		return
	}
	for _, w := range wantMsgs {
		id := idOf(t, w)
		g, ok := got[id]
		if !ok {
			t.Errorf("no answer for id %s; want %s", id, w)
			continue
		}
		if !sameJSON(g, w) {
			t.Errorf("answer for id %s:\n got %s\nwant %s", id, g, w)
		}
	}
	if len(got) > len(wantMsgs) {
		t.Errorf("%d answers, want %d", len(got), len(wantMsgs))
	}
	if wantAudit, ok := section(ar, "audit"); ok && !sameAudit(auditGot, string(wantAudit)) {
		t.Errorf("audit:\n got %s\nwant %s", auditGot, wantAudit)
	}
	if mails, ok := section(ar, "mails"); ok && strings.TrimSpace(string(mails)) != strings.TrimSpace(strings.Join(h.mails(), "\n")) {
		t.Errorf("mails the server sent:\n got %v\nwant %s", h.mails(), mails)
	}
}

// auditText is the audit log as "id tool verdict rule" lines; the id is
// the call's JSON-RPC id as sent, or "-" for a tools/call sent as a
// notification.
func auditText(h *harness) string {
	var b strings.Builder
	for _, e := range h.auditLines() {
		id := string(e.ID)
		if id == "" {
			id = "-"
		}
		b.WriteString(id + " " + e.Tool + " " + e.Verdict + " " + e.Rule + "\n")
	}
	return b.String()
}

// sameAudit compares audit lines in the order the proxy promises: lines
// are in the order calls were decided, and calls that wait for the same
// listing are decided in the order they came (docs/how-it-works.md,
// "Pinning"), so the lines of calls with an id must match in order. A
// tools/call sent as a notification (id "-") is not held: it is refused
// (never forwarded) the moment it is read, whatever the pin, so its line
// falls before or after those of calls held before it depending on when
// the upstream's tool list arrives, which is the upstream's timing, not
// the client's order. Those lines must all be there, in any position.
func sameAudit(got, want string) bool {
	split := func(text string) (ordered, anywhere []string) {
		for _, l := range strings.Split(strings.TrimSpace(text), "\n") {
			if l = strings.TrimSpace(l); l == "" {
				continue
			}
			if strings.HasPrefix(l, "- ") {
				anywhere = append(anywhere, l)
			} else {
				ordered = append(ordered, l)
			}
		}
		slices.Sort(anywhere)
		return ordered, anywhere
	}
	gotOrdered, gotAnywhere := split(got)
	wantOrdered, wantAnywhere := split(want)
	return slices.Equal(gotOrdered, wantOrdered) && slices.Equal(gotAnywhere, wantAnywhere)
}

func sameJSON(a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// writeSection replaces (or adds) a section of the transcript file.
func writeSection(t *testing.T, file string, ar *txtar.Archive, name, data string) {
	found := false
	for i := range ar.Files {
		if ar.Files[i].Name == name {
			ar.Files[i].Data = []byte(data)
			found = true
		}
	}
	if !found {
		ar.Files = append(ar.Files, txtar.File{Name: name, Data: []byte(data)})
	}
	if err := os.WriteFile(file, txtar.Format(ar), 0o644); err != nil {
		t.Fatal(err)
	}
}
