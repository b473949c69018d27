package bundle

import (
	"crypto/x509"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/bouncer-mcp/bouncer/internal/envexpand"
	"gopkg.in/yaml.v3"

	"github.com/bouncer-mcp/bouncer/internal/statefile"
	"github.com/bouncer-mcp/bouncer/internal/yamlstrict"
)

// AuditShip is one trust file's audit_ship section: where `bouncer audit
// ship` sends the audit log. It is read and checked here with the rest of
// the file, so a mistake is reported as FILE:LINE: KEY like any other; what
// the values mean is the ship package's business.
type AuditShip struct {
	File string // the trust file it is in
	Line int    // the line of its audit_ship key

	// OTLP is the collector's OTLP/HTTP base URL (http or https); the
	// signal paths /v1/logs and /v1/metrics go after it. Empty for none.
	OTLP     string
	OTLPLine int
	// Headers are sent with every OTLP request, as written: ${VAR} is
	// expanded by the shipper when it starts (from its environment, not
	// this one), by envexpand's rule; a malformed reference is refused
	// here, with the file's other mistakes.
	Headers     map[string]string
	HeaderLines map[string]int
	// Syslog is tcp://HOST:PORT or tls://HOST:PORT. Empty for none.
	Syslog     string
	SyslogLine int
	// CA is the PEM file of certificates that an https collector or a tls
	// syslog receiver must chain to, as an absolute path, and CAPEM its
	// bytes, read and checked when the trust file was loaded. Empty: the
	// system's roots.
	CA     string
	CAPEM  []byte
	CALine int
}

// AuditShip returns the audit_ship section of every trust file loaded that
// has one, the system file first. Like signers, a user's file adds
// destinations and cannot drop the team's.
func (t *Trust) AuditShip() []AuditShip {
	var out []AuditShip
	for _, l := range t.layers {
		if l.auditShip != nil {
			out = append(out, *l.auditShip)
		}
	}
	return out
}

var headerName = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")

// parseAuditShip checks the shape of audit_ship: a mapping of otlp, headers,
// syslog and ca, with at least one destination.
func parseAuditShip(file string, k, v *yaml.Node) (*AuditShip, error) {
	const known = "known: otlp, headers, syslog, ca"
	s := &AuditShip{File: file, Line: k.Line}
	bad := func(n *yaml.Node, key, format string, a ...any) error {
		return &Error{File: file, Line: n.Line, Key: key, Msg: fmt.Sprintf(format, a...)}
	}
	if v.Kind != yaml.MappingNode {
		return nil, bad(v, "audit_ship", "expected a mapping (%s), got %s", known, yamlstrict.Describe(v))
	}
	for i := 0; i+1 < len(v.Content); i += 2 {
		kk, vv := v.Content[i], v.Content[i+1]
		key := "audit_ship." + kk.Value
		switch kk.Value {
		case "otlp":
			val, err := str(file, key, vv)
			if err != nil {
				return nil, err
			}
			u, err := url.Parse(val)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
				return nil, bad(vv, key, "%q is not an http:// or https:// base URL such as https://otel.example.com:4318 (no query, fragment or user)", val)
			}
			s.OTLP, s.OTLPLine = strings.TrimRight(val, "/"), vv.Line
		case "syslog":
			val, err := str(file, key, vv)
			if err != nil {
				return nil, err
			}
			u, err := url.Parse(val)
			ok := err == nil && (u.Scheme == "tcp" || u.Scheme == "tls") && (u.Path == "" || u.Path == "/") &&
				u.RawQuery == "" && u.Fragment == "" && u.User == nil
			if ok {
				host, port, err := net.SplitHostPort(u.Host)
				ok = err == nil && host != "" && port != ""
			}
			if !ok {
				return nil, bad(vv, key, "%q is not tcp://HOST:PORT or tls://HOST:PORT", val)
			}
			s.Syslog, s.SyslogLine = u.Scheme+"://"+u.Host, vv.Line
		case "headers":
			if vv.Kind != yaml.MappingNode {
				return nil, bad(vv, key, "expected a mapping of header name to value, got %s", yamlstrict.Describe(vv))
			}
			s.Headers, s.HeaderLines = map[string]string{}, map[string]int{}
			for j := 0; j+1 < len(vv.Content); j += 2 {
				hk, hv := vv.Content[j], vv.Content[j+1]
				if !headerName.MatchString(hk.Value) {
					return nil, bad(hk, key, "%q is not an HTTP header name", hk.Value)
				}
				if hv.Kind != yaml.ScalarNode || hv.Tag != "!!str" {
					return nil, bad(hv, key+"."+hk.Value, "expected a string, got %s", yamlstrict.Describe(hv))
				}
				if strings.ContainsAny(hv.Value, "\r\n\x00") {
					return nil, bad(hv, key+"."+hk.Value, "a header value can't hold a line break")
				}
				if err := envexpand.Check("", hv.Value); err != nil {
					return nil, bad(hv, key+"."+hk.Value, "%v", err)
				}
				s.Headers[hk.Value], s.HeaderLines[hk.Value] = hv.Value, hv.Line
			}
		case "ca":
			val, err := str(file, key, vv)
			if err != nil {
				return nil, err
			}
			s.CA, s.CALine = val, vv.Line
		default:
			return nil, bad(kk, key, "unknown key (%s)", known)
		}
	}
	if s.OTLP == "" && s.Syslog == "" {
		return nil, bad(k, "audit_ship", "names no destination: set otlp (an OTLP/HTTP URL) or syslog (tcp:// or tls://)")
	}
	return s, nil
}

// loadAuditShip reads the ca file, relative to the trust file's directory.
func loadAuditShip(s *AuditShip, dir string) (*AuditShip, error) {
	if s == nil || s.CA == "" {
		return s, nil
	}
	out := *s
	p := s.CA
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	data, err := statefile.ReadFile(p, 1<<20)
	if err != nil {
		return nil, &Error{File: s.File, Line: s.CALine, Key: "audit_ship.ca", Msg: fmt.Sprintf("%s: %v", s.CA, err)}
	}
	if !x509.NewCertPool().AppendCertsFromPEM(data) {
		return nil, &Error{File: s.File, Line: s.CALine, Key: "audit_ship.ca", Msg: fmt.Sprintf("%s: holds no PEM certificate", s.CA)}
	}
	out.CA, out.CAPEM = p, data
	return &out, nil
}

// HeaderNames returns the header names in a stable order, for messages.
func (s *AuditShip) HeaderNames() []string {
	names := make([]string, 0, len(s.Headers))
	for n := range s.Headers {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
