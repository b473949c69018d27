package oauth

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestKindOf(t *testing.T) {
	for _, c := range []struct {
		ip   string
		want addrKind
	}{
		{"93.184.215.14", kindPublic},
		{"2606:4700::1111", kindPublic},
		{"127.0.0.1", kindLoopback},
		{"127.9.9.9", kindLoopback},
		{"::1", kindLoopback},
		{"10.1.2.3", kindPrivate},
		{"172.16.0.1", kindPrivate},
		{"192.168.1.1", kindPrivate},
		{"100.64.0.1", kindPrivate},
		{"fd00::1", kindPrivate},
		{"169.254.169.254", kindLinkLocal},
		{"::ffff:169.254.169.254", kindLinkLocal},
		{"fe80::1", kindLinkLocal},
		{"0.0.0.0", kindNever},
		{"::", kindNever},
		{"224.0.0.1", kindNever},
		{"ff02::1", kindNever},
	} {
		if got := kindOf(netip.MustParseAddr(c.ip)); got != c.want {
			t.Errorf("%s: %v, want %v", c.ip, got, c.want)
		}
	}
}

// countingListener is a loopback TCP listener that counts the connections
// it accepts: what a refused dial must never reach. It returns its port.
func countingListener(t *testing.T) (string, *atomic.Int32) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	accepted := new(atomic.Int32)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port, accepted
}

// The guard refuses an address of another kind than the server's before
// connecting to it, and lets through the server's own kind and public
// addresses. Against the kernel's real connect: a loopback listener
// counts the connections it was sent.
func TestGuardDial(t *testing.T) {
	port, accepted := countingListener(t)
	for _, c := range []struct {
		server, dial, refused string // refused: the kind named, "" if allowed
	}{
		{"http://127.0.0.1:" + port + "/mcp", "127.0.0.1:" + port, ""},
		{"http://localhost:" + port + "/mcp", "127.0.0.1:" + port, ""},
		{"http://127.0.0.1:" + port + "/mcp", "169.254.169.254:80", "link-local"},
		{"http://127.0.0.1:" + port + "/mcp", "[::ffff:169.254.169.254]:80", "link-local"},
		{"http://127.0.0.1:" + port + "/mcp", "10.255.255.1:80", "private"},
		{"http://127.0.0.1:" + port + "/mcp", "0.0.0.0:" + port, "unspecified"},
		// A server on a public address has no business on loopback:
		// the listener must see no connection.
		{"https://203.0.113.7/mcp", "127.0.0.1:" + port, "loopback"},
		{"https://203.0.113.7/mcp", "192.168.0.1:443", "private"},
		{"http://10.0.0.5/mcp", "10.255.255.1:" + port, ""}, // allowed: it is not refused (the connect may fail)
	} {
		before := accepted.Load()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		start := time.Now()
		conn, err := NewGuard(c.server).DialContext(ctx, "tcp", c.dial)
		cancel()
		if conn != nil {
			conn.Close()
		}
		switch {
		case c.refused == "" && err != nil && strings.Contains(err.Error(), "refused to connect"):
			t.Errorf("%s -> %s: refused: %v", c.server, c.dial, err)
		case c.refused != "" && (err == nil || !strings.Contains(err.Error(), "refused to connect") || !strings.Contains(err.Error(), c.refused)):
			t.Errorf("%s -> %s: err = %v, want a refusal naming %s", c.server, c.dial, err, c.refused)
		case c.refused != "" && time.Since(start) > time.Second:
			t.Errorf("%s -> %s: the refusal took %v: it tried to connect", c.server, c.dial, time.Since(start))
		}
		if c.refused == "" && err == nil {
			// Wait for the listener to count this connection, so a late
			// accept is not charged to the next case.
			for deadline := time.Now().Add(2 * time.Second); accepted.Load() == before && time.Now().Before(deadline); {
				time.Sleep(time.Millisecond)
			}
		}
		if c.refused != "" {
			time.Sleep(20 * time.Millisecond)
			if accepted.Load() != before {
				t.Errorf("%s -> %s: refused, but the listener was connected to", c.server, c.dial)
			}
		}
	}
}

// The unauthenticated probe of a server on loopback that redirects it to
// the cloud metadata endpoint, a private address or another origin is
// refused before any connection there, and no sign-in starts.
func TestProbeRedirectRefused(t *testing.T) {
	var hits atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+"http://"+r.Host+`/prm"`)
		w.WriteHeader(http.StatusUnauthorized)
	}))
	defer other.Close()
	for _, target := range []string{
		"http://169.254.169.254/latest/meta-data/",
		"http://10.255.255.1:8080/mcp",
		other.URL + "/mcp",
	} {
		t.Run(target, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, target, http.StatusTemporaryRedirect)
			}))
			defer srv.Close()
			f := newFixture(t)
			cfg := f.config()
			cfg.ServerURL = srv.URL + "/mcp"
			a := f.authorizer(cfg)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			start := time.Now()
			err := a.Ensure(ctx)
			if err == nil || !strings.Contains(err.Error(), "refused") {
				t.Fatalf("Ensure = %v, want the redirect refused", err)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("took %v: it tried to connect", d)
			}
			if hits.Load() != 0 || len(f.openedURLs()) != 0 {
				t.Fatalf("the other origin was asked %d times, the browser opened %d", hits.Load(), len(f.openedURLs()))
			}
		})
	}
}
