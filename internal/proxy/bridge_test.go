//lint:file-ignore SA1019 the bridge's check of a sampling answer is what these tests check

package proxy

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// oldServer is a go-sdk server that speaks only one protocol version, over
// streamable HTTP: send_email records what it was sent; sample asks the
// client to sample and says what came back.
type oldServer struct {
	url string

	mu       sync.Mutex
	mails    []string
	versions map[string]bool // the Mcp-Protocol-Version headers it got
}

func startOldServer(t *testing.T, version string) *oldServer {
	t.Helper()
	o := &oldServer{versions: map[string]bool{}}
	s := mcp.NewServer(&mcp.Implementation{Name: "old", Version: "1"},
		&mcp.ServerOptions{SupportedProtocolVersions: []string{version}})
	s.AddTool(&mcp.Tool{Name: "send_email", Description: "Send an email", InputSchema: json.RawMessage(`{"type":"object","properties":{"to":{"type":"string"},"subject":{"type":"string"}}}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			o.mu.Lock()
			o.mails = append(o.mails, string(req.Params.Arguments))
			o.mu.Unlock()
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "sent"}}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "sample", Description: "Ask the client's model", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			text := ""
			res, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{
				Messages:  []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "hello"}}},
				MaxTokens: 10,
			})
			switch {
			case err != nil:
				text = "sampling failed: " + err.Error()
			default:
				b, _ := json.Marshal(res.Content)
				text = "sampled: " + string(b)
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil
		})
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if v := r.Header.Get("Mcp-Protocol-Version"); v != "" {
			o.mu.Lock()
			o.versions[v] = true
			o.mu.Unlock()
		}
		handler.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	o.url = srv.URL
	return o
}

// negotiatedVersions returns what the upstream answered and what the client
// was told.
func (h *harness) negotiatedVersions() (upstream, client string) {
	h.proxy.mu.Lock()
	defer h.proxy.mu.Unlock()
	return h.proxy.negotiated, h.proxy.told
}

// A client that can ask, of a server that speaks 2024-11-05 or 2025-03-26:
// the client is answered 2025-06-18, the approval question reaches it, and
// its yes lets the call through. The server is still spoken to at its own
// version (the go-sdk's HTTP server refuses a request whose
// Mcp-Protocol-Version it doesn't speak), and a sampling answer holding
// content the server's version lacks is refused for it.
func TestBridgeOldServerAsksTheClient(t *testing.T) {
	for _, tc := range []struct {
		version   string
		audioPass bool // audio content exists in the server's version
	}{
		{"2024-11-05", false},
		{"2025-03-26", true},
	} {
		t.Run(tc.version, func(t *testing.T) {
			srv := startOldServer(t, tc.version)
			h := newHarness(t, hopts{policy: helpdeskPolicy, url: srv.url})
			asked := make(chan string, 4)
			var content mcp.Content = &mcp.TextContent{Text: "a reply"}
			var contentMu sync.Mutex
			cs := h.client(&mcp.ClientOptions{
				ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					asked <- req.Params.Message
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{}}, nil
				},
				CreateMessageHandler: func(ctx context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
					contentMu.Lock()
					defer contentMu.Unlock()
					return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: content}, nil
				},
			})
			if got := cs.InitializeResult().ProtocolVersion; got != ElicitVersion {
				t.Fatalf("the client was answered protocol version %q, want %q", got, ElicitVersion)
			}
			if up, _ := h.negotiatedVersions(); up != tc.version {
				t.Fatalf("the server answered %q, want %q: the test server is not an old one", up, tc.version)
			}
			text, isErr := callTool(t, cs, "send_email", map[string]any{"to": "new@partner.example", "subject": "hi"})
			if isErr {
				t.Fatalf("approved send refused: %s", text)
			}
			select {
			case msg := <-asked:
				if !strings.Contains(msg, "new@partner.example") || !strings.Contains(msg, "send_email") {
					t.Errorf("question %q does not name the tool and destination", msg)
				}
			default:
				t.Fatal("the client was never asked")
			}
			srv.mu.Lock()
			mails := len(srv.mails)
			srv.mu.Unlock()
			if mails != 1 {
				t.Fatalf("the server got %d mails, want 1", mails)
			}
			if got := verdicts(h.auditLines()); got != "send_email:ask/sink send_email:allow/approval" {
				t.Fatalf("audit = %s", got)
			}

			// Sampling: text passes in every version.
			if text, _ := callTool(t, cs, "sample", map[string]any{}); !strings.Contains(text, `"type":"text"`) {
				t.Fatalf("text sampling through the bridge: %s", text)
			}
			// Audio only where the server's version has it.
			contentMu.Lock()
			content = &mcp.AudioContent{Data: []byte("RIFF"), MIMEType: "audio/wav"}
			contentMu.Unlock()
			text, _ = callTool(t, cs, "sample", map[string]any{})
			if tc.audioPass {
				if !strings.Contains(text, `"type":"audio"`) {
					t.Fatalf("audio sampling answer for a %s server: %s", tc.version, text)
				}
			} else if !strings.HasPrefix(text, "sampling failed") || !strings.Contains(text, `"audio"`) || !strings.Contains(text, tc.version) {
				t.Fatalf("audio sampling answer for a %s server = %q; want it refused, naming the content type and the version", tc.version, text)
			}

			srv.mu.Lock()
			defer srv.mu.Unlock()
			for v := range srv.versions {
				if v != tc.version {
					t.Errorf("the server was told protocol version %q; it speaks %q", v, tc.version)
				}
			}
			if !srv.versions[tc.version] {
				t.Errorf("the server never got an Mcp-Protocol-Version header: %v", srv.versions)
			}
		})
	}
}

// A blocked call's text names the real reason the client was not asked:
// the client, when it offered no elicitation or asked for a version
// without it; never the client when the server's version is the cause.
// The session is bridged only for a client that can ask.
func TestOldServerCodesNameTheCause(t *testing.T) {
	srv := startOldServer(t, "2024-11-05")
	t.Run("client without elicitation", func(t *testing.T) {
		h := newHarness(t, hopts{policy: helpdeskPolicy, url: srv.url})
		cs := h.client(nil)
		if got := cs.InitializeResult().ProtocolVersion; got != "2024-11-05" {
			t.Fatalf("a client that can't ask was answered %q; the server's 2024-11-05 should pass unchanged", got)
		}
		text, isErr := callTool(t, cs, "send_email", map[string]any{"to": "new@partner.example"})
		if !isErr || codeRe.FindString(text) == "" {
			t.Fatalf("send = %q; want blocked with a code", text)
		}
		if !strings.Contains(text, "this client can't ask for it (it did not offer MCP elicitation") {
			t.Errorf("the text does not say the client offers no elicitation: %q", text)
		}
		if strings.Contains(text, "2024-11-05") || strings.Contains(text, "server \"helpdesk\" speaks") {
			t.Errorf("the text blames the server's version for the client's lack: %q", text)
		}
	})
	t.Run("client asking for an old version", func(t *testing.T) {
		h := newHarness(t, hopts{policy: helpdeskPolicy, url: srv.url})
		r := h.raw()
		r.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{"elicitation":{}},"clientInfo":{"name":"raw","version":"1"}}}`)
		var init struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		if err := json.Unmarshal(r.response(0).Result, &init); err != nil || init.ProtocolVersion != "2024-11-05" {
			t.Fatalf("a client asking for 2025-03-26 was answered %q (%v); want the server's 2024-11-05", init.ProtocolVersion, err)
		}
		r.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		r.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"send_email","arguments":{"to":"new@partner.example"}}}`)
		text, isErr := resultText(t, r.response(1))
		if !isErr || codeRe.FindString(text) == "" {
			t.Fatalf("send = %q; want blocked with a code", text)
		}
		if !strings.Contains(text, "this client asked for MCP protocol version 2025-03-26, which has no way to ask") {
			t.Errorf("the text does not name the client's version as the cause: %q", text)
		}
	})
}

// whyNotAsked, for every way a session can lack elicitation: the client
// is blamed only for what is the client's.
func TestWhyNotAsked(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		elicit               bool
		requested, answered  string
		want, mustNotContain string
	}{
		{"no elicitation", false, "2025-06-18", "2025-06-18", "this client can't ask for it", "speaks"},
		{"no elicitation, old server", false, "2025-11-25", "2024-11-05", "this client can't ask for it", "2024-11-05"},
		{"client's old version", true, "2025-03-26", "2025-03-26", "this client asked for MCP protocol version 2025-03-26", "can't ask for it"},
		{"client named none", true, "", "2024-11-05", "this client named no MCP protocol version", "can't ask for it"},
		{"server's unbridgeable version", true, "2025-11-25", "2024-10-07",
			`the client can ask, but server "mail" speaks MCP protocol version "2024-10-07"`, "this client can't"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := New(Config{Server: "mail"})
			p.clientElicit, p.requested, p.negotiated, p.told = tc.elicit, tc.requested, tc.answered, tc.answered
			got := p.whyNotAsked()
			if !strings.Contains(got, tc.want) {
				t.Errorf("whyNotAsked() = %q, want it to contain %q", got, tc.want)
			}
			if strings.Contains(got, tc.mustNotContain) {
				t.Errorf("whyNotAsked() = %q, must not contain %q", got, tc.mustNotContain)
			}
		})
	}
}

// Which sessions are bridged: only a client that can ask and asked for a
// version with elicitation, of a server whose version the bridge knows.
func TestBridges(t *testing.T) {
	for _, tc := range []struct {
		requested, answered string
		elicit, want        bool
	}{
		{"2025-06-18", "2024-11-05", true, true},
		{"2025-11-25", "2025-03-26", true, true},
		{"2025-11-25", "2024-11-05", false, false}, // can't ask: nothing to bridge for
		{"2025-03-26", "2024-11-05", true, false},  // the client's own version has no elicitation
		{"2024-11-05", "2024-11-05", true, false},
		{"2025-11-25", "2024-10-07", true, false}, // a version the bridge doesn't know
		{"2025-11-25", "2025-06-18", true, false}, // has elicitation itself
		{"2025-11-25", "", true, false},
	} {
		if got := bridges(tc.requested, tc.answered, tc.elicit); got != tc.want {
			t.Errorf("bridges(%q, %q, %v) = %v, want %v", tc.requested, tc.answered, tc.elicit, got, tc.want)
		}
	}
}

// The client's sampling answer, checked against the server's version.
func TestSamplingMismatch(t *testing.T) {
	old := bridgeable["2024-11-05"]
	for _, tc := range []struct {
		result string
		ok     bool
	}{
		{`{"role":"assistant","model":"m","content":{"type":"text","text":"hi"}}`, true},
		{`{"role":"assistant","model":"m","content":{"type":"image","data":"AA==","mimeType":"image/png"}}`, true},
		{`{"role":"assistant","model":"m","content":{"type":"audio","data":"AA==","mimeType":"audio/wav"}}`, false},
		{`{"role":"assistant","model":"m","content":[{"type":"text","text":"hi"}]}`, false},
		{`{"role":"assistant","model":"m"}`, false},
		{`{"role":"assistant","model":"m","content":{"type":"tool_use","id":"1","name":"x","input":{}}}`, false},
		{`[]`, false},
	} {
		why := samplingMismatch(json.RawMessage(tc.result), old)
		if (why == "") != tc.ok {
			t.Errorf("samplingMismatch(%s) = %q; want ok=%v", tc.result, why, tc.ok)
		}
	}
}

// The reference Slack server (@modelcontextprotocol/server-slack, on the
// TypeScript SDK 1.0.1) answers 2024-11-05 whatever it is asked. Through
// Bouncer a client that can ask gets the approval question, and its yes
// sends the post. The server's calls to Slack's API are caught by a
// preloaded fetch that records them: there is no network here.
func TestBridgeNPMSlack(t *testing.T) {
	cmd := npmServer(t, "server-slack")
	dir := t.TempDir()
	fetchLog := filepath.Join(dir, "fetch.jsonl")
	stub := filepath.Join(dir, "nofetch.cjs")
	if err := os.WriteFile(stub, []byte(`const fs = require("node:fs");
globalThis.fetch = async (url, init = {}) => {
  fs.appendFileSync(process.env.BOUNCER_TEST_FETCH_LOG, JSON.stringify({url: String(url), body: init.body ?? null}) + "\n");
  return new Response(JSON.stringify({ok: true, channel: "C0NEW", ts: "1.0"}), {headers: {"content-type": "application/json"}});
};
`), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd.Env = append(os.Environ(), "SLACK_BOT_TOKEN=xoxb-dummy", "SLACK_TEAM_ID=T00000000",
		"NODE_OPTIONS=--require "+stub, "BOUNCER_TEST_FETCH_LOG="+fetchLog)
	h := newHarness(t, hopts{cmd: &cmd})
	asked := make(chan string, 4)
	cs := h.client(&mcp.ClientOptions{
		ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked <- req.Params.Message
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{}}, nil
		},
	})
	if up, told := h.negotiatedVersions(); up != "2024-11-05" || told != ElicitVersion {
		t.Fatalf("server answered %q, client told %q; want 2024-11-05 bridged to %s", up, told, ElicitVersion)
	}
	init := cs.InitializeResult()
	if init.ProtocolVersion != ElicitVersion {
		t.Fatalf("the client was answered %q", init.ProtocolVersion)
	}
	// Only the version changed: the rest is the server's own answer.
	if init.ServerInfo == nil || init.ServerInfo.Name != "Slack MCP Server" || init.Capabilities.Tools == nil || init.Capabilities.Completions != nil {
		t.Fatalf("the initialize result the client got is not the server's: %+v", init)
	}
	text, isErr := callTool(t, cs, "slack_post_message", map[string]any{"channel_id": "C0NEW", "text": "status report"})
	if isErr {
		t.Fatalf("approved post refused: %s", text)
	}
	select {
	case msg := <-asked:
		if !strings.Contains(msg, "C0NEW") || !strings.Contains(msg, "slack_post_message") {
			t.Errorf("question %q does not name the tool and channel", msg)
		}
	case <-time.After(time.Second):
		t.Fatal("the client was never asked")
	}
	b, err := os.ReadFile(fetchLog)
	if err != nil {
		t.Fatalf("the server never called Slack's API: %v", err)
	}
	if !strings.Contains(string(b), "chat.postMessage") || !strings.Contains(string(b), `\"channel\":\"C0NEW\"`) {
		t.Fatalf("the server's calls: %s", b)
	}
	if got := verdicts(h.auditLines()); got != "slack_post_message:ask/sink slack_post_message:allow/approval" {
		t.Fatalf("audit = %s", got)
	}
}
