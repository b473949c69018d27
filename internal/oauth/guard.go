package oauth

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"time"
)

// addrKind is what an IP address reaches, as the guard sees it.
type addrKind int

const (
	kindPublic    addrKind = iota
	kindLoopback           // 127/8, ::1
	kindPrivate            // RFC 1918, RFC 4193 (fc00::/7), RFC 6598 (100.64/10)
	kindLinkLocal          // 169.254/16 (the cloud metadata endpoint), fe80::/10
	kindNever              // unspecified (0.0.0.0 reaches this machine), multicast, invalid
)

var cgnat = netip.MustParsePrefix("100.64.0.0/10")

func kindOf(ip netip.Addr) addrKind {
	ip = ip.Unmap()
	switch {
	case !ip.IsValid() || ip.IsUnspecified() || ip.IsMulticast():
		return kindNever
	case ip.IsLoopback():
		return kindLoopback
	case ip.IsLinkLocalUnicast():
		return kindLinkLocal
	case ip.IsPrivate() || cgnat.Contains(ip):
		return kindPrivate
	}
	return kindPublic
}

func (k addrKind) String() string {
	switch k {
	case kindLoopback:
		return "a loopback address"
	case kindPrivate:
		return "a private address"
	case kindLinkLocal:
		return "a link-local address"
	case kindNever:
		return "an unspecified or multicast address"
	}
	return "a public address"
}

// Guard decides which addresses the OAuth requests for one server may
// connect to. Discovery follows URLs the server and its metadata name,
// and redirects they answer with: a hostile server could point them at
// the cloud metadata endpoint or the local network. So a connection goes
// to a public address, or to one of the kind the server's own host has
// (a server on loopback may have its authorization server on loopback;
// one on 10.x, on a private address), never to an unspecified or
// multicast one. The check is made on the address actually dialled
// (net.Dialer.Control), after any name lookup, so neither a redirect nor
// a name that resolves to a private address gets past it, and a refused
// address is never connected to.
type Guard struct {
	host string // the server's host name or address

	once  sync.Once
	kinds map[addrKind]bool // the kinds of the server's own addresses
	err   error
}

// NewGuard returns the Guard of the server at serverURL. The server's
// host is resolved on first use.
func NewGuard(serverURL string) *Guard {
	u, err := url.Parse(serverURL)
	g := &Guard{}
	if err == nil {
		g.host = strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	}
	return g
}

// serverKinds resolves the server's host once.
func (g *Guard) serverKinds(ctx context.Context) (map[addrKind]bool, error) {
	g.once.Do(func() {
		g.kinds = map[addrKind]bool{}
		if g.host == "" {
			g.err = fmt.Errorf("no server host to compare addresses with")
			return
		}
		if ip, err := netip.ParseAddr(strings.Trim(g.host, "[]")); err == nil {
			g.kinds[kindOf(ip)] = true
			return
		}
		if g.host == "localhost" || strings.HasSuffix(g.host, ".localhost") {
			g.kinds[kindLoopback] = true
			return
		}
		ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		defer cancel()
		ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", g.host)
		if err != nil {
			g.err = fmt.Errorf("resolving %s: %v", g.host, err)
			return
		}
		for _, ip := range ips {
			g.kinds[kindOf(ip)] = true
		}
	})
	return g.kinds, g.err
}

// Check says whether an OAuth request for the server may connect to ip,
// and if not, why.
func (g *Guard) Check(ctx context.Context, ip netip.Addr) error {
	k := kindOf(ip)
	if k == kindPublic {
		return nil
	}
	kinds, err := g.serverKinds(ctx)
	if err != nil {
		return fmt.Errorf("refused to connect to %s for the sign-in: %v", ip.Unmap(), err)
	}
	if k != kindNever && kinds[k] {
		return nil
	}
	return fmt.Errorf("refused to connect to %s for the sign-in: it is %s and the server %s is not, and a server must not make Bouncer reach this machine or its network", ip.Unmap(), k, g.host)
}

// DialContext connects as a net.Dialer does, refusing (before the
// connect) any address Check refuses.
func (g *Guard) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	if _, err := g.serverKinds(ctx); err != nil {
		// Resolved before the dial, so Control need not look names up.
		return nil, fmt.Errorf("refused to connect to %s for the sign-in: %v", addr, err)
	}
	d := &net.Dialer{
		Timeout:   30 * time.Second,
		KeepAlive: 30 * time.Second,
		Control: func(network, address string, _ syscall.RawConn) error {
			host, _, err := net.SplitHostPort(address)
			if err != nil {
				return err
			}
			ip, err := netip.ParseAddr(host)
			if err != nil {
				return fmt.Errorf("refused to connect to %q for the sign-in: not an IP address", address)
			}
			return g.Check(ctx, ip)
		},
	}
	return d.DialContext(ctx, network, addr)
}
