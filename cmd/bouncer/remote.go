package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/bouncer-mcp/bouncer/internal/oauth"
	"github.com/bouncer-mcp/bouncer/internal/proxy"
)

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
	// Seal, if set, is called once the proxy is sandboxed: from then on the
	// OAuth client may refresh tokens but not start a new sign-in (it
	// would need a browser, a listener and origins the sandbox refuses).
	Seal func()
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
	var seal func()
	if cfg.Headers.Get("Authorization") == "" {
		// No token given: run the MCP authorization if the server asks
		// for it, now, before the sandbox. The sign-in may reach the
		// authorization server's origins; each is pinned as it is dialled,
		// and the token endpoint stays pinned for refreshes.
		client := &http.Client{Transport: &http.Transport{ForceAttemptHTTP2: true,
			DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				if err := pins.Add(ctx, addr); err != nil {
					return nil, err
				}
				return pins.Dial(ctx, network, addr)
			}}}
		a, err := oauth.New(oauth.Config{ServerURL: cfg.URL, StateDir: stateDir, Stderr: os.Stderr, HTTPClient: client})
		if err != nil {
			return nil, upstreamReach{}, err
		}
		// A sign-in that fails is said, and the session goes on without
		// OAuth: the server's 401 then answers the client's first request
		// with what to do instead.
		if err := a.Ensure(ctx); err != nil {
			errorf("signing in to the remote server: %v", err)
		} else {
			for _, hp := range a.Endpoints() {
				if err := pins.Add(ctx, hp); err != nil {
					return nil, upstreamReach{}, fmt.Errorf("authorizing with the remote server: %v", err)
				}
			}
			cfg.Auth, seal = a.Handler(), a.Seal
		}
	}
	rem, err := proxy.DialRemote(*cfg)
	if err != nil {
		return nil, upstreamReach{}, err
	}
	return rem, upstreamReach{Ports: pins.Ports(), Remote: true, Seal: seal}, nil
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
