package oauth

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bouncer-mcp/bouncer/internal/testsupport/syncbuf"
)

// fixture is an authorization server, an MCP server it protects, a state
// directory, and a scripted user behind $BROWSER.
type fixture struct {
	t      *testing.T
	as     *testAS
	rs     *testRS
	home   string
	opened string // the fake browser's record of the URLs it opened
	stderr *syncbuf.Buffer
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	as := newTestAS(t)
	f := &fixture{t: t, as: as, rs: newTestRS(t, as, nil), home: filepath.Join(t.TempDir(), "home"), stderr: &syncbuf.Buffer{}}
	dir := t.TempDir()
	f.opened = filepath.Join(dir, "opened")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	browser := writeScript(t, dir, "browser", "BOUNCER_OAUTH_ROLE=browser exec '"+self+"' \"$@\"")
	t.Setenv("BROWSER", browser)
	t.Setenv("BOUNCER_OAUTH_BROWSER_RECORD", f.opened)
	return f
}

func (f *fixture) config() Config {
	return Config{ServerURL: f.rs.URL, StateDir: f.home, Name: "remote", Stderr: f.stderr, Timeout: 20 * time.Second}
}

func (f *fixture) authorizer(cfg Config) *Authorizer {
	f.t.Helper()
	a, err := New(cfg)
	if err != nil {
		f.t.Fatal(err)
	}
	return a
}

func (f *fixture) openedURLs() []string {
	data, _ := os.ReadFile(f.opened)
	return strings.Fields(string(data))
}

// session connects an MCP client as bouncer run --url does and calls
// the tool once.
func session(t *testing.T, a *Authorizer, endpoint string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "bouncer", Version: "test"}, nil)
	s, err := c.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint:   endpoint,
		HTTPClient: &http.Client{Transport: a.RoundTripper(nil)},
		MaxRetries: -1,
	}, nil)
	if err != nil {
		return err
	}
	defer s.Close()
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
	if err != nil {
		return err
	}
	if res.IsError || res.Content[0].(*mcp.TextContent).Text != "hi" {
		t.Fatalf("tool result %+v", res)
	}
	return nil
}

// noSecrets fails the test if s holds any secret the authorization
// server issued or received.
func (f *fixture) noSecrets(what, s string) {
	f.t.Helper()
	for _, sec := range f.as.allSecrets() {
		if sec != "" && strings.Contains(s, sec) {
			f.t.Errorf("%s holds a secret (%.12s…):\n%s", what, sec, s)
		}
	}
}

func TestSignInStoreAndReload(t *testing.T) {
	f := newFixture(t)
	a := f.authorizer(f.config())
	if err := session(t, a, f.rs.URL); err != nil {
		t.Fatal(err)
	}
	if n := f.as.count("authorize"); n != 1 {
		t.Fatalf("%d authorization requests, want 1", n)
	}
	if n := f.as.count("register"); n != 1 {
		t.Fatalf("%d registrations, want 1", n)
	}

	// The scripted user got the authorization URL through $BROWSER, and
	// it is the one printed on stderr.
	opened := f.openedURLs()
	if len(opened) != 1 {
		t.Fatalf("browser opened %q", opened)
	}
	if !strings.Contains(f.stderr.String(), opened[0]) {
		t.Errorf("stderr does not show the URL:\n%s", f.stderr)
	}
	u, _ := url.Parse(opened[0])
	q := u.Query()
	if q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" || q.Get("state") == "" {
		t.Errorf("no PKCE S256 or state: %s", u)
	}
	if q.Get("resource") != f.rs.URL {
		t.Errorf("resource %q, want %q", q.Get("resource"), f.rs.URL)
	}
	if ru, _ := url.Parse(q.Get("redirect_uri")); ru.Hostname() != "127.0.0.1" || ru.Path != "/callback" {
		t.Errorf("redirect_uri %q", q.Get("redirect_uri"))
	}
	// The scope is the metadata's scopes_supported, plus offline_access
	// the authorization server offers.
	if q.Get("scope") != "mcp:read mcp:write offline_access" {
		t.Errorf("scope %q", q.Get("scope"))
	}

	// Stored 0600 in a 0700 directory, and nothing else left there.
	dir := filepath.Join(f.home, "oauth")
	fi, err := os.Stat(dir)
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("state dir: %v %v", fi.Mode(), err)
	}
	entries, _ := os.ReadDir(dir)
	var files []os.DirEntry
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".lock") {
			files = append(files, e)
		}
	}
	if len(files) != 1 {
		t.Fatalf("%d files in %s", len(files), dir)
	}
	fi, _ = files[0].Info()
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("%s is %v, want 0600", fi.Name(), fi.Mode().Perm())
	}
	if strings.Contains(fi.Name(), "127.0.0.1") {
		t.Errorf("file name %s shows the server", fi.Name())
	}

	// A new process with the same state directory signs in with nothing:
	// no browser, no registration.
	b := f.authorizer(f.config())
	if !b.SignedIn() {
		t.Fatal("the stored sign-in was not loaded")
	}
	if err := session(t, b, f.rs.URL); err != nil {
		t.Fatal(err)
	}
	if n := f.as.count("authorize"); n != 1 {
		t.Fatalf("%d authorization requests after reload, want 1", n)
	}
	if n := f.as.count("register"); n != 1 {
		t.Fatalf("%d registrations after reload, want 1", n)
	}
	f.noSecrets("stderr", f.stderr.String())
}

func TestRefreshWhenExpired(t *testing.T) {
	f := newFixture(t)
	now := time.Now()
	var mu sync.Mutex
	cfg := f.config()
	cfg.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	a := f.authorizer(cfg)
	if err := a.Ensure(context.Background()); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(a.store.path(a.server))

	mu.Lock()
	now = now.Add(2 * time.Hour) // the token (1h) has expired
	mu.Unlock()
	if err := session(t, a, f.rs.URL); err != nil {
		t.Fatal(err)
	}
	if n := f.as.count("refresh_token"); n != 1 {
		t.Fatalf("%d refreshes, want 1", n)
	}
	if n := f.as.count("authorize"); n != 1 {
		t.Fatalf("%d authorization requests, want 1 (the refresh should do)", n)
	}
	// The refresh sent the resource, and the rotated tokens were stored.
	form := f.as.lastForms[len(f.as.lastForms)-1]
	if form.Get("grant_type") != "refresh_token" || form.Get("resource") != f.rs.URL {
		t.Errorf("refresh request %v", form)
	}
	after, _ := os.ReadFile(a.store.path(a.server))
	if bytes.Equal(before, after) {
		t.Error("the refreshed token was not stored")
	}
	// A new process uses the stored refreshed token.
	b := f.authorizer(cfg)
	if err := session(t, b, f.rs.URL); err != nil {
		t.Fatal(err)
	}
	if n := f.as.count("refresh_token") + f.as.count("authorize"); n != 2 {
		t.Errorf("the reloaded token needed %d more grants", n-2)
	}
}

func TestRefreshOn401(t *testing.T) {
	f := newFixture(t)
	a := f.authorizer(f.config())
	if err := session(t, a, f.rs.URL); err != nil {
		t.Fatal(err)
	}
	f.as.revoke(false) // the server no longer takes the access token
	if err := session(t, a, f.rs.URL); err != nil {
		t.Fatal(err)
	}
	if n := f.as.count("refresh_token"); n != 1 {
		t.Fatalf("%d refreshes, want 1", n)
	}
	if n := f.as.count("authorize"); n != 1 {
		t.Fatalf("%d authorization requests, want 1", n)
	}
}

func TestRefusedRefreshSignsInAgain(t *testing.T) {
	f := newFixture(t)
	a := f.authorizer(f.config())
	if err := session(t, a, f.rs.URL); err != nil {
		t.Fatal(err)
	}
	f.as.revoke(true) // access and refresh tokens are void
	if err := session(t, a, f.rs.URL); err != nil {
		t.Fatal(err)
	}
	if n := f.as.count("refresh_token"); n != 1 {
		t.Fatalf("%d refresh attempts, want 1", n)
	}
	if n := f.as.count("authorize"); n != 2 {
		t.Fatalf("%d authorization requests, want 2 (a new sign-in)", n)
	}
	if n := f.as.count("register"); n != 1 {
		t.Fatalf("%d registrations, want 1 (the client is reused)", n)
	}
	if len(f.openedURLs()) != 2 {
		t.Fatalf("browser opened %d times", len(f.openedURLs()))
	}
	if !strings.Contains(f.stderr.String(), "refused to refresh") {
		t.Errorf("stderr does not say why it signs in again:\n%s", f.stderr)
	}
	f.noSecrets("stderr", f.stderr.String())
}

func TestStateMismatchRefused(t *testing.T) {
	f := newFixture(t)
	f.as.tamper = "state"
	a := f.authorizer(f.config())
	err := a.Ensure(context.Background())
	if !errors.Is(err, ErrSignInFailed) || !strings.Contains(err.Error(), "state") {
		t.Fatalf("err = %v", err)
	}
	if n := f.as.count("authorization_code"); n != 0 {
		t.Fatalf("the code of a forged redirect was exchanged (%d)", n)
	}
	if a.SignedIn() {
		t.Fatal("signed in after a forged redirect")
	}
	if _, err := os.Stat(a.store.path(a.server)); err == nil {
		t.Error("a token file was written")
	}
}

func TestLoopbackOneShot(t *testing.T) {
	r, err := listenLoopback(0)
	if err != nil {
		t.Fatal(err)
	}
	r.start("the-state")
	defer r.close()
	get := func(q string) int {
		resp, err := http.Get(r.redirectURI() + q)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if c := get("/../favicon.ico"); c != 404 && c != 200 {
		t.Logf("other path: %d", c)
	}
	if c := get("?code=abc&state=the-state"); c != 200 {
		t.Fatalf("callback: %d", c)
	}
	if c := get("?code=evil&state=the-state"); c != http.StatusGone {
		t.Fatalf("second callback: %d, want 410", c)
	}
	cb := r.wait(context.Background())
	if cb.err != nil || cb.code != "abc" {
		t.Fatalf("got %+v", cb)
	}
	if !strings.HasPrefix(r.redirectURI(), "http://127.0.0.1:") {
		t.Errorf("redirect URI %s", r.redirectURI())
	}
}

func TestSignInTimeout(t *testing.T) {
	f := newFixture(t)
	cfg := f.config()
	cfg.Timeout = 500 * time.Millisecond
	opened := ""
	cfg.OpenBrowser = func(u string) error { opened = u; return errors.New("no display") } // nobody signs in
	a := f.authorizer(cfg)
	err := a.Ensure(context.Background())
	if !errors.Is(err, ErrSignInFailed) || !strings.Contains(err.Error(), "within 500ms") {
		t.Fatalf("err = %v", err)
	}
	if opened == "" || !strings.Contains(f.stderr.String(), "could not open a browser (no display); open the URL above yourself") {
		t.Errorf("stderr:\n%s", f.stderr)
	}
}

func TestConcurrentRequestsOneSignIn(t *testing.T) {
	f := newFixture(t)
	a := f.authorizer(f.config())
	client := &http.Client{Transport: a.RoundTripper(nil)}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest("POST", f.rs.URL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			resp, err := client.Do(req)
			if err != nil {
				errs <- err
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				errs <- errors.New(resp.Status)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := f.as.count("authorize"); n != 1 {
		t.Fatalf("%d sign-ins for 8 concurrent requests, want 1", n)
	}
}

func TestSealedNeedsRestart(t *testing.T) {
	f := newFixture(t)
	a := f.authorizer(f.config())
	if err := a.Ensure(context.Background()); err != nil {
		t.Fatal(err)
	}
	eps := a.Endpoints()
	if len(eps) != 2 || !strings.HasPrefix(f.as.URL(), "http://"+eps[1]) {
		t.Errorf("endpoints %q", eps)
	}
	a.Seal()
	// A refresh still works once sealed.
	f.as.revoke(false)
	if err := session(t, a, f.rs.URL); err != nil {
		t.Fatal(err)
	}
	// A new sign-in does not.
	f.as.revoke(true)
	err := session(t, a, f.rs.URL)
	if !errors.Is(err, ErrSignInNeeded) && (err == nil || !strings.Contains(err.Error(), "restart")) {
		t.Fatalf("err = %v", err)
	}
	if !strings.Contains(err.Error(), "restart") {
		t.Errorf("the error does not say what to do: %v", err)
	}
	if n := len(f.openedURLs()); n != 1 {
		t.Errorf("the browser was opened %d times", n)
	}
	f.noSecrets("error", err.Error())
}

func TestTokenOnlyToTheServer(t *testing.T) {
	f := newFixture(t)
	a := f.authorizer(f.config())
	if err := a.Ensure(context.Background()); err != nil {
		t.Fatal(err)
	}
	var got []string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Get("Authorization"))
		if r.URL.Path == "/hop" {
			// A redirect back to the server's own origin from elsewhere.
			http.Redirect(w, r, "/done", http.StatusFound)
			return
		}
	}))
	defer other.Close()
	c := &http.Client{Transport: a.RoundTripper(nil)}
	for _, u := range []string{other.URL + "/x", other.URL + "/hop"} {
		resp, err := c.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	for _, h := range got {
		if h != "" {
			t.Fatalf("another origin got Authorization %q", h)
		}
	}
	// A redirect from the server to another origin loses the token too.
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, other.URL+"/y", http.StatusFound) })
	same := httptest.NewServer(mux)
	defer same.Close()
	b := f.authorizer(Config{ServerURL: same.URL + "/mcp", StateDir: f.home, Stderr: f.stderr})
	b.rec = a.rec
	resp, err := (&http.Client{Transport: b.RoundTripper(nil)}).Get(same.URL + "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if h := got[len(got)-1]; h != "" {
		t.Fatalf("the redirect target got Authorization %q", h)
	}
}

func TestNoSecretInErrors(t *testing.T) {
	f := newFixture(t)
	f.as.hostile = true
	f.as.authMeth = []string{"client_secret_basic"} // so there is a client secret to leak
	a := f.authorizer(f.config())
	if err := a.Ensure(context.Background()); err != nil {
		t.Fatal(err)
	}
	var errs []string
	// A refused refresh whose answer echoes the refresh token and the
	// client's Basic credentials.
	f.as.revoke(true)
	cfg := f.config()
	cfg.OpenBrowser = func(string) error { return nil } // and then nobody signs in
	cfg.Timeout = 300 * time.Millisecond
	b := f.authorizer(cfg)
	if err := session(t, b, f.rs.URL); err == nil {
		t.Fatal("no error")
	} else {
		errs = append(errs, err.Error())
	}
	// An exchange whose answer echoes the code, the verifier and the
	// secret: every code is refused as used.
	c := f.authorizer(f.config())
	c.Logout()
	f.as.mu.Lock()
	f.as.refuseCodes = true
	f.as.mu.Unlock()
	if err := c.Ensure(context.Background()); err == nil {
		t.Fatal("no error")
	} else {
		errs = append(errs, err.Error())
	}
	// A sealed authorizer's error, and one of a server that is down.
	d := f.authorizer(f.config())
	d.Seal()
	f.as.revoke(true)
	if err := session(t, d, f.rs.URL); err != nil {
		errs = append(errs, err.Error())
	}
	f.as.srv.Close()
	e := f.authorizer(f.config())
	rec := *a.rec
	tok := *rec.Token
	tok.Expiry = time.Now().Add(-time.Hour)
	rec.Token = &tok
	e.adopt(&rec)
	if err := e.Ensure(context.Background()); err != nil {
		errs = append(errs, err.Error())
	}

	if len(errs) < 3 {
		t.Fatalf("only %d errors: %q", len(errs), errs)
	}
	for _, s := range errs {
		t.Logf("error: %s", s)
		f.noSecrets("error", s)
	}
	f.noSecrets("stderr", f.stderr.String())
	// The hostile server did send the secrets back (or the test proves nothing).
	sawEcho := false
	for _, form := range f.as.lastForms {
		if form.Get("code_verifier") != "" || form.Get("refresh_token") != "" {
			sawEcho = true
		}
	}
	if !sawEcho {
		t.Fatal("no token request carried a secret to echo")
	}
}

func TestEnsureWithoutAuth(t *testing.T) {
	// A server that wants no token: Ensure asks it once and does nothing.
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server {
		return mcp.NewServer(&mcp.Implementation{Name: "open", Version: "1"}, nil)
	}, nil))
	defer srv.Close()
	a, err := New(Config{ServerURL: srv.URL, StateDir: t.TempDir(), OpenBrowser: func(string) error {
		t.Error("browser opened")
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Ensure(context.Background()); err != nil {
		t.Fatal(err)
	}
	if a.SignedIn() {
		t.Fatal("signed in to a server that wants no token")
	}
}

func TestHandlerForSDKTransport(t *testing.T) {
	// The alternative plug: the go-sdk's own OAuthHandler hook.
	f := newFixture(t)
	a := f.authorizer(f.config())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "bouncer", Version: "test"}, nil)
	s, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: f.rs.URL, OAuthHandler: a.Handler(), MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "x"}}); err != nil {
		t.Fatal(err)
	}
	if n := f.as.count("authorize"); n != 1 {
		t.Fatalf("%d sign-ins", n)
	}
}

func TestConfiguredClient(t *testing.T) {
	f := newFixture(t)
	// Registered by hand, with a fixed redirect port.
	f.as.clients["pre"] = &asClient{id: "pre", secret: "pre-secret-value", method: "client_secret_basic"}
	r, _ := listenLoopback(0)
	port := r.port()
	r.close()
	f.as.clients["pre"].redirects = []string{"http://127.0.0.1:" + itoa(port) + "/callback"}
	cfg := f.config()
	cfg.ClientID, cfg.ClientSecret, cfg.RedirectPort = "pre", "pre-secret-value", port
	a := f.authorizer(cfg)
	if err := session(t, a, f.rs.URL); err != nil {
		t.Fatal(err)
	}
	if n := f.as.count("register"); n != 0 {
		t.Fatalf("registered %d clients despite a configured one", n)
	}
	// Bound to another authorization server: refused before anything is sent.
	cfg.ClientIssuer = "https://login.example.com"
	cfg.StateDir = t.TempDir()
	b := f.authorizer(cfg)
	err := b.Ensure(context.Background())
	if err == nil || !strings.Contains(err.Error(), "belongs to https://login.example.com") {
		t.Fatalf("err = %v", err)
	}
	if strings.Contains(err.Error(), "pre-secret-value") {
		t.Fatal("secret in error")
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestSSETransport(t *testing.T) {
	// The older SSE transport: the GET stream is what gets the 401.
	f := newFixture(t)
	cfg := f.config()
	cfg.ServerURL = f.rs.srv.URL + "/sse"
	a := f.authorizer(cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "bouncer", Version: "test"}, nil)
	s, err := c.Connect(ctx, &mcp.SSEClientTransport{Endpoint: cfg.ServerURL, HTTPClient: &http.Client{Transport: a.RoundTripper(nil)}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "x"}}); err != nil {
		t.Fatal(err)
	}
	if n := f.as.count("authorize"); n != 1 {
		t.Fatalf("%d sign-ins", n)
	}
}

func TestUserAuthorizationHeaderUntouched(t *testing.T) {
	f := newFixture(t)
	a := f.authorizer(f.config())
	req, _ := http.NewRequest("POST", f.rs.URL, strings.NewReader(`{}`))
	req.Header.Set("Authorization", "Bearer user-configured-static-token")
	resp, err := (&http.Client{Transport: a.RoundTripper(nil)}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 || f.as.count("authorize") != 0 {
		t.Fatalf("status %d, %d sign-ins: a configured credential was replaced", resp.StatusCode, f.as.count("authorize"))
	}
}

func TestTwoProcessesRefreshOnce(t *testing.T) {
	// Two proxies for one server (two MCP clients) share the stored
	// sign-in. When the token expires, one refreshes; the other takes the
	// rotated tokens from the file instead of spending the refresh token
	// the server has just revoked (which would cost a new sign-in).
	f := newFixture(t)
	now := time.Now()
	var mu sync.Mutex
	cfg := f.config()
	cfg.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	if err := f.authorizer(cfg).Ensure(context.Background()); err != nil {
		t.Fatal(err)
	}
	p1, p2 := f.authorizer(cfg), f.authorizer(cfg)
	mu.Lock()
	now = now.Add(2 * time.Hour)
	mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range []*Authorizer{p1, p2} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := session(t, p, f.rs.URL); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if n := f.as.count("refresh_token"); n != 1 {
		t.Errorf("%d refreshes, want 1", n)
	}
	if n := f.as.count("authorize"); n != 1 {
		t.Errorf("%d sign-ins, want 1", n)
	}
}

// Once sealed, an Authorizer with a sign-in helper has the helper (this
// test binary, re-executed as bouncer run re-executes itself) run the
// sign-ins the server asks for: the step-up of a 403
// insufficient_scope, for the scopes granted and the ones it names, and
// a new sign-in after a refused refresh. The request is then sent again
// with the helper's token.
func TestSealedSignInByHelper(t *testing.T) {
	f := newFixture(t)
	f.rs = newStepUpRS(t, f.as)
	cfg := f.config()
	h, err := StartHelper(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	cfg.Helper = h
	a := f.authorizer(cfg)
	if err := a.Ensure(context.Background()); err != nil {
		t.Fatal(err)
	}
	a.Seal()
	if err := session(t, a, f.rs.URL); err != nil {
		t.Fatalf("step-up: %v\n%s", err, f.stderr)
	}
	opened := f.openedURLs()
	if len(opened) != 2 {
		t.Fatalf("browser opened %d times, want 2", len(opened))
	}
	u, _ := url.Parse(opened[1])
	if s := u.Query().Get("scope"); !strings.Contains(s, "mcp:write") || !strings.Contains(s, "mcp:read") {
		t.Errorf("step-up scope %q", s)
	}
	// The refresh token is refused: the helper signs in again, for what
	// the 401 asks (as a sign-in at startup would), and then steps up
	// again for the call.
	f.as.revoke(true)
	if err := session(t, a, f.rs.URL); err != nil {
		t.Fatalf("after a refused refresh: %v\n%s", err, f.stderr)
	}
	if n := len(f.openedURLs()); n != 4 {
		t.Errorf("browser opened %d times, want 4", n)
	}
	f.noSecrets("stderr", f.stderr.String())
}

// The helper takes nothing but scope tokens from the proxy.
func TestCheckScopes(t *testing.T) {
	long := strings.Repeat("s", scopeTokenMax+1)
	many := make([]string, helperScopeMax+1)
	for i := range many {
		many[i] = "s"
	}
	for _, c := range []struct {
		scopes []string
		ok     bool
	}{
		{nil, true},
		{[]string{"mcp:read", "https://graph.example/.default", "a!#[]~"}, true},
		{[]string{""}, false},
		{[]string{"two words"}, false},
		{[]string{`quo"te`}, false},
		{[]string{`back\slash`}, false},
		{[]string{"new\nline"}, false},
		{[]string{"ümlaut"}, false},
		{[]string{long}, false},
		{many, false},
	} {
		if err := checkScopes(c.scopes); (err == nil) != c.ok {
			t.Errorf("%q: %v", c.scopes, err)
		}
	}
}
