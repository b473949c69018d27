package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/bouncer-mcp/bouncer/internal/proxy"
)

// RemoteAuth is what bouncer run gives the OAuth client of a remote
// upstream (see remoteAuthorizer).
type RemoteAuth struct {
	// URL is the server's MCP endpoint.
	URL string
	// StateDir is bouncer's state directory, where tokens are kept
	// (files 0600).
	StateDir string
	// Stderr is where the user is told what to do (the URL to open).
	Stderr io.Writer
	// HTTPClient dials only the pinned origins: the server's, and those
	// passed to Allow. The handler must make every request with it; once
	// the proxy is sandboxed nothing else can reach the network.
	HTTPClient *http.Client
	// Allow pins another origin ("host:port": the authorization server,
	// its token endpoint) for HTTPClient and the sandbox, resolving its
	// name now. Call it, before returning, for every origin the handler
	// will talk to while the session runs (a token refresh, say).
	Allow func(ctx context.Context, hostport string) error
}

// remoteAuthorizer is the OAuth seam: the package that runs the MCP
// authorization flow sets it from an init function in its own cmd file.
// It is called once per remote session, before the sandbox is applied, so
// whatever needs a browser, a loopback listener for the redirect, or an
// origin not yet pinned must happen inside it (or be pinned by Allow). The
// handler it returns authorizes every request of the session: TokenSource
// gives the bearer token, and a 401 or 403 calls Authorize once and
// retries (proxy.RemoteConfig.Auth). Nil, or a nil handler: no OAuth; a
// server that answers 401 ends the session with an error saying it asks
// for OAuth.
var remoteAuthorizer func(ctx context.Context, r RemoteAuth) (auth.OAuthHandler, error)

// upstreamReach is what the sandboxed proxy must still reach of its
// upstream.
type upstreamReach struct {
	// Pid is a stdio upstream's process (and group) ID; 0 for a remote one.
	Pid int
	// Ports are the TCP ports a remote upstream is reached on (the
	// server's, and its authorizer's origins).
	Ports []uint16
	// Remote is true for a remote upstream: the proxy keeps TCP connect.
	Remote bool
}

// dialRemote pins the server's origin (its name resolved now, before the
// sandbox), lets the OAuth client in if there is one, and prepares the
// session.
func dialRemote(ctx context.Context, cfg *proxy.RemoteConfig, stateDir string) (*proxy.Remote, upstreamReach, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, upstreamReach{}, fmt.Errorf("--url: give the server's MCP endpoint as an http:// or https:// URL")
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	pins := proxy.NewPins()
	if err := pins.Add(ctx, net.JoinHostPort(u.Hostname(), port)); err != nil {
		return nil, upstreamReach{}, fmt.Errorf("the remote server: %v", err)
	}
	cfg.Dial = pins.Dial
	cfg.Log = os.Stderr
	if remoteAuthorizer != nil {
		client := &http.Client{Transport: &http.Transport{DialContext: pins.Dial, ForceAttemptHTTP2: true}}
		h, err := remoteAuthorizer(ctx, RemoteAuth{URL: cfg.URL, StateDir: stateDir, Stderr: os.Stderr, HTTPClient: client, Allow: pins.Add})
		if err != nil {
			return nil, upstreamReach{}, fmt.Errorf("authorizing with the remote server: %v", err)
		}
		cfg.Auth = h
	}
	rem, err := proxy.DialRemote(*cfg)
	if err != nil {
		return nil, upstreamReach{}, err
	}
	return rem, upstreamReach{Ports: pins.Ports(), Remote: true}, nil
}

// addHeaders adds --header "Name: value" flags to h. A bad flag is named
// by its position, never by its value, which may be a token.
func addHeaders(h http.Header, flags []string) error {
	for i, f := range flags {
		name, value, ok := strings.Cut(f, ":")
		name = strings.TrimSpace(name)
		if !ok || name == "" || strings.ContainsAny(name, " \t\r\n") {
			return fmt.Errorf("--header #%d: give it as \"Name: value\"", i+1)
		}
		if strings.ContainsAny(value, "\r\n") {
			return fmt.Errorf("--header #%d (%s): the value has a line break", i+1, name)
		}
		h.Add(name, strings.TrimSpace(value))
	}
	return nil
}

// remoteName is the default --name of a remote upstream: its host name.
func remoteName(raw string) string {
	if u, err := url.Parse(raw); err == nil && u.Hostname() != "" {
		return u.Hostname()
	}
	return "remote"
}

// transportOf maps a config entry's "type" to a transport: "sse" is the
// older HTTP+SSE one; "http" (and the other names clients use for
// streamable HTTP) and no type try streamable HTTP first.
func transportOf(typ string) string {
	if strings.EqualFold(typ, "sse") {
		return proxy.TransportSSE
	}
	return proxy.TransportAuto
}
