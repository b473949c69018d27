package transport

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"time"
)

// Pins is the set of origins ("host:port") a sandboxed proxy may dial, each
// with the addresses its name resolved to before the sandbox was applied.
// Once sandboxed, the proxy can't resolve names (it can open no UDP socket
// and read no /etc/resolv.conf), and Landlock only knows ports: Pins is
// what keeps it to the hosts it was given.
type Pins struct {
	// Check, if set, vets each address a name resolves to: Add refuses
	// to pin one it refuses (an OAuth token endpoint that resolves to a
	// private address, say).
	Check func(ctx context.Context, addr netip.Addr) error

	mu    sync.Mutex
	addrs map[string][]netip.Addr // by normalized host:port
}

// NewPins returns an empty set.
func NewPins() *Pins { return &Pins{addrs: map[string][]netip.Addr{}} }

// Add resolves hostport's name (now, before the sandbox) and pins its
// addresses.
func (p *Pins) Add(ctx context.Context, hostport string) error {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return fmt.Errorf("%q is not host:port: %w", hostport, err)
	}
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a.Unmap()}
	} else {
		ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		defer cancel()
		found, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		if err != nil {
			return fmt.Errorf("resolving %s: %w; check the name and the network", host, err)
		}
		for _, a := range found {
			addrs = append(addrs, a.Unmap())
		}
	}
	if len(addrs) == 0 {
		return fmt.Errorf("resolving %s: no addresses", host)
	}
	if p.Check != nil {
		for _, a := range addrs {
			if err := p.Check(ctx, a); err != nil {
				return err
			}
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	k := pinKey(host, port)
	p.addrs[k] = append(p.addrs[k], addrs...)
	return nil
}

// Ports lists the TCP ports of the pinned origins, for Landlock.
func (p *Pins) Ports() []uint16 {
	p.mu.Lock()
	defer p.mu.Unlock()
	seen := map[uint16]bool{}
	var out []uint16
	for k := range p.addrs {
		_, port, _ := net.SplitHostPort(k)
		var n uint16
		if _, err := fmt.Sscan(port, &n); err == nil && !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}

// Addrs returns the addresses pinned for hostport, in the order they
// resolved: what the session connects to (the OAuth guard judges the
// server's kind by them).
func (p *Pins) Addrs(hostport string) []netip.Addr {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]netip.Addr(nil), p.addrs[pinKey(host, port)]...)
}

func pinKey(host, port string) string {
	return net.JoinHostPort(strings.ToLower(strings.TrimSuffix(host, ".")), port)
}

// Dial connects to a pinned origin through its pinned addresses, in the
// order they resolved; any other origin is refused. It never looks a name
// up, and never uses MPTCP, which Landlock does not see.
func (p *Pins) Dial(ctx context.Context, network, hostport string) (net.Conn, error) {
	if network != "tcp" && network != "tcp4" && network != "tcp6" {
		return nil, fmt.Errorf("dialing %s over %s: only TCP is allowed", hostport, network)
	}
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	addrs := p.addrs[pinKey(host, port)]
	p.mu.Unlock()
	if len(addrs) == 0 {
		return nil, fmt.Errorf("dialing %s: not the remote server's origin (or another bouncer was told to reach), so the sandboxed proxy does not connect to it", hostport)
	}
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	d.SetMultipathTCP(false)
	var errs []error
	for _, a := range addrs {
		c, err := d.DialContext(ctx, "tcp", net.JoinHostPort(a.String(), port))
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, errors.Join(errs...)
}
