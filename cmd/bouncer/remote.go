package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/bouncer-mcp/bouncer/internal/envexpand"
	"github.com/bouncer-mcp/bouncer/internal/oauth"
	"github.com/bouncer-mcp/bouncer/internal/statefile"
	"github.com/bouncer-mcp/bouncer/internal/transport"
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
func dialRemote(ctx context.Context, cfg *transport.RemoteConfig, stateDir string, sandboxed bool) (*transport.Remote, upstreamReach, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, upstreamReach{}, fmt.Errorf("--url: give the server's MCP endpoint as an http:// or https:// URL")
	}
	// The session reaches the server's origin and nothing else: not the
	// authorization server, whose answers it never needs.
	server := transport.NewPins()
	if err := server.Add(ctx, originHostPort(u)); err != nil {
		return nil, upstreamReach{}, fmt.Errorf("the remote server: %v", err)
	}
	cfg.Dial = server.Dial
	cfg.Log = os.Stderr
	reach := upstreamReach{Ports: server.Ports(), Remote: true}
	if cfg.Headers.Get("Authorization") == "" {
		// No token given: run the MCP authorization if the server asks
		// for it, now, before the sandbox.
		auth, err := signInRemote(ctx, cfg.URL, server.Addrs(originHostPort(u)), stateDir, sandboxed)
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
	rem, err := transport.DialRemote(*cfg)
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
// kind, judged by serverAddrs, the addresses the session pinned: see
// oauth.Guard), for discovery, registration and the token.
// Once sealed, the OAuth client reaches the token endpoint the sign-in
// pinned and nothing else, and a sign-in the server asks for later (a
// step-up, a refused refresh) runs in the sign-in helper started here,
// outside the sandbox. A sign-in that fails is said, and nil is
// returned: the session goes on without OAuth, and the server's 401 then
// answers the client's first request with what to do instead.
func signInRemote(ctx context.Context, serverURL string, serverAddrs []netip.Addr, stateDir string, sandboxed bool) (*remoteAuth, error) {
	guard := oauth.NewGuardFor(serverURL, serverAddrs)
	token := transport.NewPins()
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
	cfg := oauth.Config{ServerURL: serverURL, StateDir: stateDir, ServerAddrs: serverAddrs, Stderr: os.Stderr, HTTPClient: client}
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
		errorf("finding whether the remote server wants a sign-in, or signing in: %v; going on without one (a server that wants one answers the first request with what to do)", err)
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

// addHeaders adds --header "Name: value" flags to h, each ${VAR} in a
// value replaced by the variable from lookup by envexpand's rule (the one
// audit_ship.headers follows: an unset one is an error, never an empty
// credential). A bad flag is named by its position, never by its value,
// which may be a token. A value that looks like a credential and is
// written on the command line itself (where any user of the machine can
// read it, in ps or /proc) is warned about.
func addHeaders(h http.Header, flags []string, lookup func(string) (string, bool)) error {
	for i, f := range flags {
		name, raw, ok := strings.Cut(f, ":")
		name = strings.TrimSpace(name)
		if !ok || !validHeaderName(name) {
			return fmt.Errorf("--header #%d: give it as \"Name: value\"", i+1)
		}
		value, err := envexpand.Expand(fmt.Sprintf("--header #%d (%s)", i+1, name), strings.TrimSpace(raw), lookup)
		if err != nil {
			return err
		}
		if strings.ContainsAny(value, "\r\n") {
			return fmt.Errorf("--header #%d (%s): the value has a line break", i+1, name)
		}
		if argvCredential(name, raw) {
			errorf("warning: --header #%d (%s) puts a credential on the command line, where any user of this machine can read it; "+
				"keep it in a file (--header-file FILE, mode 0600) or in the environment (--header '%s: ${VAR}', in single quotes so that bouncer, not the shell, expands it)", i+1, name, name)
		}
		h.Add(name, value)
	}
	return nil
}

// headerFileMax bounds a --header-file.
const headerFileMax = 64 << 10

// addHeaderFile adds the headers of a --header-file to h: one "Name:
// value" a line; blank lines and lines starting with # are skipped. The
// values are taken as written (no ${VAR}: the file is where the secret
// lives). The file must be a regular file (a FIFO is refused at once, not
// waited on) of this user that nobody else may read or write (mode 0600
// or stricter), as ssh asks of a private key: it holds credentials
// (statefile.CheckPrivate, the audit log's check). Errors name the file
// and line, never a value.
func addHeaderFile(h http.Header, path string) error {
	f, err := statefile.Open(path)
	if err != nil {
		return fmt.Errorf("--header-file: %w", err)
	}
	defer f.Close()
	if err := statefile.CheckPrivate(f); err != nil {
		return fmt.Errorf("--header-file %s: %w", path, err)
	}
	data, err := io.ReadAll(io.LimitReader(f, headerFileMax+1))
	if err != nil {
		return fmt.Errorf("--header-file %s: %v", path, err)
	}
	if len(data) > headerFileMax {
		return fmt.Errorf("--header-file %s: larger than %d KiB; it holds headers only", path, headerFileMax>>10)
	}
	for n, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSuffix(line, "\r")
		if t := strings.TrimSpace(line); t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		name, value, ok := strings.Cut(line, ":")
		name = strings.TrimSpace(name)
		if !ok || !validHeaderName(name) {
			return fmt.Errorf("%s:%d: give each header as \"Name: value\"", path, n+1)
		}
		if strings.ContainsAny(value, "\r\x00") {
			return fmt.Errorf("%s:%d (%s): the value has a control character", path, n+1, name)
		}
		h.Add(name, strings.TrimSpace(value))
	}
	return nil
}

// validHeaderName reports whether name is an HTTP field name (RFC 9110
// token).
func validHeaderName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}

// credentialName matches header names that carry credentials.
var credentialName = regexp.MustCompile(`(?i)^(authorization|proxy-authorization|cookie)$|token|key|secret|passw|auth|session|credential`)

// authScheme is an Authorization value's scheme word.
var authScheme = regexp.MustCompile(`(?i)^(bearer|basic|token|digest)$`)

// argvCredential reports whether the --header value raw (as written on
// the command line, before expansion) holds a credential written out: a
// credential header's value, a "Bearer …"/"Basic …" value, or any value
// with a word shaped like a secret (tokenShaped), whatever the header's
// name (a vendor's X-Honeycomb-Team or X-JFrog-Art-Api carries a key
// under a name no list holds). ${VAR} references and the scheme word are
// not counted: they are not the secret.
func argvCredential(name, raw string) bool {
	// What is written out: raw with each reference taken away (every
	// variable read as "").
	written, err := envexpand.Expand("", raw, func(string) (string, bool) { return "", true })
	if err != nil {
		written = raw
	}
	words := strings.Fields(written)
	if len(words) == 0 || (len(words) == 1 && authScheme.MatchString(words[0])) {
		return false
	}
	return credentialName.MatchString(name) || (len(words) >= 2 && authScheme.MatchString(words[0])) || tokenShaped(written)
}

// tokenShaped reports whether s holds a run of letters and digits shaped
// like a generated secret (an API key, a token, a JWT's part, a base64
// key's stretch between its '/' and '+'): at least 16 characters long,
// with letters and digits both, switching between the two at least twice,
// and as varied as random text (3 bits of entropy a character or more).
// What it leaves alone is what ordinary headers hold: words (application,
// AppleWebKit), versions and dates (120.0.0.0, 2026-12-01T09:30:00Z, each
// run short, or digits with a letter or two, or few distinct characters),
// short ids (X-Request-Id: abc123), a name with a year at its end
// (Release2024). A UUID, cut into short runs by its dashes, is left alone
// too.
func tokenShaped(s string) bool {
	for _, run := range strings.FieldsFunc(s, func(r rune) bool {
		return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9')
	}) {
		if len(run) < 16 {
			continue
		}
		switches, digits := 0, 0
		var count [128]int
		for i := 0; i < len(run); i++ {
			c := run[i]
			count[c]++
			isDigit := c <= '9'
			if isDigit {
				digits++
			}
			if i > 0 && isDigit != (run[i-1] <= '9') {
				switches++
			}
		}
		if digits == 0 || digits == len(run) || switches < 2 {
			continue
		}
		entropy := 0.0
		for _, n := range count {
			if n > 0 {
				p := float64(n) / float64(len(run))
				entropy -= p * math.Log2(p)
			}
		}
		if entropy >= 3 {
			return true
		}
	}
	return false
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
		return transport.SSE
	}
	return transport.Auto
}
