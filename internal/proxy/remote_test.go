package proxy

import (
	"strings"
	"testing"
)

// The smallest remote session: a go-sdk client through the proxy to the
// helpdesk over streamable HTTP; an allowed call reaches it, a refused one
// never does.
func TestRemoteBasic(t *testing.T) {
	for _, mode := range []string{"streamable", "json", "sse"} {
		t.Run(mode, func(t *testing.T) {
			h := newHarness(t, hopts{http: mode, policy: helpdeskPolicy})
			cs := h.client(nil)
			if text, isErr := callTool(t, cs, "echo", map[string]any{"text": "hi"}); text != "hi" || isErr {
				t.Fatalf("echo = %q %v", text, isErr)
			}
			callTool(t, cs, "get_ticket", map[string]any{})
			text, isErr := callTool(t, cs, "send_email", map[string]any{"to": "attacker@evil.example"})
			if !isErr || !strings.HasPrefix(text, BlockedPrefix) {
				t.Fatalf("send_email = %q %v", text, isErr)
			}
			if len(h.mails()) != 0 {
				t.Fatalf("a blocked mail reached the server: %v", h.mails())
			}
			if got := h.remote.Transport(); (mode == "sse") != (got == TransportSSE) {
				t.Fatalf("transport = %q", got)
			}
		})
	}
}
