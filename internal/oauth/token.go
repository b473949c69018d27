package oauth

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// tokenError is an error answer of a token endpoint (RFC 6749 §5.2).
type tokenError struct {
	Status      int
	Code        string // "invalid_grant", ...
	Description string
}

func (e *tokenError) Error() string {
	s := fmt.Sprintf("the token endpoint answered %d", e.Status)
	if e.Code != "" {
		s += " " + e.Code
	}
	if e.Description != "" {
		s += " (" + clip(e.Description, 200) + ")"
	}
	return s
}

// refused reports whether the authorization server refused the grant
// itself (as opposed to being unreachable or broken): a refused refresh
// token means a new sign-in, a network failure does not.
func (e *tokenError) refused() bool {
	switch e.Code {
	case "invalid_grant", "invalid_client", "unauthorized_client", "invalid_scope", "invalid_target":
		return true
	}
	return e.Status == http.StatusBadRequest || e.Status == http.StatusUnauthorized
}

// tokenRequest posts a token request (RFC 6749 §3.2) with the client's
// authentication and returns the token it answers. Both grants Bouncer
// uses go through here, so both carry the RFC 8707 resource parameter
// (the MCP authorization spec asks for it in authorization and token
// requests alike, which golang.org/x/oauth2's refresh does not send).
func tokenRequest(ctx context.Context, hc *http.Client, endpoint string, form url.Values, c *clientRecord, now time.Time) (*tokenRecord, error) {
	switch c.AuthMethod {
	case "client_secret_post":
		form.Set("client_id", c.ID)
		form.Set("client_secret", c.Secret)
	case "client_secret_basic":
	case "none", "":
		form.Set("client_id", c.ID)
	default:
		return nil, fmt.Errorf("token endpoint authentication method %q is not supported", c.AuthMethod)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if c.AuthMethod == "client_secret_basic" {
		// RFC 6749 §2.3.1: form-encode both before the Basic encoding.
		req.SetBasicAuth(url.QueryEscape(c.ID), url.QueryEscape(c.Secret))
	}
	// A token request is never redirected: the form carries the code,
	// the verifier, the refresh token or the client secret, which must
	// go to the token endpoint the metadata named and nowhere else.
	noRedirect := *hc
	noRedirect.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := noRedirect.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("reading the token endpoint's answer: %v", err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		te := &tokenError{Status: resp.StatusCode}
		var e struct {
			Error       string `json:"error"`
			Description string `json:"error_description"`
		}
		if json.Unmarshal(body, &e) == nil {
			te.Code, te.Description = e.Error, e.Description
		}
		return nil, te
	}
	var t struct {
		AccessToken  string          `json:"access_token"`
		TokenType    string          `json:"token_type"`
		RefreshToken string          `json:"refresh_token"`
		ExpiresIn    json.RawMessage `json:"expires_in"`
		Scope        string          `json:"scope"`
	}
	if ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); ct != "" && ct != "application/json" {
		return nil, fmt.Errorf("the token endpoint answered with %q, not JSON", ct)
	}
	if err := json.Unmarshal(body, &t); err != nil {
		return nil, fmt.Errorf("the token endpoint's answer is not a token: %v", err)
	}
	if t.AccessToken == "" {
		return nil, fmt.Errorf("the token endpoint's answer has no access_token")
	}
	if t.TokenType != "" && !strings.EqualFold(t.TokenType, "bearer") {
		return nil, fmt.Errorf("the token endpoint issued a %q token; Bouncer only sends Bearer tokens", t.TokenType)
	}
	tr := &tokenRecord{AccessToken: t.AccessToken, TokenType: "Bearer", RefreshToken: t.RefreshToken, Scope: t.Scope}
	if secs := expiresIn(t.ExpiresIn); secs > 0 {
		tr.Expiry = now.Add(time.Duration(secs) * time.Second)
	}
	return tr, nil
}

// expiresIn reads expires_in, which some servers send as a string.
func expiresIn(raw json.RawMessage) int64 {
	if len(raw) == 0 {
		return 0
	}
	var n json.Number
	if err := json.Unmarshal(raw, &n); err != nil {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return 0
		}
		n = json.Number(s)
	}
	v, err := strconv.ParseFloat(string(n), 64)
	if err != nil || v <= 0 {
		return 0
	}
	return int64(v)
}
