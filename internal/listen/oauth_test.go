package listen

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// An issuer on loopback: its keys at /jwks, tokens minted by the test.
func TestOAuthTokens(t *testing.T) {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	jwks := jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k1", Algorithm: "ES256", Use: "sig"}}}
	idp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { json.NewEncoder(w).Encode(jwks) }))
	defer idp.Close()
	o, err := NewOAuth(OAuthConfig{Issuer: idp.URL, JWKSURI: idp.URL + "/jwks", Scopes: []string{"mcp"}, UserClaim: "sub"}, "https://MCP.example.com:443/")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	mint := func(k *ecdsa.PrivateKey, kid string, claims map[string]any) string {
		sig, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: k}, (&jose.SignerOptions{}).WithHeader("kid", kid).WithType("JWT"))
		if err != nil {
			t.Fatal(err)
		}
		tok, err := jwt.Signed(sig).Claims(claims).Serialize()
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	good := func() map[string]any {
		return map[string]any{"iss": idp.URL, "aud": "https://mcp.example.com", "sub": "alice", "scope": "mcp other",
			"exp": now.Add(time.Hour).Unix(), "iat": now.Unix()}
	}
	with := func(k string, v any) map[string]any {
		c := good()
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
		return c
	}
	hs, _ := jose.NewSigner(jose.SigningKey{Algorithm: jose.HS256, Key: []byte("0123456789abcdef0123456789abcdef")}, nil)
	hsTok, _ := jwt.Signed(hs).Claims(good()).Serialize()
	cases := []struct {
		name, token string
		status      int // 0: accepted
	}{
		{"good", mint(key, "k1", good()), 0},
		{"audience as a list", mint(key, "k1", with("aud", []string{"https://other.example", "https://mcp.example.com"})), 0},
		{"another audience", mint(key, "k1", with("aud", "https://other.example")), 401},
		{"a path under the audience", mint(key, "k1", with("aud", "https://mcp.example.com/servers/x/mcp")), 401},
		{"no audience", mint(key, "k1", with("aud", nil)), 401},
		{"another issuer", mint(key, "k1", with("iss", "https://evil.example")), 401},
		{"expired", mint(key, "k1", with("exp", now.Add(-time.Hour).Unix())), 401},
		{"no expiry", mint(key, "k1", with("exp", nil)), 401},
		{"not yet valid", mint(key, "k1", with("nbf", now.Add(time.Hour).Unix())), 401},
		{"no scope", mint(key, "k1", with("scope", "other")), 403},
		{"no user", mint(key, "k1", with("sub", nil)), 401},
		{"another key, same kid", mint(other, "k1", good()), 401},
		{"an unknown kid", mint(other, "k9", good()), 401},
		{"HS256", hsTok, 401},
		{"not a JWT", "opaque-token", 401},
		{"none", "", 401},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/mcp", nil)
			if c.token != "" {
				r.Header.Set("Authorization", "Bearer "+c.token)
			}
			user, err := o.Authenticate(r)
			if c.status == 0 {
				if err != nil || user != "alice" {
					t.Fatalf("%v, user %q", err, user)
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted as %q", user)
			}
			w := httptest.NewRecorder()
			o.Challenge(w, r, err)
			h := w.Header().Get("WWW-Authenticate")
			if w.Code != c.status || !strings.Contains(h, `resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource"`) {
				t.Fatalf("%d %q, want %d with the resource metadata", w.Code, h, c.status)
			}
		})
	}
	// The metadata names the resource and the issuer.
	w := httptest.NewRecorder()
	o.MetadataHandlers()["/.well-known/oauth-protected-resource"].ServeHTTP(w, httptest.NewRequest("GET", "/.well-known/oauth-protected-resource", nil))
	var md struct {
		Resource             string   `json:"resource"`
		AuthorizationServers []string `json:"authorization_servers"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &md); err != nil || md.Resource != "https://mcp.example.com" || len(md.AuthorizationServers) != 1 || md.AuthorizationServers[0] != idp.URL {
		t.Fatalf("metadata: %s", w.Body.String())
	}
}

func TestMetadataURLs(t *testing.T) {
	for _, c := range []struct {
		issuer string
		want   []string
	}{
		{"https://idp.example", []string{"https://idp.example/.well-known/oauth-authorization-server", "https://idp.example/.well-known/openid-configuration"}},
		{"https://idp.example/", []string{"https://idp.example/.well-known/oauth-authorization-server", "https://idp.example/.well-known/openid-configuration"}},
		{"https://kc.example/realms/team", []string{
			"https://kc.example/.well-known/oauth-authorization-server/realms/team",
			"https://kc.example/.well-known/openid-configuration/realms/team",
			"https://kc.example/realms/team/.well-known/openid-configuration",
		}},
	} {
		if got := metadataURLs(c.issuer); strings.Join(got, " ") != strings.Join(c.want, " ") {
			t.Errorf("%s: %q, want %q", c.issuer, got, c.want)
		}
	}
}

// An issuer that publishes OpenID discovery only (as many identity
// providers do) gives its keys; metadata that names another issuer, or
// keys over plain http off loopback, is refused.
func TestDiscoverJWKS(t *testing.T) {
	var issuer, jwksURI string
	mux := http.NewServeMux()
	mux.HandleFunc("/realms/team/.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]string{"issuer": issuer, "jwks_uri": jwksURI})
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	for _, c := range []struct {
		name, issuer, jwks, want string
	}{
		{"openid discovery", srv.URL + "/realms/team", srv.URL + "/keys", ""},
		{"another issuer", "https://evil.example/realms/team", srv.URL + "/keys", "names the issuer"},
		// Compared exactly, as a token's iss is: a spelling the tokens
		// would not match is refused at start, not let through here.
		{"the issuer spelt otherwise", srv.URL + "/realms/team/", srv.URL + "/keys", "names the issuer"},
		{"keys off loopback over http", srv.URL + "/realms/team", "http://keys.example/keys", "not an https:// URL"},
	} {
		t.Run(c.name, func(t *testing.T) {
			issuer, jwksURI = c.issuer, c.jwks
			o := &OAuth{cfg: OAuthConfig{Issuer: srv.URL + "/realms/team"}, client: srv.Client()}
			got, err := o.discoverJWKS(context.Background())
			switch {
			case c.want == "" && (err != nil || got != c.jwks):
				t.Errorf("got %q, %v; want %q", got, err, c.jwks)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("got %q, %v; want an error saying %q", got, err, c.want)
			}
		})
	}
	o := &OAuth{cfg: OAuthConfig{Issuer: srv.URL + "/other"}, client: srv.Client()}
	if _, err := o.discoverJWKS(context.Background()); err == nil || !strings.Contains(err.Error(), "publishes no metadata") {
		t.Errorf("an issuer with no metadata: %v", err)
	}
}

// The issuer and a configured jwks_uri must be https (http only on
// loopback): keys fetched in the clear could be swapped for an attacker's.
func TestOAuthInsecureURLs(t *testing.T) {
	for _, cfg := range []OAuthConfig{
		{Issuer: "http://idp.example"},
		{Issuer: "https://idp.example", JWKSURI: "http://idp.example/keys"},
		{Issuer: "https://idp.example", JWKSURI: "keys.json"},
	} {
		if _, err := NewOAuth(cfg, "https://mcp.example.com"); err == nil || !strings.Contains(err.Error(), "https://") {
			t.Errorf("%+v: %v; want it refused for want of https", cfg, err)
		}
	}
}
