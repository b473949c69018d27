package oauth

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// testAS is an authorization server on loopback for the behaviours the
// conformance suite's cannot be made to show (expiry, revocation,
// rotation, forged redirects, hostile answers). It implements the
// endpoints as their RFCs say: RFC 8414 metadata, RFC 7591 registration,
// the authorization endpoint and the token endpoint of RFC 6749 with
// PKCE S256 verified (RFC 7636 §4.6), single-use codes bound to client,
// redirect URI and resource (RFC 8707), client authentication by the
// registered method, and refresh tokens that rotate.
type testAS struct {
	t   *testing.T
	srv *httptest.Server

	mu          sync.Mutex
	clients     map[string]*asClient
	codes       map[string]*asCode
	access      map[string]*asToken
	refresh     map[string]*asToken
	counts      map[string]int // "register", "authorize", "authorization_code", "refresh_token"
	ttl         time.Duration
	scopes      []string // scopes_supported
	authMeth    []string // token_endpoint_auth_methods_supported
	issParam    bool
	secrets     []string // every secret it issued or received
	tamper      string   // "state": redirect with a foreign state
	hostile     bool     // error answers echo the request (secrets included)
	refuseCodes bool     // every authorization code is refused
	lastForms   []url.Values
	tokenSrv    *httptest.Server // the token endpoint's own origin (splitToken), or nil
}

type asClient struct {
	id, secret, method string
	redirects          []string
}

type asCode struct {
	client, redirect, challenge, resource, scope string
	used                                         bool
}

type asToken struct {
	client, resource, scope string
	expires                 time.Time
	revoked                 bool
}

func newTestAS(t *testing.T) *testAS {
	as := &testAS{
		t:        t,
		clients:  map[string]*asClient{},
		codes:    map[string]*asCode{},
		access:   map[string]*asToken{},
		refresh:  map[string]*asToken{},
		counts:   map[string]int{},
		ttl:      time.Hour,
		scopes:   []string{"mcp:read", "mcp:write", "offline_access"},
		authMeth: []string{"client_secret_basic", "none"},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", as.metadata)
	mux.HandleFunc("POST /register", as.register)
	mux.HandleFunc("GET /authorize", as.authorize)
	mux.HandleFunc("POST /token", as.token)
	as.srv = httptest.NewServer(mux)
	t.Cleanup(as.srv.Close)
	return as
}

func (as *testAS) URL() string { return as.srv.URL }

// tokenURL is the token endpoint the metadata names.
func (as *testAS) tokenURL() string {
	if as.tokenSrv != nil {
		return as.tokenSrv.URL + "/token"
	}
	return as.URL() + "/token"
}

// splitToken moves the token endpoint to an origin of its own (as many
// providers have it): the metadata, the registration and the
// authorization endpoint stay where they are.
func (as *testAS) splitToken() {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /token", as.token)
	as.tokenSrv = httptest.NewServer(mux)
	as.t.Cleanup(as.tokenSrv.Close)
}

func (as *testAS) count(k string) int {
	as.mu.Lock()
	defer as.mu.Unlock()
	return as.counts[k]
}

func (as *testAS) allSecrets() []string {
	as.mu.Lock()
	defer as.mu.Unlock()
	return slices.Clone(as.secrets)
}

func random() string { return rand.Text() + rand.Text() }

func (as *testAS) metadata(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, 200, &oauthex.AuthServerMeta{
		Issuer:                                     as.URL(),
		AuthorizationEndpoint:                      as.URL() + "/authorize",
		TokenEndpoint:                              as.tokenURL(),
		RegistrationEndpoint:                       as.URL() + "/register",
		ScopesSupported:                            as.scopes,
		ResponseTypesSupported:                     []string{"code"},
		GrantTypesSupported:                        []string{"authorization_code", "refresh_token"},
		TokenEndpointAuthMethodsSupported:          as.authMeth,
		CodeChallengeMethodsSupported:              []string{"S256"},
		AuthorizationResponseIssParameterSupported: as.issParam,
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func oauthError(w http.ResponseWriter, status int, code, desc string) {
	writeJSON(w, status, map[string]string{"error": code, "error_description": desc})
}

func (as *testAS) register(w http.ResponseWriter, r *http.Request) {
	var m oauthex.ClientRegistrationMetadata
	if err := json.NewDecoder(r.Body).Decode(&m); err != nil {
		oauthError(w, 400, "invalid_client_metadata", err.Error())
		return
	}
	if len(m.RedirectURIs) == 0 {
		oauthError(w, 400, "invalid_redirect_uri", "redirect_uris is required")
		return
	}
	for _, ru := range m.RedirectURIs {
		u, err := url.Parse(ru)
		if err != nil || u.Scheme != "http" || u.Hostname() != "127.0.0.1" {
			oauthError(w, 400, "invalid_redirect_uri", "a native client's redirect URI must be loopback")
			return
		}
	}
	method := m.TokenEndpointAuthMethod
	if method == "" {
		method = "client_secret_basic"
	}
	if !slices.Contains(as.authMeth, method) {
		oauthError(w, 400, "invalid_client_metadata", "unsupported token_endpoint_auth_method")
		return
	}
	c := &asClient{id: "client-" + random()[:8], method: method, redirects: m.RedirectURIs}
	if method != "none" {
		c.secret = "secret-" + random()
	}
	as.mu.Lock()
	as.clients[c.id] = c
	as.counts["register"]++
	as.secrets = append(as.secrets, c.secret)
	as.mu.Unlock()
	resp := map[string]any{
		"client_id": c.id, "redirect_uris": c.redirects, "token_endpoint_auth_method": method,
		"grant_types": m.GrantTypes, "client_name": m.ClientName,
	}
	if c.secret != "" {
		resp["client_secret"] = c.secret
	}
	writeJSON(w, 201, resp)
}

// authorize is the user's consent, given at once: it redirects to the
// client's redirect URI with a code, or with an error when the request
// is not valid (RFC 6749 §4.1.2.1; an invalid client or redirect URI is
// answered here, never redirected).
func (as *testAS) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	as.mu.Lock()
	defer as.mu.Unlock()
	as.counts["authorize"]++
	c := as.clients[q.Get("client_id")]
	if c == nil {
		http.Error(w, "unknown client", 400)
		return
	}
	redirect := q.Get("redirect_uri")
	if !slices.Contains(c.redirects, redirect) {
		http.Error(w, "redirect_uri is not registered", 400)
		return
	}
	back, _ := url.Parse(redirect)
	v := url.Values{}
	state := q.Get("state")
	if as.tamper == "state" {
		state = "forged-" + state
	}
	v.Set("state", state)
	switch {
	case q.Get("response_type") != "code":
		v.Set("error", "unsupported_response_type")
	case q.Get("code_challenge") == "" || q.Get("code_challenge_method") != "S256":
		v.Set("error", "invalid_request")
		v.Set("error_description", "PKCE S256 is required")
	case q.Get("resource") == "":
		v.Set("error", "invalid_target")
	default:
		code := "code-" + random()
		as.codes[code] = &asCode{client: c.id, redirect: redirect, challenge: q.Get("code_challenge"), resource: q.Get("resource"), scope: q.Get("scope")}
		as.secrets = append(as.secrets, code)
		v.Set("code", code)
		if as.issParam {
			v.Set("iss", as.URL())
		}
	}
	back.RawQuery = v.Encode()
	http.Redirect(w, r, back.String(), http.StatusFound)
}

func (as *testAS) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		oauthError(w, 400, "invalid_request", err.Error())
		return
	}
	f := r.PostForm
	as.mu.Lock()
	defer as.mu.Unlock()
	as.lastForms = append(as.lastForms, f)
	for _, k := range []string{"code", "code_verifier", "refresh_token", "client_secret"} {
		if f.Get(k) != "" {
			as.secrets = append(as.secrets, f.Get(k))
		}
	}
	fail := func(status int, code, desc string) {
		if as.hostile {
			// A server that echoes what it got, secrets and all.
			desc += "; request was " + f.Encode() + " Authorization: " + r.Header.Get("Authorization")
		}
		oauthError(w, status, code, desc)
	}
	// Client authentication by the registered method.
	id, secret, basic := r.BasicAuth()
	if basic {
		id, _ = url.QueryUnescape(id)
		secret, _ = url.QueryUnescape(secret)
	} else {
		id, secret = f.Get("client_id"), f.Get("client_secret")
	}
	c := as.clients[id]
	if c == nil || (c.method == "client_secret_basic" && (!basic || secret != c.secret)) ||
		(c.method == "client_secret_post" && (basic || secret != c.secret)) ||
		(c.method == "none" && (basic || secret != "")) {
		fail(401, "invalid_client", "client authentication failed")
		return
	}
	grant := f.Get("grant_type")
	as.counts[grant]++
	var scope, resource string
	switch grant {
	case "authorization_code":
		code := as.codes[f.Get("code")]
		if code == nil || code.used || code.client != c.id || as.refuseCodes {
			fail(400, "invalid_grant", "unknown or used code")
			return
		}
		code.used = true
		if f.Get("redirect_uri") != code.redirect {
			fail(400, "invalid_grant", "redirect_uri differs from the authorization request's")
			return
		}
		sum := sha256.Sum256([]byte(f.Get("code_verifier")))
		if base64.RawURLEncoding.EncodeToString(sum[:]) != code.challenge {
			fail(400, "invalid_grant", "PKCE verification failed")
			return
		}
		if f.Get("resource") != code.resource {
			fail(400, "invalid_target", "resource differs from the authorization request's")
			return
		}
		scope, resource = code.scope, code.resource
	case "refresh_token":
		old := as.refresh[f.Get("refresh_token")]
		if old == nil || old.revoked || old.client != c.id {
			fail(400, "invalid_grant", "refresh token is invalid, expired or revoked")
			return
		}
		if f.Get("resource") != old.resource {
			fail(400, "invalid_target", "resource differs from the grant's")
			return
		}
		old.revoked = true // rotation: a refresh token is used once
		scope, resource = old.scope, old.resource
	default:
		fail(400, "unsupported_grant_type", grant)
		return
	}
	at, rt := "at-"+random(), "rt-"+random()
	as.access[at] = &asToken{client: c.id, resource: resource, scope: scope, expires: time.Now().Add(as.ttl)}
	as.refresh[rt] = &asToken{client: c.id, resource: resource, scope: scope}
	as.secrets = append(as.secrets, at, rt)
	writeJSON(w, 200, map[string]any{
		"access_token": at, "token_type": "Bearer", "expires_in": int(as.ttl.Seconds()),
		"refresh_token": rt, "scope": scope,
	})
}

// revoke invalidates every access token (and every refresh token too
// if refresh), as a server-side logout or key rotation does.
func (as *testAS) revoke(refresh bool) {
	as.mu.Lock()
	defer as.mu.Unlock()
	for _, t := range as.access {
		t.revoked = true
	}
	if refresh {
		for _, t := range as.refresh {
			t.revoked = true
		}
	}
}

// verify is the resource server's token check (an introspection of the
// authorization server's own records).
func (as *testAS) verify(resource string) auth.TokenVerifier {
	return func(ctx context.Context, token string, req *http.Request) (*auth.TokenInfo, error) {
		as.mu.Lock()
		defer as.mu.Unlock()
		t := as.access[token]
		if t == nil || t.revoked || time.Now().After(t.expires) || t.resource != resource {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{Scopes: strings.Fields(t.scope), Expiration: t.expires}, nil
	}
}

// testRS is an MCP server (the go-sdk's, with one tool) behind the
// go-sdk's bearer token middleware, publishing its protected resource
// metadata (RFC 9728) at the path-inserted well-known URL.
type testRS struct {
	srv *httptest.Server
	URL string // the streamable MCP endpoint; SSE is at /sse
}

func newTestRS(t *testing.T, as *testAS, scopes []string) *testRS {
	rs := &testRS{}
	mux := http.NewServeMux()
	rs.srv = httptest.NewServer(mux)
	t.Cleanup(rs.srv.Close)
	rs.URL = rs.srv.URL + "/mcp"
	server := mcp.NewServer(&mcp.Implementation{Name: "remote", Version: "1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "echo"}, func(ctx context.Context, req *mcp.CallToolRequest, in struct {
		Text string `json:"text"`
	}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
	})
	// The streamable transport at /mcp, the older SSE transport at /sse:
	// each its own protected resource.
	for path, h := range map[string]http.Handler{
		"/mcp": mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil),
		"/sse": mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return server }, nil),
	} {
		resource := rs.srv.URL + path
		prmURL := rs.srv.URL + "/.well-known/oauth-protected-resource" + path
		mux.Handle("GET /.well-known/oauth-protected-resource"+path, auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
			Resource:             resource,
			AuthorizationServers: []string{as.URL()},
			ScopesSupported:      []string{"mcp:read", "mcp:write"},
		}))
		protected := auth.RequireBearerToken(as.verify(resource), &auth.RequireBearerTokenOptions{
			ResourceMetadataURL: prmURL,
			Scopes:              scopes,
		})(h)
		mux.Handle(path, protected)
	}
	return rs
}

// newStepUpRS is a testRS whose tools/call needs the scope mcp:write
// while everything else needs mcp:read: its 401 asks for mcp:read, and a
// call made with that alone is answered 403 with error="insufficient_scope"
// and the scopes it needs (the MCP spec's step-up authorization).
func newStepUpRS(t *testing.T, as *testAS) *testRS {
	rs := &testRS{}
	mux := http.NewServeMux()
	rs.srv = httptest.NewServer(mux)
	t.Cleanup(rs.srv.Close)
	rs.URL = rs.srv.URL + "/mcp"
	server := mcp.NewServer(&mcp.Implementation{Name: "remote", Version: "1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "echo"}, func(ctx context.Context, req *mcp.CallToolRequest, in struct {
		Text string `json:"text"`
	}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
	})
	prmURL := rs.srv.URL + "/.well-known/oauth-protected-resource/mcp"
	mux.Handle("GET /.well-known/oauth-protected-resource/mcp", auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
		Resource:             rs.URL,
		AuthorizationServers: []string{as.URL()},
		ScopesSupported:      []string{"mcp:read", "mcp:write"},
	}))
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)
	stepUp := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			if strings.Contains(string(body), `"tools/call"`) && !slices.Contains(auth.TokenInfoFromContext(r.Context()).Scopes, "mcp:write") {
				w.Header().Set("WWW-Authenticate", `Bearer error="insufficient_scope", scope="mcp:read mcp:write", resource_metadata="`+prmURL+`"`)
				http.Error(w, "insufficient scope", http.StatusForbidden)
				return
			}
		}
		h.ServeHTTP(w, r)
	})
	mux.Handle("/mcp", auth.RequireBearerToken(as.verify(rs.URL), &auth.RequireBearerTokenOptions{
		ResourceMetadataURL: prmURL,
		Scopes:              []string{"mcp:read"},
	})(stepUp))
	return rs
}

func TestTestASRefusesWrongVerifier(t *testing.T) {
	// The authorization server the tests trust really checks PKCE.
	as := newTestAS(t)
	as.clients["c"] = &asClient{id: "c", method: "none", redirects: []string{"http://127.0.0.1:1/callback"}}
	sum := sha256.Sum256([]byte("the-right-verifier-the-right-verifier-123"))
	as.codes["k"] = &asCode{client: "c", redirect: "http://127.0.0.1:1/callback", challenge: base64.RawURLEncoding.EncodeToString(sum[:]), resource: "r"}
	resp, err := http.PostForm(as.URL()+"/token", url.Values{
		"grant_type": {"authorization_code"}, "code": {"k"}, "client_id": {"c"},
		"redirect_uri": {"http://127.0.0.1:1/callback"}, "code_verifier": {"a-wrong-verifier-a-wrong-verifier-123456"}, "resource": {"r"},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var e struct{ Error, ErrorDescription string }
	json.NewDecoder(resp.Body).Decode(&e)
	if resp.StatusCode != 400 || e.Error != "invalid_grant" {
		t.Fatalf("wrong verifier: %d %+v", resp.StatusCode, e)
	}

}
