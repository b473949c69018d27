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
//
// The server's kind is one kind: its name must answer with addresses of
// that kind only. Its operator controls its DNS, and could add a
// loopback answer beside the public one the session connects to; were
// each answer's kind admitted, that one record would open the machine
// and its network to every request of the sign-in. A name whose answers
// mix kinds therefore reaches public addresses only. The server's
// addresses are looked up once (NewGuard), or given as the session
// pinned them (NewGuardFor), so a second lookup that answers otherwise
// changes nothing.
type Guard struct {
	host string // the server's host name or address
	// Resolver looks the server's name up; nil is net.DefaultResolver.
	Resolver *net.Resolver

	once  sync.Once
	addrs []netip.Addr // given by NewGuardFor; else looked up
	kind  addrKind     // the kind of every server address; kindPublic when they mix
	mixed string       // the kinds, when they mix, for the refusal
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

// NewGuardFor is NewGuard for a server whose addresses were resolved
// already: the ones the session pinned, which the guard then judges by,
// looking nothing up.
func NewGuardFor(serverURL string, addrs []netip.Addr) *Guard {
	g := NewGuard(serverURL)
	g.addrs = append([]netip.Addr(nil), addrs...)
	return g
}

// serverKind works out, once, the kind of the server's addresses.
func (g *Guard) serverKind(ctx context.Context) (addrKind, error) {
	g.once.Do(func() {
		g.kind = kindPublic
		if g.host == "" {
			g.err = fmt.Errorf("no server host to compare addresses with")
			return
		}
		addrs := g.addrs
		switch ip, err := netip.ParseAddr(strings.Trim(g.host, "[]")); {
		case err == nil:
			addrs = []netip.Addr{ip}
		case g.host == "localhost" || strings.HasSuffix(g.host, ".localhost"):
			g.kind = kindLoopback
			return
		case addrs == nil:
			ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
			defer cancel()
			r := g.Resolver
			if r == nil {
				r = net.DefaultResolver
			}
			if addrs, err = r.LookupNetIP(ctx, "ip", g.host); err != nil {
				g.err = fmt.Errorf("resolving %s: %v", g.host, err)
				return
			}
		}
		seen := map[addrKind]bool{}
		for _, ip := range addrs {
			g.kind = kindOf(ip)
			seen[g.kind] = true
		}
		if len(seen) > 1 {
			var kinds []string
			for k := kindPublic; k <= kindNever; k++ {
				if seen[k] {
					kinds = append(kinds, k.String())
				}
			}
			g.kind, g.mixed = kindPublic, strings.Join(kinds, ", ")
		}
	})
	return g.kind, g.err
}

// Check says whether an OAuth request for the server may connect to ip,
// and if not, why.
func (g *Guard) Check(ctx context.Context, ip netip.Addr) error {
	k := kindOf(ip)
	if k == kindPublic {
		return nil
	}
	kind, err := g.serverKind(ctx)
	if err != nil {
		return fmt.Errorf("refused to connect to %s for the sign-in: %v", ip.Unmap(), err)
	}
	if k != kindNever && k == kind {
		return nil
	}
	if g.mixed != "" {
		return fmt.Errorf("refused to connect to %s for the sign-in: it is %s, and the server's name %s answers with addresses of several kinds (%s), so the sign-in reaches public addresses only: whoever runs that name's DNS must not make Bouncer reach this machine or its network",
			ip.Unmap(), k, g.host, g.mixed)
	}
	return fmt.Errorf("refused to connect to %s for the sign-in: it is %s and the server %s is not, and a server must not make Bouncer reach this machine or its network", ip.Unmap(), k, g.host)
}

// DialContext connects as a net.Dialer does, refusing (before the
// connect) any address Check refuses.
func (g *Guard) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	if _, err := g.serverKind(ctx); err != nil {
		// Resolved before the dial, so Control need not look names up.
		return nil, fmt.Errorf("refused to connect to %s for the sign-in: %v", addr, err)
	}
	d := &net.Dialer{
		Timeout:   30 * time.Second,
		KeepAlive: 30 * time.Second,
		Resolver:  g.Resolver,
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
