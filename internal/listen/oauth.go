package listen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// OAuth makes the listener an OAuth 2.1 resource server, as the MCP
// authorization spec has it: a request carries an access token (a JWT)
// issued by the configured authorization server for this listener — its
// audience (RFC 8707) is the listener's resource URL, exactly — and a
// request without a good one gets 401 with a WWW-Authenticate header
// pointing at this listener's protected resource metadata (RFC 9728),
// from which the client finds the authorization server.
//
// The token's signature is checked against the issuer's published keys
// (JWKS), fetched at start and again, at most once a minute, when a token
// names a key not seen yet. The user is the token's user_claim (sub).
type OAuth struct {
	cfg      OAuthConfig
	resource string // canonical: the audience a token must name
	metaPath string // where the metadata document is served
	metaURL  string
	client   *http.Client
	now      func() time.Time

	mu      sync.Mutex
	keys    jose.JSONWebKeySet
	fetched time.Time
}

// signingAlgs are the JWS algorithms accepted: asymmetric only (a
// symmetric one would make the key a shared secret).
var signingAlgs = []jose.SignatureAlgorithm{jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512, jose.ES256, jose.ES384, jose.ES512, jose.EdDSA}

// NewOAuth checks the configuration and fetches the issuer's keys.
func NewOAuth(cfg OAuthConfig, resource string) (*OAuth, error) {
	res, err := canonResource(resource)
	if err != nil {
		return nil, fmt.Errorf("%s.resource: %v", ConfigKey, err)
	}
	if !secureURL(cfg.Issuer) {
		return nil, fmt.Errorf("%s.oauth.issuer: give the authorization server's https:// URL (http only on loopback, for tests)", ConfigKey)
	}
	if cfg.JWKSURI != "" && !secureURL(cfg.JWKSURI) {
		return nil, fmt.Errorf("%s.oauth.jwks_uri: give an https:// URL (http only on loopback, for tests): keys fetched in the clear could be swapped for an attacker's", ConfigKey)
	}
	if cfg.UserClaim == "" {
		cfg.UserClaim = "sub"
	}
	u, _ := url.Parse(res)
	o := &OAuth{
		cfg: cfg, resource: res,
		metaPath: "/.well-known/oauth-protected-resource" + strings.TrimSuffix(u.Path, "/"),
		client:   &http.Client{Timeout: 10 * time.Second},
		now:      time.Now,
	}
	o.metaURL = u.Scheme + "://" + u.Host + o.metaPath
	if err := o.refresh(context.Background()); err != nil {
		return nil, err
	}
	return o, nil
}

// canonResource is a resource URL as audiences compare it: scheme and
// host lower case, no default port, no trailing slash, no query or
// fragment (RFC 8707 §2).
func canonResource(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return "", fmt.Errorf("%q: give this listener's public URL, as clients reach it (https://mcp.example.com), with no query or fragment", s)
	}
	host := strings.ToLower(u.Hostname())
	if p := u.Port(); p != "" && !(u.Scheme == "https" && p == "443" || u.Scheme == "http" && p == "80") {
		host += ":" + p
	}
	if strings.Contains(u.Hostname(), ":") {
		host = "[" + strings.ToLower(u.Hostname()) + "]"
		if p := u.Port(); p != "" {
			host += ":" + p
		}
	}
	return strings.ToLower(u.Scheme) + "://" + host + strings.TrimSuffix(u.EscapedPath(), "/"), nil
}

func isLoopbackHost(h string) bool {
	return h == "localhost" || h == "127.0.0.1" || h == "::1"
}

// secureURL says whether s may be trusted for the issuer or its keys: an
// https:// URL with a host, or http:// on loopback (tests).
func secureURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && u.Host != "" && (u.Scheme == "https" || u.Scheme == "http" && isLoopbackHost(u.Hostname()))
}

// refresh fetches the issuer's keys.
func (o *OAuth) refresh(ctx context.Context) error {
	jwksURI := o.cfg.JWKSURI
	if jwksURI == "" {
		var err error
		if jwksURI, err = o.discoverJWKS(ctx); err != nil {
			return err
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, jwksURI, nil)
	if err != nil {
		return fmt.Errorf("jwks_uri %s: %v", jwksURI, err)
	}
	resp, err := o.client.Do(req)
	if err != nil {
		return fmt.Errorf("fetching the issuer's keys from %s: %v", jwksURI, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("fetching the issuer's keys from %s: %s", jwksURI, resp.Status)
	}
	var set jose.JSONWebKeySet
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&set); err != nil {
		return fmt.Errorf("the issuer's keys at %s: %v", jwksURI, err)
	}
	o.mu.Lock()
	o.keys, o.fetched = set, o.now()
	o.mu.Unlock()
	return nil
}

// metadataURLs are where an issuer's metadata may be, in the order the
// MCP authorization spec has clients try them: RFC 8414's OAuth metadata,
// then OpenID Connect discovery (which many identity providers serve
// alone), each with the well-known part put before the issuer's path, and
// OpenID's also after it.
func metadataURLs(issuer string) []string {
	u, err := url.Parse(issuer)
	if err != nil {
		return nil
	}
	base := u.Scheme + "://" + u.Host
	path := strings.TrimSuffix(u.Path, "/")
	if path == "" {
		return []string{base + "/.well-known/oauth-authorization-server", base + "/.well-known/openid-configuration"}
	}
	return []string{
		base + "/.well-known/oauth-authorization-server" + path,
		base + "/.well-known/openid-configuration" + path,
		base + path + "/.well-known/openid-configuration",
	}
}

// discoverJWKS reads the issuer's jwks_uri from its metadata. A resource
// server needs nothing else of it: the issuer it names must be the one
// configured, and its keys must come over https (http on loopback).
func (o *OAuth) discoverJWKS(ctx context.Context) (string, error) {
	var tried []string
	for _, mu := range metadataURLs(o.cfg.Issuer) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, mu, nil)
		if err != nil {
			return "", fmt.Errorf("the authorization server %s: %v", o.cfg.Issuer, err)
		}
		req.Header.Set("Accept", "application/json")
		resp, err := o.client.Do(req)
		if err != nil {
			return "", fmt.Errorf("the authorization server %s: its metadata at %s: %v; or give %s.oauth.jwks_uri", o.cfg.Issuer, mu, err, ConfigKey)
		}
		var meta struct {
			Issuer  string `json:"issuer"`
			JWKSURI string `json:"jwks_uri"`
		}
		err = nil
		if resp.StatusCode == http.StatusOK {
			err = json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&meta)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			tried = append(tried, fmt.Sprintf("%s (%s)", mu, resp.Status))
			continue
		}
		switch {
		case err != nil:
			return "", fmt.Errorf("the authorization server %s: its metadata at %s: %v", o.cfg.Issuer, mu, err)
		case meta.Issuer != o.cfg.Issuer:
			// Exactly, as RFC 8414 asks and as a token's iss is checked.
			return "", fmt.Errorf("the authorization server's metadata at %s names the issuer %q, not %s; check %s.oauth.issuer", mu, meta.Issuer, o.cfg.Issuer, ConfigKey)
		case meta.JWKSURI == "":
			return "", fmt.Errorf("the authorization server %s publishes no jwks_uri (%s); give %s.oauth.jwks_uri", o.cfg.Issuer, mu, ConfigKey)
		}
		if !secureURL(meta.JWKSURI) {
			return "", fmt.Errorf("the authorization server %s: its jwks_uri %q is not an https:// URL; give %s.oauth.jwks_uri", o.cfg.Issuer, meta.JWKSURI, ConfigKey)
		}
		return meta.JWKSURI, nil
	}
	return "", fmt.Errorf("the authorization server %s publishes no metadata (tried %s); give %s.oauth.jwks_uri", o.cfg.Issuer, strings.Join(tried, ", "), ConfigKey)
}

// key finds the verification key a token names, fetching the keys again
// (at most once a minute) when it is not known.
func (o *OAuth) key(kid string) (*jose.JSONWebKey, bool) {
	find := func() (*jose.JSONWebKey, bool) {
		o.mu.Lock()
		defer o.mu.Unlock()
		for i := range o.keys.Keys {
			k := &o.keys.Keys[i]
			if (kid == "" || k.KeyID == kid) && k.Valid() && k.IsPublic() && (k.Use == "" || k.Use == "sig") {
				return k, true
			}
		}
		return nil, false
	}
	if k, ok := find(); ok {
		return k, ok
	}
	o.mu.Lock()
	stale := o.now().Sub(o.fetched) > time.Minute
	o.mu.Unlock()
	if stale {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if o.refresh(ctx) == nil {
			return find()
		}
	}
	return nil, false
}

// tokenError is a refused token: 401, or 403 for a missing scope.
type tokenError struct {
	code, desc string
	status     int
}

func (e *tokenError) Error() string { return e.desc }

// Authenticate implements Authenticator.
func (o *OAuth) Authenticate(r *http.Request) (string, error) {
	raw, ok := bearer(r)
	if !ok {
		return "", &tokenError{"", "no access token; sign in with the authorization server named in the resource metadata", http.StatusUnauthorized}
	}
	bad := func(why string) (string, error) {
		return "", &tokenError{"invalid_token", why, http.StatusUnauthorized}
	}
	tok, err := jwt.ParseSigned(raw, signingAlgs)
	if err != nil || len(tok.Headers) != 1 {
		return bad("the access token is not a signed JWT")
	}
	key, ok := o.key(tok.Headers[0].KeyID)
	if !ok {
		return bad("the access token is signed with a key the issuer does not publish")
	}
	var std jwt.Claims
	var extra map[string]any
	if err := tok.Claims(key.Key, &std, &extra); err != nil {
		return bad("the access token's signature does not verify")
	}
	if std.Expiry == nil {
		return bad("the access token has no expiry")
	}
	if err := std.ValidateWithLeeway(jwt.Expected{Issuer: o.cfg.Issuer, Time: o.now()}, time.Minute); err != nil {
		return bad("the access token is not valid: " + err.Error())
	}
	if !o.audienceOK(std.Audience) {
		return bad("the access token was not issued for this server (its audience is not " + o.resource + ")")
	}
	have := scopes(extra)
	for _, s := range o.cfg.Scopes {
		if !slices.Contains(have, s) {
			return "", &tokenError{"insufficient_scope", "the access token lacks the scope " + s, http.StatusForbidden}
		}
	}
	user, _ := extra[o.cfg.UserClaim].(string)
	if user == "" {
		return bad("the access token has no " + o.cfg.UserClaim + " claim to name its user")
	}
	return user, nil
}

// audienceOK reports whether the token names this listener's resource,
// compared in canonical form, exactly.
func (o *OAuth) audienceOK(aud jwt.Audience) bool {
	for _, a := range aud {
		if c, err := canonResource(a); err == nil && c == o.resource {
			return true
		}
	}
	return false
}

// scopes reads the scope (space separated) or scp (a list) claim.
func scopes(claims map[string]any) []string {
	if s, ok := claims["scope"].(string); ok {
		return strings.Fields(s)
	}
	var out []string
	if l, ok := claims["scp"].([]any); ok {
		for _, v := range l {
			if s, ok := v.(string); ok {
				out = append(out, s)
			}
		}
	}
	return out
}

// Challenge implements Authenticator: 401 (or 403 for a scope) with a
// WWW-Authenticate header naming the resource metadata.
func (o *OAuth) Challenge(w http.ResponseWriter, r *http.Request, err error) {
	status, code := http.StatusUnauthorized, ""
	var te *tokenError
	if errors.As(err, &te) {
		status, code = te.status, te.code
	}
	params := []string{fmt.Sprintf("resource_metadata=%q", o.metaURL)}
	if code != "" {
		params = append(params, fmt.Sprintf("error=%q", code))
	}
	if len(o.cfg.Scopes) > 0 {
		params = append(params, fmt.Sprintf("scope=%q", strings.Join(o.cfg.Scopes, " ")))
	}
	w.Header().Set("WWW-Authenticate", "Bearer "+strings.Join(params, ", "))
	http.Error(w, err.Error(), status)
}

// MetadataHandlers serves the protected resource metadata (RFC 9728) at
// its well-known path, and at the path-inserted form for each endpoint
// that clients look for first.
func (o *OAuth) MetadataHandlers() map[string]http.Handler {
	h := auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
		Resource:               o.resource,
		AuthorizationServers:   []string{o.cfg.Issuer},
		ScopesSupported:        o.cfg.Scopes,
		BearerMethodsSupported: []string{"header"},
		ResourceName:           "Bouncer",
	})
	return map[string]http.Handler{
		o.metaPath:                               h,
		"/.well-known/oauth-protected-resource/": h,
	}
}
