package dest

import (
	"net/url"
	"strings"

	whatwg "github.com/nlnwa/whatwg-url/url"
)

// The receiving side of a URL. Parse keeps a URL byte for byte and refuses
// what parsers read differently (userinfo, a backslash, a port written
// oddly), so nothing vouches for such a value. But a refusal says nothing
// about where the value goes, and taint must know that: a WHATWG parser
// (browsers, node's URL and fetch, the HTTP clients most servers use)
// reads "https://u:p@evil.example:443/./hook", "https:\\evil.example\hook"
// and "//evil.example/hook" alike, as https://evil.example/hook, and
// "http://3405803783/" as http://203.0.113.7/. webURL is that reading; it
// is only ever used to find more spellings for taint and to say that a
// value is a destination, never to vouch.

// networkBase is what a network-path reference ("//evil.example/x") is
// resolved against: a page or an API's base URL, whose scheme a WHATWG
// parser keeps and whose host it replaces.
const networkBase = "https://base.invalid/"

// webURL reads s as a WHATWG URL parser does: an absolute URL with a
// scheme, or a network-path reference (two slashes or backslashes, which
// replace the host of any base). Anything else (a bare host, a file name,
// a relative path) is no URL here; Parse reads those.
func webURL(s string) (*whatwg.Url, bool) {
	t := strings.Trim(s, surrounding)
	var (
		u   *whatwg.Url
		err error
	)
	switch {
	case networkPath(t):
		u, err = whatwg.ParseRef(networkBase, t)
	case hasScheme(t):
		u, err = whatwg.Parse(t)
	default:
		return nil, false
	}
	if err != nil {
		return nil, false
	}
	return u, true
}

// hasScheme reports whether s starts with a URL scheme and its colon.
func hasScheme(s string) bool {
	i := strings.IndexByte(s, ':')
	return i > 0 && validScheme(s[:i])
}

// webForm is where a URL goes, as its receiver reads it: the scheme, the
// host, a port other than the scheme's default, the path with its dot
// segments resolved, the query and the fragment; userinfo is left out (it
// names no other place). It is "" for a URL with no host.
func webForm(u *whatwg.Url) string {
	host := u.Hostname()
	if host == "" {
		return ""
	}
	if p := u.Port(); p != "" {
		host += ":" + p
	}
	return u.Scheme() + "://" + host + u.Pathname() + u.Search() + u.Hash()
}

// opaqueTarget is what a URL with no host names ("tel:+1 555-010-9999",
// "mailto:eve%40evil.example?subject=x", "sms:+15550109999"): its path,
// percent-decoded, without the query. ok is false when s is no such URL.
func opaqueTarget(u *whatwg.Url) (string, bool) {
	if u.Hostname() != "" {
		return "", false
	}
	p := u.Pathname()
	if d, err := url.PathUnescape(p); err == nil {
		p = d
	}
	return strings.Trim(p, surrounding), p != ""
}

// percentDecoded is s with its percent-escapes decoded, and whether there
// were any: "eve%40evil.example" is eve@evil.example to any server that
// puts it into a URL or a form.
func percentDecoded(s string) (string, bool) {
	if !strings.ContainsRune(s, '%') {
		return "", false
	}
	d, err := url.PathUnescape(s)
	if err != nil || d == s {
		return "", false
	}
	return d, true
}

// scpURL is the ssh URL that git, scp and rsync read an scp-like address
// as: "[user@]host:path", with no "://", no '/' before its first ':' and a
// dotted host, is ssh://[user@]host/path. ok is false for anything else
// ("Email:bob", "evil.example:8080/x" has a '/' after a port).
func scpURL(s string) (string, bool) {
	t := strings.Trim(s, surrounding)
	i := strings.IndexByte(t, ':')
	if i < 0 || strings.Contains(t, "://") || strings.ContainsAny(t[:i], "/ ") {
		return "", false
	}
	host, path := t[strings.LastIndexByte(t[:i], '@')+1:i], strings.TrimLeft(t[i+1:], "/")
	if d := strings.IndexByte(host, '.'); d <= 0 || d == len(host)-1 || path == "" {
		return "", false
	}
	return "ssh://" + t[:i] + "/" + path, true
}
