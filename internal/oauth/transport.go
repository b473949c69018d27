package oauth

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"golang.org/x/oauth2"
)

// RoundTripper returns a transport that sends the server's requests
// through base (http.DefaultTransport if nil) with the bearer token,
// and answers the server's call for authorization: on 401, a refresh (if
// a refresh token is kept) or else a sign-in; on 403 with
// error="insufficient_scope", a sign-in for the larger scope. Either way
// the request is then sent once more. A request that needs a token while
// another one is being got waits for it.
//
// The token goes only to the server's origin (scheme, host and port of
// ServerURL): a request elsewhere (a redirect, an SSE endpoint on another
// host) is passed through untouched, and so is a request that already
// has an Authorization header (a static credential the user configured;
// add such headers outside this RoundTripper, wrapping it).
//
// When no token can be had, RoundTrip returns an *Error saying what to
// do; the server's 401 answer is not passed on.
func (a *Authorizer) RoundTripper(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return &roundTripper{a: a, base: base}
}

type roundTripper struct {
	a    *Authorizer
	base http.RoundTripper
}

func (rt *roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	a := rt.a
	if !a.sameOrigin(req) || req.Header.Get("Authorization") != "" {
		// Another host, or credentials the user configured themselves
		// (--header "Authorization: ..."): not ours to touch.
		return rt.base.RoundTrip(req)
	}
	// The body may have to be sent twice.
	getBody := req.GetBody
	if req.Body != nil && req.Body != http.NoBody && getBody == nil {
		data, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		getBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }
	}
	send := func(token string) (*http.Response, error) {
		r := req.Clone(req.Context())
		if getBody != nil {
			body, err := getBody()
			if err != nil {
				return nil, err
			}
			r.Body = body
		}
		r.Header.Del("Authorization")
		if token != "" {
			r.Header.Set("Authorization", "Bearer "+token)
		}
		return rt.base.RoundTrip(r)
	}

	token := a.token(req.Context())
	resp, err := send(token)
	if err != nil {
		return nil, a.fail(nil, err)
	}
	ch, ok := authChallenge(resp)
	if !ok {
		return resp, nil
	}
	drain(resp)
	if err := a.renew(req.Context(), renewal{failed: token, ch: &ch}); err != nil {
		return nil, err
	}
	token2 := a.token(req.Context())
	resp, err = send(token2)
	if err != nil {
		return nil, a.fail(nil, err)
	}
	if resp.StatusCode == http.StatusUnauthorized {
		drain(resp)
		return nil, &Error{kind: ErrSignInFailed, msg: fmt.Sprintf(
			"oauth: %s still answers 401 Unauthorized after a new token; check that the account you signed in with may use it (bouncer keeps the sign-in in %s)", a.name, a.store.dir)}
	}
	// A 403 after a step-up is the server's last word (the MCP spec asks
	// clients to bound their retries): it goes to the caller as it is.
	return resp, nil
}

// authChallenge reports whether resp calls for authorization: 401, or
// 403 with error="insufficient_scope" (a 403 for any other reason is the
// server's refusal, not a question of tokens).
func authChallenge(resp *http.Response) (challenge, bool) {
	switch resp.StatusCode {
	case http.StatusUnauthorized:
		return parseChallenge(resp), true
	case http.StatusForbidden:
		ch := parseChallenge(resp)
		return ch, ch.stepUp()
	}
	return challenge{}, false
}

func drain(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
}

// sameOrigin reports whether req goes to the server's origin, the one
// place its token may go.
func (a *Authorizer) sameOrigin(req *http.Request) bool {
	if req.URL == nil {
		return false
	}
	origin, err := canonicalURL(req.URL.Scheme + "://" + req.URL.Host + "/")
	if err != nil {
		return false
	}
	return strings.TrimSuffix(origin, "/") == a.origin
}

// Handler adapts the Authorizer to the go-sdk's auth.OAuthHandler, for
// mcp.StreamableClientTransport.OAuthHandler (an alternative to
// RoundTripper; use one or the other). The go-sdk calls Authorize only
// for the POSTs of its streamable transport; RoundTripper also covers
// the standalone GET stream and the SSE transport.
func (a *Authorizer) Handler() auth.OAuthHandler { return handler{a} }

type handler struct{ a *Authorizer }

// TokenSource returns nil until there is a token, so that the transport
// sends its first request without one.
func (h handler) TokenSource(ctx context.Context) (oauth2.TokenSource, error) {
	if !h.a.SignedIn() {
		return nil, nil
	}
	return tokenSource(h), nil
}

func (h handler) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	ch, ok := authChallenge(resp)
	drain(resp)
	if !ok {
		// A plain 403: nothing a token changes; the go-sdk retries once
		// and passes the server's answer on.
		return nil
	}
	failed := ""
	if f := strings.Fields(req.Header.Get("Authorization")); len(f) == 2 && strings.EqualFold(f[0], "bearer") {
		failed = f[1]
	}
	return h.a.renew(ctx, renewal{failed: failed, ch: &ch})
}

type tokenSource struct{ a *Authorizer }

func (ts tokenSource) Token() (*oauth2.Token, error) {
	t := ts.a.token(context.Background())
	if t == "" {
		// The go-sdk sends the request without a token when the error is
		// an invalid_grant RetrieveError; the 401 that follows starts the
		// sign-in through Authorize.
		return nil, &oauth2.RetrieveError{ErrorCode: "invalid_grant", ErrorDescription: "no usable token; a sign-in is needed"}
	}
	return &oauth2.Token{AccessToken: t, TokenType: "Bearer"}, nil
}
