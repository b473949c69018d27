package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bouncer-mcp/bouncer/internal/testsupport/need"
)

// startIdP starts a real authorization server on loopback: oidc-provider,
// pinned in testdata/npm (testdata/npm/oidc-idp.mjs), issuing JWT access
// tokens by the client credentials grant for the resources given. It
// returns the issuer's URL.
func startIdP(t *testing.T, resources ...string) string {
	t.Helper()
	node := need.Node(t)
	need.NPM(t, "oidc-provider/package.json")
	script, err := filepath.Abs(filepath.Join("..", "..", "testdata", "npm", "oidc-idp.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, append([]string{script}, resources...)...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line := make(chan string, 1)
	go func() {
		l, _ := bufio.NewReader(out).ReadString('\n')
		line <- l
		_, _ = io.Copy(io.Discard, out)
	}()
	select {
	case l := <-line:
		iss, ok := strings.CutPrefix(strings.TrimSpace(l), "issuer ")
		if !ok {
			t.Fatalf("the identity provider said %q", l)
		}
		return iss
	case <-time.After(30 * time.Second):
		t.Fatal("the identity provider did not start within 30s")
	}
	return ""
}

// idpToken gets an access token for resource from the identity provider,
// as client, by the client credentials grant; "" with the provider's
// error when it refuses.
func idpToken(t *testing.T, issuer, client, resource string) (string, string) {
	t.Helper()
	form := url.Values{"grant_type": {"client_credentials"}, "scope": {"mcp"}, "resource": {resource}}
	req, _ := http.NewRequest(http.MethodPost, issuer+"/token", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(client, "s3cret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var tok struct {
		AccessToken string `json:"access_token"`
		Error       string `json:"error_description"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&tok); err != nil {
		t.Fatal(err)
	}
	return tok.AccessToken, tok.Error
}

// bouncer listen as an OAuth resource server in front of a real
// authorization server, found by its OpenID discovery alone (oidc-provider
// publishes no RFC 8414 metadata): a token it issued for the listener is
// taken, and its subject is the user the audit names; a token it issued
// for another resource, none at all, or a good one for another user's
// session is refused.
func TestListenRealIdentityProvider(t *testing.T) {
	const resource = "https://mcp.bouncer.test/mcp"
	const other = "https://other.bouncer.test/mcp"
	iss := startIdP(t, resource, other)
	home := t.TempDir()
	extra, _ := json.Marshal(map[string]any{"auth": "oauth", "tokens": nil, "resource": resource,
		"oauth": map[string]any{"issuer": iss, "scopes": []string{"mcp"}}})
	lt := startListenTestIn(t, home, "off", nil, string(extra))
	lt.waitPinned()

	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	st, _, hdr := lt.raw("nobody", http.MethodPost, init, nil)
	if want := `resource_metadata="https://mcp.bouncer.test/.well-known/oauth-protected-resource/mcp"`; st != http.StatusUnauthorized || !strings.Contains(hdr.Get("WWW-Authenticate"), want) {
		t.Fatalf("no token: %d, WWW-Authenticate %q; want 401 naming %s", st, hdr.Get("WWW-Authenticate"), want)
	}
	st, body, _ := lt.rawAt("nobody", "/.well-known/oauth-protected-resource/mcp", http.MethodGet, "", nil)
	if st != http.StatusOK || !strings.Contains(body, `"authorization_servers":["`+iss+`"]`) {
		t.Fatalf("the protected resource metadata: %d %s", st, body)
	}

	elsewhere, why := idpToken(t, iss, "alice-agent", other)
	if elsewhere == "" {
		t.Fatalf("no token for the other resource: %s", why)
	}
	lt.tokens["mallory"] = elsewhere
	if st, body, _ := lt.raw("mallory", http.MethodPost, init, nil); st != http.StatusUnauthorized {
		t.Fatalf("a token for another resource: %d %s; want 401", st, body)
	}

	if lt.tokens["alice"], why = idpToken(t, iss, "alice-agent", resource); lt.tokens["alice"] == "" {
		t.Fatalf("no token for the listener: %s", why)
	}
	if lt.tokens["bob"], why = idpToken(t, iss, "bob-agent", resource); lt.tokens["bob"] == "" {
		t.Fatalf("no token for bob: %s", why)
	}
	cs := lt.client("alice", nil)
	if text, isErr := call(t, cs, "send_email", map[string]any{"to": "boss@corp.example", "subject": "s", "body": "b"}); isErr || text != "sent" {
		t.Fatalf("alice's call with the provider's token: %q (isError %v)", text, isErr)
	}
	// bob's token, alice's session: not found.
	ping := `{"jsonrpc":"2.0","id":2,"method":"ping"}`
	if st, body, _ := lt.raw("bob", http.MethodPost, ping, map[string]string{"Mcp-Session-Id": cs.ID(), "Mcp-Protocol-Version": "2025-06-18"}); st != http.StatusNotFound {
		t.Fatalf("bob's token on alice's session: %d %s; want 404", st, body)
	}
	audit, err := os.ReadFile(filepath.Join(home, "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(audit), `"user":"alice-agent"`) {
		t.Errorf("the audit does not name the token's subject:\n%s", audit)
	}
}
