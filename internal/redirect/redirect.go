// Package redirect holds the one rule for the HTTP redirects Bouncer
// follows on requests that carry the user's credentials (a remote MCP
// server's headers, an audit collector's token): they stay on the origin
// the user named. Go's client keeps custom headers on every redirect, and
// Authorization on one to the same host name on another port, so a
// redirect elsewhere would hand them to a host nobody chose; and a
// sandboxed proxy could not reach it anyway.
package redirect

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// Max is how many redirects one request follows.
const Max = 5

// SameOrigin returns an http.Client CheckRedirect that follows at most Max
// redirects, each to origin's scheme, host and port, and refuses any other
// with the error refuse makes for its target (say what to configure
// instead). The refused request is never sent.
//
// A redirect that would change the request's method is refused too,
// wherever it goes: Go's client answers a 301, 302 or 303 to a POST with a
// GET without the body, so the body (a tool call, a batch of audit lines)
// would reach nobody while the answer to the GET (a login page's 200)
// passed for the answer to it. Only 307 and 308, which keep the method and
// the body, are followed.
func SameOrigin(origin *url.URL, refuse func(to *url.URL) error) func(req *http.Request, via []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		if len(via) >= Max {
			return fmt.Errorf("more than %d redirects", Max)
		}
		if len(via) > 0 && req.Method != via[0].Method {
			code := 0
			if req.Response != nil {
				code = req.Response.StatusCode
			}
			return fmt.Errorf("%s %s answered %d, a redirect to %s that would send a %s without the request's body; nothing was sent there (configure the URL that takes the %s, or have the server redirect with 307 or 308)",
				via[0].Method, via[len(via)-1].URL.Redacted(), code, req.URL.Redacted(), req.Method, via[0].Method)
		}
		if !Same(origin, req.URL) {
			return refuse(req.URL)
		}
		return nil
	}
}

// Same reports whether a and b have one origin: scheme, host and port,
// the host without regard to case and the port filled in for http and
// https.
func Same(a, b *url.URL) bool {
	if a == nil || b == nil {
		return false
	}
	return key(a) == key(b)
}

func key(u *url.URL) string {
	scheme := strings.ToLower(u.Scheme)
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if port == "" {
		switch scheme {
		case "http":
			port = "80"
		case "https":
			port = "443"
		}
	}
	return scheme + "://" + net.JoinHostPort(host, port)
}
