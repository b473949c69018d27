package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/bouncer-mcp/bouncer/internal/oauth"
	"github.com/bouncer-mcp/bouncer/internal/proxy"
	"github.com/modelcontextprotocol/go-sdk/auth"
)

// upstreamReach is what the sandboxed proxy must still reach of its
// upstream.
type upstreamReach struct {
	// Pid is a stdio upstream's process (and group) ID; 0 for a remote one.
	Pid int
	// Ports are the TCP ports a remote upstream is reached on (the
	// server's, and its OAuth token endpoint's).
	Ports []uint16
	// Remote is true for a remote upstream: the proxy keeps TCP connect.
	Remote bool
	// Seal, if set, is called once the proxy is sandboxed: from then on the
	// OAuth client may refresh tokens but not start a new sign-in (it
	// would need a browser, a listener and origins the sandbox refuses).
	Seal func()
}

// dialRemote pins the server's origin (its name resolved now, before the
// sandbox), lets the OAuth client in if there is one, and prepares the
// session. sandboxed says whether the proxy will confine itself (and seal
// the OAuth client).
func dialRemote(ctx context.Context, cfg *proxy.RemoteConfig, stateDir string, sandboxed bool) (*proxy.Remote, upstreamReach, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, upstreamReach{}, fmt.Errorf("--url: give the server's MCP endpoint as an http:// or https:// URL")
	}
	// The session reaches the server's origin and nothing else: not the
	// authorization server, whose answers it never needs.
	server := proxy.NewPins()
	if err := server.Add(ctx, originHostPort(u)); err != nil {
		return nil, upstreamReach{}, fmt.Errorf("the remote server: %v", err)
	}
	cfg.Dial = server.Dial
	cfg.Log = os.Stderr
	reach := upstreamReach{Ports: server.Ports(), Remote: true}
	if cfg.Headers.Get("Authorization") == "" {
		// No token given: run the MCP authorization if the server asks
		// for it, now, before the sandbox.
		auth, err := signInRemote(ctx, cfg.URL, stateDir, sandboxed)
		if err != nil {
			return nil, upstreamReach{}, err
		}
		if auth != nil {
			cfg.Auth, reach.Seal = auth.handler, auth.seal
			for _, p := range auth.ports {
				if !slices.Contains(reach.Ports, p) {
					reach.Ports = append(reach.Ports, p)
				}
			}
		}
	}
	rem, err := proxy.DialRemote(*cfg)
	if err != nil {
		return nil, upstreamReach{}, err
	}
	return rem, reach, nil
}

// remoteAuth is a signed-in OAuth client, as the session uses it.
type remoteAuth struct {
	handler auth.OAuthHandler
	// ports are the TCP ports it still needs once sealed: its token
	// endpoint's.
	ports []uint16
	// seal narrows it to its token endpoint and hands new sign-ins to
	// the helper (if there is one).
	seal func()
}

// signInRemote signs in to the server at serverURL if it asks for OAuth.
// The sign-in may reach any public host (and hosts of the server's own
// kind: see oauth.Guard), for discovery, registration and the token.
// Once sealed, the OAuth client reaches the token endpoint the sign-in
// pinned and nothing else, and a sign-in the server asks for later (a
// step-up, a refused refresh) runs in the sign-in helper started here,
// outside the sandbox. A sign-in that fails is said, and nil is
// returned: the session goes on without OAuth, and the server's 401 then
// answers the client's first request with what to do instead.
func signInRemote(ctx context.Context, serverURL, stateDir string, sandboxed bool) (*remoteAuth, error) {
	guard := oauth.NewGuard(serverURL)
	token := proxy.NewPins()
	token.Check = guard.Check
	// Loaded now: once sandboxed, the certificate files can't be read.
	roots, err := x509.SystemCertPool()
	if err != nil {
		return nil, fmt.Errorf("loading the system's certificates: %w", err)
	}
	var sealed atomic.Bool
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		Proxy:             nil, // the guard checks the address dialled: the host's own
		ForceAttemptHTTP2: true,
		TLSClientConfig:   &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if sealed.Load() {
				return token.Dial(ctx, network, addr)
			}
			return guard.DialContext(ctx, network, addr)
		},
	}}
	cfg := oauth.Config{ServerURL: serverURL, StateDir: stateDir, Stderr: os.Stderr, HTTPClient: client}
	if sandboxed {
		h, err := oauth.StartHelper(cfg)
		if err != nil {
			errorf("warning: %v; a sign-in the server asks for during the session will need a restart", err)
		} else {
			cfg.Helper = h
		}
	}
	a, err := oauth.New(cfg)
	if err != nil {
		return nil, err
	}
	if err := a.Ensure(ctx); err != nil {
		errorf("signing in to the remote server: %v", err)
		if cfg.Helper != nil {
			cfg.Helper.Close()
		}
		return nil, nil
	}
	// Endpoints is the server's origin and the token endpoint: the only
	// hosts the sealed client dials (for a refresh).
	for _, hp := range a.Endpoints() {
		if err := token.Add(ctx, hp); err != nil {
			return nil, fmt.Errorf("authorizing with the remote server: %v", err)
		}
	}
	return &remoteAuth{handler: a.Handler(), ports: token.Ports(), seal: func() {
		sealed.Store(true)
		a.Seal()
	}}, nil
}

// originHostPort is u's host:port, the port the scheme's default if none
// is written.
func originHostPort(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	return net.JoinHostPort(u.Hostname(), port)
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
