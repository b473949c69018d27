package oauth

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The test binary plays two more parts, chosen by BOUNCER_OAUTH_ROLE:
//
//   - browser: the scripted user behind a fake $BROWSER. It fetches the
//     URL it is given and follows the redirects, the last of which is the
//     authorization server's redirect to Bouncer's loopback listener,
//     exactly what a browser does when the user has nothing to click.
//   - client: an MCP client as `bouncer run --url` builds it (the
//     go-sdk's streamable transport over this package's RoundTripper),
//     for the conformance suite's client mode.
//   - bouncer-client: an MCP client that starts the real `bouncer run
//     --url` (built by buildBouncer, in BOUNCER_TEST_BIN) on stdio,
//     sandboxed, for the conformance suite's client mode.
//   - the sign-in helper, when StartHelper re-executes it (HelperName).
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == HelperName {
		os.Exit(RunHelper(os.Args[2:]))
	}
	switch os.Getenv("BOUNCER_OAUTH_ROLE") {
	case "browser":
		os.Exit(fakeBrowser(os.Args[1:]))
	case "client":
		os.Exit(conformanceClient(os.Args[1:], runConformanceClient))
	case "bouncer-client":
		os.Exit(conformanceClient(os.Args[1:], runBouncerClient))
	}
	code := m.Run()
	if builtDir != "" {
		os.RemoveAll(builtDir)
	}
	os.Exit(code)
}

func fakeBrowser(args []string) int {
	if len(args) != 1 {
		fmt.Fprintln(os.Stderr, "fake browser: want one URL, got", args)
		return 2
	}
	if rec := os.Getenv("BOUNCER_OAUTH_BROWSER_RECORD"); rec != "" {
		f, err := os.OpenFile(rec, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err == nil {
			fmt.Fprintln(f, args[0])
			f.Close()
		}
	}
	c := &http.Client{Timeout: 20 * time.Second}
	resp, err := c.Get(args[0])
	if err != nil {
		fmt.Fprintln(os.Stderr, "fake browser:", err)
		return 1
	}
	resp.Body.Close()
	return 0
}

// conformanceClient is the client the conformance suite starts with the
// server URL as its argument, the scenario in MCP_CONFORMANCE_SCENARIO
// and its context (pre-registered credentials) in MCP_CONFORMANCE_CONTEXT.
func conformanceClient(args []string, run func(serverURL string) error) int {
	if len(args) != 1 {
		fmt.Fprintln(os.Stderr, "conformance client: want the server URL")
		return 2
	}
	if err := run(args[0]); err != nil {
		fmt.Fprintln(os.Stderr, "conformance client:", err)
		return 1
	}
	return 0
}

func runConformanceClient(serverURL string) error {
	var cctx map[string]any
	_ = json.Unmarshal([]byte(os.Getenv("MCP_CONFORMANCE_CONTEXT")), &cctx)
	state, err := os.MkdirTemp("", "bouncer-oauth-conf-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(state)
	cfg := Config{
		ServerURL: serverURL,
		StateDir:  filepath.Join(state, "home"),
		// The suite's CIMD URL: its authorization server does not fetch it.
		ClientMetadataURL: "https://conformance-test.local/client-metadata.json",
		Timeout:           20 * time.Second,
	}
	if id, ok := cctx["client_id"].(string); ok {
		cfg.ClientID = id
		cfg.ClientSecret, _ = cctx["client_secret"].(string)
	}
	a, err := New(cfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "bouncer", Version: "test"}, nil)
	t := &mcp.StreamableClientTransport{
		Endpoint:   serverURL,
		HTTPClient: &http.Client{Transport: a.RoundTripper(nil)},
	}
	session, err := client.Connect(ctx, t, nil)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer session.Close()
	if _, err := session.ListTools(ctx, nil); err != nil {
		return fmt.Errorf("tools/list: %w", err)
	}
	if _, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "test-tool", Arguments: map[string]any{}}); err != nil {
		return fmt.Errorf("tools/call: %w", err)
	}
	return nil
}

// runBouncerClient is the client a user's MCP client is to bouncer: it
// starts `bouncer run --url` with the sandbox on and speaks MCP to it on
// stdio; bouncer does the authorization. The suite's checks then hold
// for bouncer run as it ships: sign-in before the sandbox, the session
// and any later sign-in (a step-up) after it.
func runBouncerClient(serverURL string) error {
	home, err := os.MkdirTemp("", "bouncer-oauth-run-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(home)
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	cmd := exec.Command(os.Getenv("BOUNCER_TEST_BIN"), "run", "--home", home, "--sandbox", "auto", "--url", serverURL)
	cmd.Stderr = os.Stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "bouncer-test", Version: "test"}, nil)
	session, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer session.Close()
	if _, err := session.ListTools(ctx, nil); err != nil {
		return fmt.Errorf("tools/list: %w", err)
	}
	res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "test-tool", Arguments: map[string]any{}})
	if err != nil {
		return fmt.Errorf("tools/call: %w", err)
	}
	if res.IsError {
		return fmt.Errorf("tools/call answered an error: %+v", res.Content)
	}
	return nil
}
