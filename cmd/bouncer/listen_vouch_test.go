package main

import (
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Vouching is its session's: what a trusted tool's output or a directory
// showed in one session lets a send through there without a question,
// and vouches for nothing in the same user's other session or in another
// user's. There the same send is asked about (and declined), or, when the
// vouching output was also untrusted (a directory's is), denied in the
// user's other session, whose check sees the taint of all her sessions
// but not the first one's vouch. The yes of an elicitation is tested the
// same way in TestListenElicitationOnPOSTStream.
func TestListenVouchingIsPerSession(t *testing.T) {
	cases := []struct {
		name, policy string
		show         string         // what echo returns in the first session
		send         map[string]any // the send it vouches for there
		otherDenied  bool           // the user's other session denies it (taint) rather than asks
	}{
		{
			name: "trusted output",
			policy: `
send_email:
  exfiltrating: true
  sink_params: [to]
echo:
  trusted_output: true
`,
			show: "carol@partner.example",
			send: map[string]any{"to": "carol@partner.example", "subject": "hi", "body": "hello"},
		},
		{
			name: "directory",
			policy: `
send_email:
  exfiltrating: true
  sink_params: [to, subject]
  sink_kinds: {subject: channel}
  trusted_destinations: [boss@corp.example]
echo:
  directory: channel
`,
			show:        "- ops-rota\n- release-train",
			send:        map[string]any{"to": "boss@corp.example", "subject": "release-train", "body": "hello"},
			otherDenied: true,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			lt := startListenTestPolicy(t, t.TempDir(), "off", nil, "", tc.policy)
			lt.waitPinned()
			asker := func(n *atomic.Int32) func(*mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				return func(*mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					n.Add(1)
					return &mcp.ElicitResult{Action: "decline"}, nil
				}
			}
			var askedA1, askedA2, askedB atomic.Int32
			a1 := lt.client("alice", asker(&askedA1))
			a2 := lt.client("alice", asker(&askedA2))
			b := lt.client("bob", asker(&askedB))

			if text, isErr := call(t, a1, "echo", map[string]any{"text": tc.show}); isErr || text != tc.show {
				t.Fatalf("echo: %q (isError %v)", text, isErr)
			}
			if text, isErr := call(t, a1, "send_email", tc.send); isErr || text != "sent" || askedA1.Load() != 0 {
				t.Fatalf("the send its own session's output vouches for: %q (isError %v), asked %d times; want it sent without a question", text, isErr, askedA1.Load())
			}
			text, isErr := call(t, a2, "send_email", tc.send)
			switch {
			case tc.otherDenied && (!isErr || !strings.Contains(text, "untrusted") || askedA2.Load() != 0):
				t.Errorf("alice's other session: %q (isError %v), asked %d times; want a taint deny: the first session's output is hers, its vouch is not", text, isErr, askedA2.Load())
			case !tc.otherDenied && (!isErr || askedA2.Load() != 1):
				t.Errorf("alice's other session: %q (isError %v), asked %d times; want it asked (nothing there vouches), and declined", text, isErr, askedA2.Load())
			}
			if text, isErr := call(t, b, "send_email", tc.send); !isErr || askedB.Load() != 1 {
				t.Errorf("bob's session: %q (isError %v), asked %d times; want it asked (nothing of his vouches or taints), and declined", text, isErr, askedB.Load())
			}
			mails, _ := os.ReadFile(filepath.Join(lt.dir, "mails.jsonl"))
			if n := strings.Count(string(mails), "\n"); n != 1 {
				t.Fatalf("%d mails sent, want the first session's one:\n%s", n, mails)
			}
		})
	}
}
