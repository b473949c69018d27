// Package oauth signs Bouncer in to a remote MCP server that asks for
// OAuth, as the MCP authorization spec (2025-11-25) has a client do it:
// protected resource metadata (RFC 9728), authorization server metadata
// (RFC 8414, OpenID Connect discovery, the 2025-03-26 fallbacks), a client
// that is configured, described by a client ID metadata document, or
// registered dynamically (RFC 7591), the authorization code grant with
// PKCE S256 and the resource parameter (RFC 8707), redirected to a
// one-shot listener on 127.0.0.1 (RFC 8252). Tokens and the registered
// client are kept per server URL in STATE/oauth/, 0600, written
// atomically, and refreshed when they expire or the server answers 401.
//
// Discovery, metadata validation and registration are the go-sdk's
// (oauthex, auth.GetAuthServerMetadata); this package adds what a proxy
// needs around them: the loopback redirect and the browser, the store,
// the refresh with the resource parameter, one sign-in at a time for
// every request that needs it, and errors that never carry a secret.
//
// # Plugging it in
//
// Either wrap the HTTP transport of the MCP client transport:
//
//	a, err := oauth.New(oauth.Config{ServerURL: url, StateDir: home})
//	httpClient := &http.Client{Transport: a.RoundTripper(http.DefaultTransport)}
//	t := &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: httpClient}
//
// (this works for the SSE transport too, and covers every request,
// including the standalone GET stream), or hand [Authorizer.Handler] to
// mcp.StreamableClientTransport.OAuthHandler. Not both.
//
// # Sandboxing
//
// A sign-in needs what a sandboxed proxy does not have: a listening
// socket, a browser to start, and connections to the authorization
// server, which is often another host. So the proxy signs in before it
// confines itself: [Authorizer.Ensure] at startup (or simply the MCP
// initialize and tools/list that run before the sandbox, through the
// RoundTripper), then [Authorizer.Seal]. A sealed Authorizer still
// refreshes tokens (it needs TCP connect to the ports of
// [Authorizer.Endpoints], DNS, and write access to STATE/oauth/) but
// answers a request that would need a new sign-in with [ErrSignInNeeded],
// whose message tells the user to restart Bouncer.
package oauth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/bouncer-mcp/bouncer/internal/statefile"
)

// Config configures an [Authorizer]. ServerURL and StateDir are required.
type Config struct {
	// ServerURL is the MCP endpoint, the protected resource.
	ServerURL string
	// StateDir is Bouncer's state directory; the sign-in of each server
	// URL is kept in StateDir/oauth/.
	StateDir string
	// ServerAddrs are the server's addresses as the session resolved and
	// pinned them, if it did: the default HTTP client's Guard judges the
	// server's kind by them (NewGuardFor) rather than by a lookup of its
	// own, which the name's DNS could answer otherwise.
	ServerAddrs []netip.Addr
	// Name is the server's name in messages (default: its host).
	Name string

	// ClientID (with ClientSecret for a confidential client) is a client
	// registered with the server's authorization server beforehand. The
	// MCP spec has a client use one when it has it, before a client ID
	// metadata document or dynamic registration. ClientIssuer, if set,
	// binds it to that authorization server: a server that sends Bouncer
	// to another one is refused rather than handed the secret.
	ClientID, ClientSecret, ClientIssuer string
	// ClientMetadataURL is the https URL of a client ID metadata document
	// describing Bouncer (client_name, redirect_uris with
	// http://127.0.0.1/callback or the port of RedirectPort, grant_types
	// authorization_code and refresh_token, token_endpoint_auth_method
	// none). It is used as the client ID where the authorization server
	// supports such documents. Empty: not used.
	ClientMetadataURL string
	// ClientName is the client_name of a dynamic registration (default
	// "Bouncer").
	ClientName string
	// RedirectPort fixes the port of the loopback redirect URI
	// http://127.0.0.1:PORT/callback, for a client registered with that
	// exact URI. 0: any free port.
	RedirectPort int

	// Timeout bounds the browser step, from printing the URL to the
	// redirect (default 5 minutes).
	Timeout time.Duration
	// Stderr is where the URL to open and the progress of a sign-in go
	// (default os.Stderr). Nothing written there holds a secret.
	Stderr io.Writer
	// OpenBrowser is called with the authorization URL (default
	// [OpenBrowser]: $BROWSER, else the system's opener). Its failure is
	// reported on Stderr and is never fatal: the URL is printed anyway.
	OpenBrowser func(url string) error
	// HTTPClient makes the discovery, registration and token requests
	// (default: one with a 30 second timeout that dials through the
	// server's [Guard]). A client given here must guard its dials itself:
	// the go-sdk drops its own SSRF checks for a transport that dials
	// itself.
	HTTPClient *http.Client
	// Now is the clock (default time.Now); tests move it.
	Now func() time.Time
	// Helper, if set, runs the sign-ins needed once the Authorizer is
	// sealed (a step-up, a refused refresh), from outside the sandbox;
	// see [StartHelper]. Nil: those fail with [ErrSignInNeeded].
	Helper *Helper
}

// Authorizer holds the sign-in of one server URL. It is safe for
// concurrent use: requests that need a token while a refresh or a
// sign-in runs wait for that one; no second one starts.
type Authorizer struct {
	cfg    Config
	server string // canonical ServerURL
	origin string // scheme://host[:port] of ServerURL
	name   string
	store  store
	hc     *http.Client
	now    func() time.Time
	secret secrets

	mu     sync.Mutex
	rec    *record    // nil: never signed in
	op     *operation // the refresh or sign-in in progress
	sealed bool
}

type operation struct {
	done        chan struct{}
	err         error
	refreshOnly bool
}

// New returns the Authorizer of cfg.ServerURL with what StateDir keeps of
// its earlier sign-in. It makes no request.
func New(cfg Config) (*Authorizer, error) {
	if cfg.ServerURL == "" {
		return nil, errors.New("oauth: no server URL")
	}
	if cfg.StateDir == "" {
		return nil, errors.New("oauth: no state directory")
	}
	server, err := canonicalURL(cfg.ServerURL)
	if err != nil {
		return nil, fmt.Errorf("oauth: server URL: %v", err)
	}
	u, _ := url.Parse(server)
	if cfg.RedirectPort < 0 || cfg.RedirectPort > 65535 {
		return nil, fmt.Errorf("oauth: redirect port %d is out of range", cfg.RedirectPort)
	}
	if cfg.ClientMetadataURL != "" {
		m, err := url.Parse(cfg.ClientMetadataURL)
		if err != nil || m.Scheme != "https" || m.Path == "" || m.Path == "/" {
			return nil, fmt.Errorf("oauth: the client metadata document URL must be an https URL with a path, not %q", cfg.ClientMetadataURL)
		}
	}
	if cfg.ClientSecret != "" && cfg.ClientID == "" {
		return nil, errors.New("oauth: a client secret needs its client ID")
	}
	a := &Authorizer{
		cfg:    cfg,
		server: server,
		origin: u.Scheme + "://" + u.Host,
		name:   cfg.Name,
		store:  newStore(cfg.StateDir),
		hc:     cfg.HTTPClient,
		now:    cfg.Now,
	}
	if a.name == "" {
		a.name = u.Hostname()
	}
	if a.hc == nil {
		a.hc = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
			// No proxy from the environment: the guard checks the
			// address connected to, which must be the host itself.
			Proxy:               nil,
			DialContext:         guardOf(server, cfg.ServerAddrs).DialContext,
			ForceAttemptHTTP2:   true,
			TLSHandshakeTimeout: 15 * time.Second,
		}}
	}
	if a.now == nil {
		a.now = time.Now
	}
	if a.cfg.Timeout <= 0 {
		a.cfg.Timeout = 5 * time.Minute
	}
	if a.cfg.Stderr == nil {
		a.cfg.Stderr = os.Stderr
	}
	if a.cfg.OpenBrowser == nil {
		a.cfg.OpenBrowser = OpenBrowser
	}
	if a.cfg.ClientName == "" {
		a.cfg.ClientName = "Bouncer"
	}
	a.secret.add(cfg.ClientSecret)
	rec, err := a.store.load(server)
	if err != nil {
		return nil, a.fail(nil, err)
	}
	a.adopt(rec)
	return a, nil
}

// guardOf is the Guard of the server at serverURL: by its pinned
// addresses if there are any, else by a lookup of its own.
func guardOf(serverURL string, addrs []netip.Addr) *Guard {
	if len(addrs) > 0 {
		return NewGuardFor(serverURL, addrs)
	}
	return NewGuard(serverURL)
}

// adopt makes rec the current record and learns its secrets.
func (a *Authorizer) adopt(rec *record) {
	a.rec = rec
	if rec == nil {
		return
	}
	if rec.Token != nil {
		a.secret.add(rec.Token.AccessToken, rec.Token.RefreshToken)
	}
	if rec.Client != nil {
		a.secret.add(rec.Client.Secret)
	}
}

// fail turns err into an *Error of kind, with a redacted message.
func (a *Authorizer) fail(kind error, err error) error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	msg := redact(err.Error(), a.secret.list())
	if !strings.HasPrefix(msg, "oauth: ") {
		msg = "oauth: " + msg
	}
	return &Error{msg: msg, kind: kind}
}

// say writes one line to Stderr, prefixed like every Bouncer message.
func (a *Authorizer) say(format string, args ...any) {
	fmt.Fprintf(a.cfg.Stderr, "bouncer: "+format+"\n", args...)
}

// Seal forbids new sign-ins from now on: the proxy calls it once it has
// confined itself and could no longer listen, start a browser or reach an
// authorization server on another host. Refreshing stays allowed.
func (a *Authorizer) Seal() {
	a.mu.Lock()
	a.sealed = true
	a.mu.Unlock()
}

// Endpoints lists the host:port addresses a sealed Authorizer still
// connects to: the server's and the token endpoint's (for refreshes;
// only the server's before the first sign-in).
func (a *Authorizer) Endpoints() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := []string{hostPort(a.server)}
	if a.rec != nil && a.rec.TokenEndpoint != "" {
		if hp := hostPort(a.rec.TokenEndpoint); hp != "" && !slices.Contains(out, hp) {
			out = append(out, hp)
		}
	}
	return out
}

func hostPort(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return ""
	}
	port := u.Port()
	if port == "" {
		port = "443"
		if u.Scheme == "http" {
			port = "80"
		}
	}
	return net.JoinHostPort(u.Hostname(), port)
}

// SignedIn reports whether a token is kept (it may be expired, with a
// refresh token to renew it).
func (a *Authorizer) SignedIn() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.rec != nil && a.rec.Token != nil
}

// Logout forgets the sign-in: the tokens and the registered client.
func (a *Authorizer) Logout() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.rec = nil
	return a.fail(nil, a.store.remove(a.server))
}

// expired reports whether t must be refreshed before use (30 seconds of
// slack for the request's way and the clocks' difference).
func (a *Authorizer) expired(t *tokenRecord) bool {
	return !t.Expiry.IsZero() && !a.now().Add(30*time.Second).Before(t.Expiry)
}

// token returns the access token to send, refreshing it first if it has
// expired. It returns "" when there is none to send: never signed in, or
// the refresh failed (the request then goes without one, the server
// answers 401, and that starts a sign-in with the server's own challenge).
func (a *Authorizer) token(ctx context.Context) string {
	a.mu.Lock()
	rec := a.rec
	if rec == nil || rec.Token == nil {
		a.mu.Unlock()
		return ""
	}
	tok := rec.Token
	if !a.expired(tok) {
		a.mu.Unlock()
		return tok.AccessToken
	}
	a.mu.Unlock()
	if tok.RefreshToken == "" {
		return ""
	}
	if err := a.renew(ctx, renewal{failed: tok.AccessToken, refreshOnly: true}); err != nil {
		return ""
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.rec == nil || a.rec.Token == nil || a.expired(a.rec.Token) {
		return ""
	}
	return a.rec.Token.AccessToken
}

func containsAll(have, want []string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}

// renewal says why a token is needed.
type renewal struct {
	// failed is the access token the server refused or that expired
	// ("" if the request carried none).
	failed string
	// ch is the server's challenge (nil when the token merely expired).
	ch *challenge
	// refreshOnly: refresh if possible, never start a sign-in (the token
	// expired; a sign-in waits for the server to ask for one).
	refreshOnly bool
	// force: sign in even if a token is kept (Login).
	force bool
}

// renew gets a new token: by refreshing when that can work, else by a
// sign-in. One renewal runs at a time; a request that needs one while
// another runs waits for it (or for its own ctx) and takes its result.
// The renewal itself runs on its own context (bounded by the sign-in
// timeout), so a request that gives up does not cancel the sign-in the
// others wait for.
func (a *Authorizer) renew(ctx context.Context, r renewal) error {
	for {
		a.mu.Lock()
		if !r.force && a.rec != nil && a.rec.Token != nil &&
			a.rec.Token.AccessToken != r.failed && !a.expired(a.rec.Token) &&
			(!r.ch.stepUp() || containsAll(a.rec.Scopes, r.ch.scopes)) {
			// Another request renewed the token since this one was sent
			// (with the scope this one needs).
			a.mu.Unlock()
			return nil
		}
		op := a.op
		ours := op == nil
		if ours {
			op = &operation{done: make(chan struct{}), refreshOnly: r.refreshOnly}
			a.op = op
			go func() {
				err := a.doRenew(r)
				a.mu.Lock()
				op.err = err
				a.op = nil
				a.mu.Unlock()
				close(op.done)
			}()
		}
		a.mu.Unlock()
		select {
		case <-op.done:
		case <-ctx.Done():
			return a.fail(nil, fmt.Errorf("gave up waiting for the sign-in to %s: %w", a.name, ctx.Err()))
		}
		if !ours && !r.force && (op.err == nil || (op.refreshOnly && !r.refreshOnly)) {
			// Another request's renewal ended: see whether its token
			// serves this one (or, after a refresh that could not work,
			// whether this one should sign in).
			continue
		}
		return op.err
	}
}

func (a *Authorizer) doRenew(r renewal) error {
	ctx, cancel := context.WithTimeout(context.Background(), a.cfg.Timeout+time.Minute)
	defer cancel()

	// One renewal at a time across processes too. A lock that cannot be
	// had for another reason than contention is done without.
	release := func() {}
	defer func() { release() }()
	if statefile.Dir(a.store.dir) == nil {
		unlock, err := statefile.LockContext(ctx, a.store.lockPath(a.server))
		if err == nil {
			release = unlock
		} else if ctx.Err() != nil {
			return a.fail(nil, fmt.Errorf("another Bouncer process is signing in to %s; gave up waiting", a.name))
		}
	}

	a.mu.Lock()
	rec := a.rec
	sealed := a.sealed
	a.mu.Unlock()

	if !r.force && !r.ch.stepUp() {
		// Another Bouncer process for the same server may have refreshed
		// (and so rotated) the tokens: take its newer ones first.
		if disk, err := a.store.load(a.server); err == nil && disk != nil && disk.Token != nil &&
			(rec == nil || rec.Token == nil || disk.Token.AccessToken != rec.Token.AccessToken) &&
			disk.Token.AccessToken != r.failed && !a.expired(disk.Token) {
			a.mu.Lock()
			a.adopt(disk)
			a.mu.Unlock()
			return nil
		}
		if rec != nil && rec.Token != nil && rec.Token.RefreshToken != "" && rec.Client != nil && rec.TokenEndpoint != "" {
			err := a.refresh(ctx, rec)
			if err == nil {
				return nil
			}
			var te *tokenError
			if !errors.As(err, &te) || !te.refused() {
				// The authorization server is unreachable or broken: a
				// browser would not help.
				return a.fail(nil, fmt.Errorf("refreshing the token for %s: %v", a.name, err))
			}
			a.say("the authorization server refused to refresh the token for %s (%s); a new sign-in is needed", a.name, redact(te.Error(), a.secret.list()))
			a.dropToken()
		}
	}
	if r.refreshOnly {
		return a.fail(nil, errors.New("no refreshable token"))
	}
	if sealed && a.cfg.Helper != nil {
		// The helper takes the lock itself.
		release()
		release = func() {}
		return a.signInByHelper(ctx, r)
	}
	if sealed {
		return &Error{kind: ErrSignInNeeded, msg: fmt.Sprintf(
			"oauth: %s needs a new sign-in, which Bouncer cannot run once it is sandboxed; restart it (the sign-in runs at startup, before the sandbox) or run it with --sandbox off", a.name)}
	}
	if err := a.signIn(ctx, r.ch); err != nil {
		return a.fail(ErrSignInFailed, err)
	}
	return nil
}

// signInByHelper has the sign-in helper run the sign-in r needs, and
// takes the tokens it kept.
func (a *Authorizer) signInByHelper(ctx context.Context, r renewal) error {
	var scopes []string
	if r.ch.stepUp() {
		scopes = r.ch.scopes
	}
	if err := a.cfg.Helper.signIn(ctx, r.ch.stepUp(), scopes); err != nil {
		return a.fail(ErrSignInFailed, fmt.Errorf("signing in to %s again: %v", a.name, strings.TrimPrefix(err.Error(), "oauth: ")))
	}
	rec, err := a.store.load(a.server)
	if err != nil {
		return a.fail(ErrSignInFailed, err)
	}
	if rec == nil || rec.Token == nil {
		return a.fail(ErrSignInFailed, fmt.Errorf("the sign-in to %s kept no token", a.name))
	}
	a.mu.Lock()
	a.adopt(rec)
	a.mu.Unlock()
	return nil
}

// dropToken forgets a refused token (in memory and on disk), keeping the
// registered client for the next sign-in.
func (a *Authorizer) dropToken() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.rec == nil {
		return
	}
	rec := *a.rec
	rec.Token = nil
	a.rec = &rec
	_ = a.store.save(&rec)
}

// refresh runs the refresh_token grant (RFC 6749 §6) with the resource
// parameter, keeps the new tokens (a rotated refresh token replaces the
// old one; one not rotated is kept) and stores them.
func (a *Authorizer) refresh(ctx context.Context, rec *record) error {
	form := url.Values{
		"grant_type":    {"refresh_token"},
		"refresh_token": {rec.Token.RefreshToken},
	}
	if rec.Resource != "" {
		form.Set("resource", rec.Resource)
	}
	tok, err := tokenRequest(ctx, a.hc, rec.TokenEndpoint, form, rec.Client, a.now())
	if err != nil {
		return err
	}
	a.secret.add(tok.AccessToken, tok.RefreshToken)
	if tok.RefreshToken == "" {
		tok.RefreshToken = rec.Token.RefreshToken
	}
	if tok.Scope == "" {
		tok.Scope = rec.Token.Scope
	}
	next := *rec
	next.Token = tok
	a.mu.Lock()
	a.rec = &next
	a.mu.Unlock()
	if err := a.store.save(&next); err != nil {
		a.say("the refreshed token for %s could not be stored (%s); it is used for this run only", a.name, redact(err.Error(), a.secret.list()))
	}
	return nil
}

// Ensure makes sure that requests to the server will carry a usable
// token if the server wants one, signing in now if needed. A proxy calls
// it at startup, before it confines itself. With a kept token it only
// refreshes an expired one. Without one it asks the server (an
// unauthenticated MCP ping): an answer of 401 starts the sign-in; any
// other answer means the server does not want one up front, and a later
// 401 will still be handled by the RoundTripper.
func (a *Authorizer) Ensure(ctx context.Context) error {
	a.mu.Lock()
	rec := a.rec
	a.mu.Unlock()
	if rec != nil && rec.Token != nil {
		if !a.expired(rec.Token) {
			return nil
		}
		if a.token(ctx) != "" {
			return nil
		}
	}
	ch, err := a.probe(ctx)
	if err != nil {
		return a.fail(nil, err)
	}
	if ch == nil {
		return nil
	}
	return a.renew(ctx, renewal{ch: ch})
}

// Login signs in now, whatever is kept (an explicit sign-in command).
func (a *Authorizer) Login(ctx context.Context) error {
	ch, err := a.probe(ctx)
	if err != nil {
		return a.fail(nil, err)
	}
	if ch == nil {
		ch = &challenge{status: http.StatusUnauthorized}
	}
	return a.renew(ctx, renewal{ch: ch, force: true})
}

// probe sends the server an MCP ping without a token and returns its
// challenge if it answers 401 (nil otherwise).
func (a *Authorizer) probe(ctx context.Context) (*challenge, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.server,
		strings.NewReader(`{"jsonrpc":"2.0","id":"bouncer-oauth-probe","method":"ping"}`))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	// The probe is a request to the MCP server: like the session's own
	// requests, it follows a redirect on the server's origin only.
	hc := *a.hc
	hc.CheckRedirect = func(r *http.Request, via []*http.Request) error {
		if len(via) >= 5 {
			return errors.New("more than 5 redirects")
		}
		if !a.sameOrigin(r) {
			return fmt.Errorf("it redirects to %s://%s, another origin; refused", r.URL.Scheme, r.URL.Host)
		}
		return nil
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("reaching %s: %v", a.name, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	if resp.StatusCode != http.StatusUnauthorized {
		return nil, nil
	}
	ch := parseChallenge(resp)
	return &ch, nil
}
