package oauth

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// challenge is what a 401 or 403 answer's WWW-Authenticate says.
type challenge struct {
	status           int
	resourceMetadata string   // RFC 9728 §5.1 resource_metadata
	scopes           []string // RFC 6750 §3 scope
	errCode          string   // RFC 6750 §3.1 error
}

// stepUp reports whether the server asked for more scope (403
// insufficient_scope, the MCP spec's step-up authorization).
func (c *challenge) stepUp() bool {
	return c != nil && c.status == http.StatusForbidden && c.errCode == "insufficient_scope"
}

// parseChallenge reads the Bearer challenge of resp (the go-sdk parses
// the header). A header it cannot parse yields an empty challenge: the
// discovery then falls back to the well-known URLs.
func parseChallenge(resp *http.Response) challenge {
	c := challenge{status: resp.StatusCode}
	cs, err := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	if err != nil {
		return c
	}
	for _, ch := range cs {
		if ch.Scheme != "bearer" {
			continue
		}
		if c.resourceMetadata == "" {
			c.resourceMetadata = ch.Params["resource_metadata"]
		}
		if c.scopes == nil && ch.Params["scope"] != "" {
			c.scopes = strings.Fields(ch.Params["scope"])
		}
		if c.errCode == "" {
			c.errCode = ch.Params["error"]
		}
	}
	// A resource_metadata URL in another scheme's challenge still names
	// the metadata (some servers send it only there).
	if c.resourceMetadata == "" {
		for _, ch := range cs {
			if u := ch.Params["resource_metadata"]; u != "" {
				c.resourceMetadata = u
				break
			}
		}
	}
	return c
}

// discovery is what the metadata says about where and how to sign in.
type discovery struct {
	resource string // RFC 8707 resource indicator
	scopes   []string
	asm      *oauthex.AuthServerMeta
}

// discover finds the protected resource metadata and then the
// authorization server metadata, in the MCP spec's order (the same as
// the go-sdk's AuthorizationCodeHandler): the challenge's
// resource_metadata URL, then /.well-known/oauth-protected-resource with
// the endpoint's path inserted, then at the root; without any, the
// 2025-03-26 fallback of the server's origin as the authorization
// server. The authorization server metadata is looked up with the
// go-sdk's auth.GetAuthServerMetadata (RFC 8414 and OpenID Connect
// discovery, with and without path insertion); without any, the
// 2025-03-26 default endpoints /authorize, /token and /register.
func (a *Authorizer) discover(ctx context.Context, ch *challenge) (*discovery, error) {
	var prm *oauthex.ProtectedResourceMetadata
	if ch != nil && ch.resourceMetadata != "" {
		// The server named its metadata: it must be valid (its resource
		// must be this server, RFC 9728 §3.3); falling back past a
		// mismatch would sign in for another resource.
		m, err := oauthex.GetProtectedResourceMetadata(ctx, ch.resourceMetadata, a.server, a.hc)
		if err != nil {
			return nil, fmt.Errorf("the protected resource metadata that %s names is unusable: %v", a.name, err)
		}
		prm = m
	} else {
		for _, c := range prmCandidates(a.server) {
			m, err := oauthex.GetProtectedResourceMetadata(ctx, c.url, c.resource, a.hc)
			if err == nil && m != nil {
				prm = m
				break
			}
		}
	}
	d := &discovery{resource: a.server}
	var issuer string
	if prm != nil {
		if len(prm.AuthorizationServers) == 0 {
			return nil, fmt.Errorf("the protected resource metadata of %s names no authorization server", a.name)
		}
		d.resource = prm.Resource
		d.scopes = prm.ScopesSupported
		// The spec leaves the choice among several to the client: the
		// first is the server's preference.
		issuer = prm.AuthorizationServers[0]
	} else {
		u, _ := url.Parse(a.server)
		issuer = u.Scheme + "://" + u.Host
	}
	asm, err := auth.GetAuthServerMetadata(ctx, issuer, a.hc)
	if err != nil {
		return nil, fmt.Errorf("the authorization server metadata of %s: %v", issuer, err)
	}
	if asm == nil {
		base := strings.TrimRight(issuer, "/")
		asm = &oauthex.AuthServerMeta{
			Issuer:                        issuer,
			AuthorizationEndpoint:         base + "/authorize",
			TokenEndpoint:                 base + "/token",
			RegistrationEndpoint:          base + "/register",
			CodeChallengeMethodsSupported: []string{"S256"},
		}
		for _, e := range []string{asm.AuthorizationEndpoint, asm.TokenEndpoint} {
			if err := httpsOrLoopback(e); err != nil {
				return nil, err
			}
		}
	}
	if !slices.Contains(asm.CodeChallengeMethodsSupported, "S256") {
		return nil, fmt.Errorf("the authorization server %s does not offer PKCE with S256 (it lists %q); Bouncer will not sign in without it", asm.Issuer, asm.CodeChallengeMethodsSupported)
	}
	if asm.AuthorizationEndpoint == "" || asm.TokenEndpoint == "" {
		return nil, fmt.Errorf("the authorization server metadata of %s lacks an authorization or token endpoint", asm.Issuer)
	}
	d.asm = asm
	return d, nil
}

type prmCandidate struct{ url, resource string }

// prmCandidates are the well-known protected resource metadata URLs of
// serverURL, with the resource each must name (RFC 9728 §3.1, §3.3).
func prmCandidates(serverURL string) []prmCandidate {
	u, err := url.Parse(serverURL)
	if err != nil {
		return nil
	}
	origin := u.Scheme + "://" + u.Host
	var out []prmCandidate
	if p := strings.TrimLeft(u.Path, "/"); p != "" {
		out = append(out, prmCandidate{origin + "/.well-known/oauth-protected-resource/" + p, serverURL})
	}
	out = append(out, prmCandidate{origin + "/.well-known/oauth-protected-resource", origin})
	return out
}

func httpsOrLoopback(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return err
	}
	if u.Scheme == "https" || (u.Scheme == "http" && isLoopbackHost(u.Hostname())) {
		return nil
	}
	return fmt.Errorf("the authorization server endpoint %s is neither https nor on this machine; Bouncer will not send credentials there", raw)
}

func isLoopbackHost(h string) bool {
	if h == "localhost" {
		return true
	}
	return strings.HasPrefix(h, "127.") || h == "::1"
}

// scopesFor picks the scopes to ask for, as the MCP spec's scope
// selection strategy says: the challenge's scope, else the protected
// resource metadata's scopes_supported, else none (the scope parameter
// is then left out). offline_access is added where the authorization
// server offers it (SEP-2207: Bouncer keeps refresh tokens safely), and
// a step-up keeps the scopes granted before.
func scopesFor(ch *challenge, d *discovery, granted []string) []string {
	var s []string
	if ch != nil && len(ch.scopes) > 0 {
		s = slices.Clone(ch.scopes)
	} else {
		s = slices.Clone(d.scopes)
	}
	if slices.Contains(d.asm.ScopesSupported, "offline_access") && !slices.Contains(s, "offline_access") {
		s = append(s, "offline_access")
	}
	if ch.stepUp() {
		for _, g := range granted {
			if !slices.Contains(s, g) {
				s = append(s, g)
			}
		}
	}
	return s
}

// signIn runs the whole authorization: discovery, the client, the
// browser, the code exchange; it stores the result.
func (a *Authorizer) signIn(ctx context.Context, ch *challenge) error {
	d, err := a.discover(ctx, ch)
	if err != nil {
		return err
	}
	a.mu.Lock()
	rec := a.rec
	a.mu.Unlock()
	var granted []string
	if rec != nil && rec.Issuer == d.asm.Issuer {
		granted = rec.Scopes
	}
	scopes := scopesFor(ch, d, granted)

	recv, client, err := a.client(ctx, d.asm, rec)
	if err != nil {
		return err
	}
	defer recv.close()

	verifier := oauth2.GenerateVerifier()
	state := rand.Text()
	a.secret.add(verifier)
	cfg := &oauth2.Config{
		ClientID:    client.ID,
		Endpoint:    oauth2.Endpoint{AuthURL: d.asm.AuthorizationEndpoint, TokenURL: d.asm.TokenEndpoint},
		RedirectURL: recv.redirectURI(),
		Scopes:      scopes,
	}
	authURL := cfg.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("resource", d.resource))

	recv.start(state)
	a.say("%s asks you to sign in (authorization server %s). Open this URL in a browser (Bouncer waits %s):", a.name, d.asm.Issuer, a.cfg.Timeout)
	fmt.Fprintf(a.cfg.Stderr, "\n    %s\n\n", authURL)
	if err := a.cfg.OpenBrowser(authURL); err != nil {
		a.say("could not open a browser (%s); open the URL above yourself", redact(err.Error(), nil))
	}

	wctx, cancel := context.WithTimeout(ctx, a.cfg.Timeout)
	defer cancel()
	cb := recv.wait(wctx)
	if cb.err != nil {
		if errors.Is(cb.err, context.DeadlineExceeded) {
			return fmt.Errorf("nobody finished the sign-in to %s within %s; run Bouncer again and open the URL it prints", a.name, a.cfg.Timeout)
		}
		return cb.err
	}
	a.secret.add(cb.code)
	if err := checkIssuer(cb.iss, d.asm); err != nil {
		return err
	}

	form := url.Values{
		"grant_type":    {"authorization_code"},
		"code":          {cb.code},
		"redirect_uri":  {recv.redirectURI()},
		"code_verifier": {verifier},
		"resource":      {d.resource},
	}
	tok, err := tokenRequest(ctx, a.hc, d.asm.TokenEndpoint, form, client, a.now())
	if err != nil {
		return fmt.Errorf("exchanging the authorization code at %s: %v", d.asm.TokenEndpoint, err)
	}
	a.secret.add(tok.AccessToken, tok.RefreshToken)
	next := &record{
		ServerURL:     a.server,
		Resource:      d.resource,
		Issuer:        d.asm.Issuer,
		TokenEndpoint: d.asm.TokenEndpoint,
		Client:        client,
		Token:         tok,
		Scopes:        scopes,
	}
	if tok.Scope != "" {
		next.Scopes = strings.Fields(tok.Scope)
	}
	a.mu.Lock()
	a.rec = next
	a.mu.Unlock()
	if err := a.store.save(next); err != nil {
		a.say("the sign-in to %s could not be stored (%s); it holds for this run only", a.name, redact(err.Error(), a.secret.list()))
	}
	a.say("signed in to %s", a.name)
	return nil
}

// checkIssuer validates the RFC 9207 iss of the authorization response,
// as the go-sdk does: required and equal to the issuer when the server
// advertises it; when it does not, an iss that is present must still
// match, and is then refused as unadvertised.
func checkIssuer(iss string, asm *oauthex.AuthServerMeta) error {
	if asm.AuthorizationResponseIssParameterSupported {
		if iss == "" {
			return errors.New("the authorization server promised an iss parameter in its response (RFC 9207) and sent none; refused as a possible mix-up attack")
		}
		if iss != asm.Issuer {
			return fmt.Errorf("the authorization response comes from issuer %q, not %q; refused as a possible mix-up attack", clip(iss, 200), asm.Issuer)
		}
		return nil
	}
	if iss == "" {
		return nil
	}
	if iss != asm.Issuer {
		return fmt.Errorf("the authorization response comes from issuer %q, not %q; refused as a possible mix-up attack", clip(iss, 200), asm.Issuer)
	}
	return errors.New("the authorization response carries an iss parameter its server does not advertise (RFC 9207); refused")
}

// client picks the client to sign in as, in the MCP spec's order: a
// configured one, the one registered dynamically before with the same
// authorization server, a client ID metadata document where the server
// supports them, a new dynamic registration. It binds the loopback
// listener the redirect URI names.
func (a *Authorizer) client(ctx context.Context, asm *oauthex.AuthServerMeta, rec *record) (*receiver, *clientRecord, error) {
	if a.cfg.ClientID != "" {
		if a.cfg.ClientIssuer != "" && !sameIssuer(a.cfg.ClientIssuer, asm.Issuer) {
			return nil, nil, fmt.Errorf("%s sends Bouncer to the authorization server %s, but its configured client ID belongs to %s; refused", a.name, asm.Issuer, a.cfg.ClientIssuer)
		}
		recv, err := a.listen(a.cfg.RedirectPort)
		if err != nil {
			return nil, nil, err
		}
		return recv, &clientRecord{
			ID:           a.cfg.ClientID,
			Secret:       a.cfg.ClientSecret,
			AuthMethod:   authMethodFor(a.cfg.ClientSecret != "", asm.TokenEndpointAuthMethodsSupported),
			Registration: "configured",
			Issuer:       asm.Issuer,
		}, nil
	}
	if rec != nil && rec.Client != nil && rec.Client.Registration == "dynamic" && sameIssuer(rec.Client.Issuer, asm.Issuer) &&
		(rec.Client.SecretExpiresAt.IsZero() || a.now().Before(rec.Client.SecretExpiresAt)) {
		// Reuse the registration while its redirect URI's port is free.
		if u, err := url.Parse(rec.Client.RedirectURI); err == nil && u.Port() != "" {
			var port int
			fmt.Sscan(u.Port(), &port)
			if recv, err := listenLoopback(port); err == nil {
				c := *rec.Client
				return recv, &c, nil
			}
		}
	}
	if a.cfg.ClientMetadataURL != "" && asm.ClientIDMetadataDocumentSupported {
		recv, err := a.listen(a.cfg.RedirectPort)
		if err != nil {
			return nil, nil, err
		}
		return recv, &clientRecord{ID: a.cfg.ClientMetadataURL, AuthMethod: "none", Registration: "metadata-document", Issuer: asm.Issuer}, nil
	}
	if asm.RegistrationEndpoint == "" {
		return nil, nil, fmt.Errorf("the authorization server %s of %s takes no dynamic client registration, and Bouncer has no client ID for it: register Bouncer there (redirect URI http://127.0.0.1:PORT/callback) and configure its client ID", asm.Issuer, a.name)
	}
	recv, err := a.listen(a.cfg.RedirectPort)
	if err != nil {
		return nil, nil, err
	}
	method := dcrAuthMethod(asm.TokenEndpointAuthMethodsSupported)
	meta := &oauthex.ClientRegistrationMetadata{
		RedirectURIs:            []string{recv.redirectURI()},
		TokenEndpointAuthMethod: method,
		GrantTypes:              []string{"authorization_code", "refresh_token"},
		ResponseTypes:           []string{"code"},
		ClientName:              a.cfg.ClientName,
		ClientURI:               "https://github.com/bouncer-mcp/bouncer",
		SoftwareID:              "bouncer",
		ApplicationType:         "native",
	}
	reg, err := oauthex.RegisterClient(ctx, asm.RegistrationEndpoint, meta, a.hc)
	if err != nil {
		recv.close()
		return nil, nil, fmt.Errorf("registering Bouncer with %s: %v", asm.Issuer, err)
	}
	a.secret.add(reg.ClientSecret)
	c := &clientRecord{
		ID:              reg.ClientID,
		Secret:          reg.ClientSecret,
		AuthMethod:      reg.TokenEndpointAuthMethod,
		Registration:    "dynamic",
		RedirectURI:     recv.redirectURI(),
		Issuer:          asm.Issuer,
		SecretExpiresAt: reg.ClientSecretExpiresAt,
	}
	if c.AuthMethod == "" {
		c.AuthMethod = method
	}
	if c.AuthMethod == "" {
		// RFC 7591 §2: the default is client_secret_basic; without a
		// secret that can only mean a public client.
		c.AuthMethod = "client_secret_basic"
		if c.Secret == "" {
			c.AuthMethod = "none"
		}
	}
	if c.AuthMethod != "none" && c.Secret == "" {
		c.AuthMethod = "none"
	}
	return recv, c, nil
}

func (a *Authorizer) listen(port int) (*receiver, error) {
	recv, err := listenLoopback(port)
	if err != nil {
		if port != 0 {
			return nil, fmt.Errorf("the redirect port 127.0.0.1:%d is taken (%v); free it or configure another", port, err)
		}
		return nil, fmt.Errorf("listening on 127.0.0.1 for the sign-in's redirect: %v", err)
	}
	return recv, nil
}

// dcrAuthMethod is the token endpoint authentication Bouncer asks for
// when it registers: none (a public client, which PKCE protects) where
// the server takes it, else a secret as the server prefers. An empty
// list means the RFC 8414 default, client_secret_basic, which is then
// left to the registration's answer.
func dcrAuthMethod(supported []string) string {
	switch {
	case len(supported) == 0:
		return ""
	case slices.Contains(supported, "none"):
		return "none"
	case slices.Contains(supported, "client_secret_basic"):
		return "client_secret_basic"
	case slices.Contains(supported, "client_secret_post"):
		return "client_secret_post"
	}
	return ""
}

// authMethodFor is the authentication of a configured client: none
// without a secret; with one, what the server lists (post first, as the
// go-sdk prefers), else basic, the RFC 6749 default.
func authMethodFor(hasSecret bool, supported []string) string {
	if !hasSecret {
		return "none"
	}
	for _, m := range []string{"client_secret_post", "client_secret_basic"} {
		if slices.Contains(supported, m) {
			return m
		}
	}
	return "client_secret_basic"
}

func sameIssuer(a, b string) bool {
	return strings.TrimSuffix(a, "/") == strings.TrimSuffix(b, "/")
}
