package oauth

import (
	"context"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

// dnsServer is a real DNS server on loopback (UDP), answering A and AAAA
// queries from answers: what a server's operator, who runs its name's
// DNS, chooses to answer.
func dnsServer(t *testing.T, answers map[string][]string) *net.Resolver {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			var p dnsmessage.Parser
			h, err := p.Start(buf[:n])
			if err != nil {
				continue
			}
			q, err := p.Question()
			if err != nil {
				continue
			}
			b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true})
			b.EnableCompression()
			b.StartQuestions()
			b.Question(q)
			b.StartAnswers()
			rh := dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 60}
			for _, a := range answers[strings.TrimSuffix(q.Name.String(), ".")] {
				ip := netip.MustParseAddr(a)
				switch {
				case ip.Is4() && q.Type == dnsmessage.TypeA:
					b.AResource(rh, dnsmessage.AResource{A: ip.As4()})
				case ip.Is6() && q.Type == dnsmessage.TypeAAAA:
					b.AAAAResource(rh, dnsmessage.AAAAResource{AAAA: ip.As16()})
				}
			}
			msg, err := b.Finish()
			if err == nil {
				pc.WriteTo(msg, from)
			}
		}
	}()
	addr := pc.LocalAddr().String()
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", addr)
	}}
}

// A server whose name answers with a public address and a loopback (or
// private) one gets public addresses only for its sign-in: the loopback
// listener is never connected to, by address or by name. A name that
// answers loopback alone is a server on loopback, and reaches it. The
// lookups go to a real DNS server on loopback.
func TestGuardMixedAnswers(t *testing.T) {
	port, accepted := countingListener(t)
	r := dnsServer(t, map[string][]string{
		"mixed.test":   {"203.0.113.7", "127.0.0.1"},
		"mixed6.test":  {"203.0.113.7", "::1", "127.0.0.1"},
		"private.test": {"203.0.113.7", "10.0.0.5"},
		"local.test":   {"127.0.0.1"},
		"public.test":  {"203.0.113.7"},
	})
	for _, c := range []struct {
		server, dial string
		refused      string // "" if allowed
	}{
		{"https://mixed.test/mcp", "127.0.0.1:" + port, "answers with addresses of several kinds (a public address, a loopback address)"},
		{"https://mixed.test/mcp", "local.test:" + port, "several kinds"},
		{"https://mixed6.test/mcp", "127.0.0.1:" + port, "several kinds"},
		{"https://private.test/mcp", "10.255.255.1:80", "several kinds (a public address, a private address)"},
		{"https://public.test/mcp", "127.0.0.1:" + port, "it is a loopback address and the server public.test is not"},
		{"http://local.test/mcp", "127.0.0.1:" + port, ""},
		{"http://local.test/mcp", "local.test:" + port, ""},
	} {
		before := accepted.Load()
		g := NewGuard(c.server)
		g.Resolver = r
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		conn, err := g.DialContext(ctx, "tcp", c.dial)
		cancel()
		if conn != nil {
			conn.Close()
		}
		if c.refused == "" {
			if err != nil {
				t.Errorf("%s -> %s: %v", c.server, c.dial, err)
			}
			for deadline := time.Now().Add(2 * time.Second); accepted.Load() == before && time.Now().Before(deadline); {
				time.Sleep(time.Millisecond)
			}
			if accepted.Load() == before {
				t.Errorf("%s -> %s: allowed, but the listener saw no connection", c.server, c.dial)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.refused) {
			t.Errorf("%s -> %s: %v, want a refusal with %q", c.server, c.dial, err, c.refused)
		}
		time.Sleep(20 * time.Millisecond)
		if accepted.Load() != before {
			t.Errorf("%s -> %s: refused, but the listener was connected to", c.server, c.dial)
		}
	}

	// The session's pinned addresses decide, not a later lookup: a name
	// pinned at a public address that now answers loopback is still a
	// public server.
	g := NewGuardFor("https://local.test/mcp", []netip.Addr{netip.MustParseAddr("203.0.113.7")})
	g.Resolver = r
	if err := g.Check(context.Background(), netip.MustParseAddr("127.0.0.1")); err == nil || !strings.Contains(err.Error(), "the server local.test is not") {
		t.Errorf("pinned public, answering loopback now: %v", err)
	}
}
