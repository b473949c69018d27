package ship

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bouncer-mcp/bouncer/internal/audit"
	"github.com/bouncer-mcp/bouncer/internal/bundle"
	"github.com/bouncer-mcp/bouncer/internal/testsupport/need"
)

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func waitListening(t *testing.T, addr string, proc *exec.Cmd, logFile string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) || proc.ProcessState != nil {
			out, _ := os.ReadFile(logFile)
			t.Fatalf("%s did not listen on %s: %v\n%s", proc.Path, addr, err, out)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// rsyslogd is a real rsyslog daemon on a loopback port, writing each
// message it receives to out, one line each: PRI, APP-NAME, MSGID,
// TIMESTAMP, HOSTNAME, STRUCTURED-DATA and MSG, separated by tabs.
type rsyslogd struct {
	t    *testing.T
	dir  string
	port int
	out  string
	conf string
	cmd  *exec.Cmd
}

type tlsFiles struct{ ca, cert, key string }

// newRsyslogd starts rsyslogd; with raw, it writes what arrived as it
// arrived: rsyslog's own escaping of control characters on receipt is off,
// so a newline on the wire is a newline in its file.
func newRsyslogd(t *testing.T, tlsf *tlsFiles, raw ...bool) *rsyslogd {
	t.Helper()
	bin := need.Program(t, "rsyslogd", "apt-get install rsyslog", "/usr/sbin/rsyslogd", "/sbin/rsyslogd")
	dir := t.TempDir()
	r := &rsyslogd{t: t, dir: dir, port: freePort(t), out: filepath.Join(dir, "received.log"), conf: filepath.Join(dir, "rsyslog.conf")}
	var conf strings.Builder
	fmt.Fprintf(&conf, "global(workDirectory=%q maxMessageSize=\"1m\"", dir)
	if tlsf != nil {
		fmt.Fprintf(&conf, " defaultNetstreamDriver=\"ossl\" defaultNetstreamDriverCAFile=%q defaultNetstreamDriverCertFile=%q defaultNetstreamDriverKeyFile=%q", tlsf.ca, tlsf.cert, tlsf.key)
	}
	if len(raw) > 0 && raw[0] {
		conf.WriteString(` parser.escapeControlCharactersOnReceive="off"`)
	}
	conf.WriteString(")\n")
	if tlsf != nil {
		conf.WriteString("module(load=\"imtcp\" streamDriver.name=\"ossl\" streamDriver.mode=\"1\" streamDriver.authMode=\"anon\")\n")
	} else {
		conf.WriteString("module(load=\"imtcp\")\n")
	}
	fmt.Fprintf(&conf, "input(type=\"imtcp\" address=\"127.0.0.1\" port=\"%d\" ruleset=\"r\")\n", r.port)
	conf.WriteString("template(name=\"t\" type=\"string\" string=\"%pri%\\t%app-name%\\t%msgid%\\t%timereported:::date-rfc3339%\\t%hostname%\\t%structured-data%\\t%msg%\\n\")\n")
	fmt.Fprintf(&conf, "ruleset(name=\"r\") { action(type=\"omfile\" file=%q template=\"t\") }\n", r.out)
	if err := os.WriteFile(r.conf, []byte(conf.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	r.cmd = exec.Command(bin, "-n", "-f", r.conf, "-i", filepath.Join(dir, "rsyslogd.pid"))
	r.start()
	t.Cleanup(r.stop)
	return r
}

func (r *rsyslogd) start() {
	r.t.Helper()
	logFile := filepath.Join(r.dir, "rsyslogd.out")
	lf, err := os.OpenFile(logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		r.t.Fatal(err)
	}
	defer lf.Close()
	r.cmd = exec.Command(r.cmd.Path, r.cmd.Args[1:]...)
	r.cmd.Stdout, r.cmd.Stderr = lf, lf
	if err := r.cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	go r.cmd.Wait()
	waitListening(r.t, r.addr(), r.cmd, logFile)
}

func (r *rsyslogd) stop() {
	if r.cmd == nil || r.cmd.Process == nil {
		return
	}
	r.cmd.Process.Signal(syscall.SIGTERM)
	deadline := time.Now().Add(10 * time.Second)
	for r.cmd.Process.Signal(syscall.Signal(0)) == nil && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	r.cmd.Process.Kill()
	// The pid file must go, or the next start may refuse.
	os.Remove(filepath.Join(r.dir, "rsyslogd.pid"))
}

func (r *rsyslogd) addr() string { return fmt.Sprintf("127.0.0.1:%d", r.port) }

type received struct {
	pri, app, msgid, ts, host, sd, msg string
	hash                               string
}

var sdHash = regexp.MustCompile(`^\[bouncer@32473 line_hash="(sha256:[0-9a-f]{64})"`)

func (r *rsyslogd) received() []received {
	data, err := os.ReadFile(r.out)
	if err != nil {
		return nil
	}
	var out []received
	for _, l := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		f := strings.SplitN(l, "\t", 7)
		if len(f) != 7 {
			continue
		}
		rc := received{pri: f[0], app: f[1], msgid: f[2], ts: f[3], host: f[4], sd: f[5], msg: f[6]}
		if m := sdHash.FindStringSubmatch(rc.sd); m != nil {
			rc.hash = m[1]
		}
		out = append(out, rc)
	}
	return out
}

// checkReceived checks that rsyslog got exactly the log's lines, in order
// (each once, or at least once when dups is allowed: then the copies are
// dropped by their hash, as a receiver would), each with its hash.
func checkReceived(t *testing.T, got []received, log [][]byte, dups bool) {
	t.Helper()
	seen := map[string]bool{}
	var msgs []string
	for _, g := range got {
		if g.app != "bouncer" {
			t.Fatalf("APP-NAME %q", g.app)
		}
		if g.hash == "" || g.hash != audit.Hash([]byte(g.msg)) {
			t.Fatalf("structured data %q does not carry the hash of MSG %q", g.sd, g.msg)
		}
		if seen[g.hash] {
			if !dups {
				t.Fatalf("line %q arrived twice", g.msg)
			}
			continue
		}
		seen[g.hash] = true
		msgs = append(msgs, g.msg)
	}
	if want := stringsOf(log); !slices.Equal(msgs, want) {
		t.Fatalf("rsyslog got %d distinct lines, want the log's %d in order\nfirst got:  %.200q\nfirst want: %.200q", len(msgs), len(want), first(msgs), first(want))
	}
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}

func syslogDests(t *testing.T, url string, ca []byte) []Destination {
	t.Helper()
	ds, err := Destinations([]bundle.AuditShip{{File: "trust.yaml", Syslog: url, CAPEM: ca}}, os.LookupEnv, "test-host")
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

func TestRsyslogTCP(t *testing.T) {
	rs := newRsyslogd(t, nil)
	dir := t.TempDir()
	l := newTestLog(t, dir)
	l.add(25)
	// A line far longer than rsyslog's default 8 KiB message (the test's
	// rsyslog allows 1 MiB, as docs/audit.md tells a receiver to).
	l.log.Append(audit.Entry{Server: "s", Tool: "t", Args: []byte(`{"body":"` + strings.Repeat("long ", 10000) + `"}`), Verdict: "allow", Rule: "default"})
	l.add(5)
	var n notes
	res := Run(context.Background(), Config{Log: l.path, StateDir: dir, Dests: syslogDests(t, "tcp://"+rs.addr(), nil), Once: true, MaxLines: 7, Logf: n.logf})
	if res[0].Err != nil || res[0].Shipped != 31 {
		t.Fatalf("%+v; %s", res[0], n.String())
	}
	// Delivered means read: rsyslog has all of it; its file may lag.
	waitFor(t, "rsyslog to write 31 lines", 10*time.Second, func() bool { return len(rs.received()) >= 31 })
	got := rs.received()
	checkReceived(t, got, readLines(t, l.path), false)
	g := got[1]
	if g.host != "test-host" || g.msgid == "" || !strings.HasPrefix(g.ts, "2026-12-01T09:30:") {
		t.Fatalf("header fields: %+v", g)
	}
	if !strings.Contains(g.sd, ` server="`) || !strings.Contains(g.sd, ` rule="`) {
		t.Fatalf("structured data %q", g.sd)
	}
}

// Names with control characters reach rsyslog as one message each, with
// the characters escaped where a reader sees them, even by a receiver that
// escapes nothing itself; MSG is the line's exact text.
func TestRsyslogControlCharacters(t *testing.T) {
	rs := newRsyslogd(t, nil, true)
	dir := t.TempDir()
	l := newTestLog(t, dir)
	for _, e := range []audit.Entry{
		{Server: "mail", Tool: "send\nmail\r\nX-Injected: 1", Verdict: "deny", Rule: "sink"},
		{Server: "tab\there", Tool: "nul\x00del\x7fnel\u0085ls\u2028rlo\u202e", Verdict: "ask", Rule: "sink"},
		{Server: `a\n"]`, Tool: "plain", Verdict: "allow", Rule: "default"},
	} {
		e.Args = []byte(`{}`)
		if err := l.log.Append(e); err != nil {
			t.Fatal(err)
		}
	}
	var n notes
	res := Run(context.Background(), Config{Log: l.path, StateDir: dir, Dests: syslogDests(t, "tcp://"+rs.addr(), nil), Once: true, Logf: n.logf})
	if res[0].Err != nil || res[0].Shipped != 3 {
		t.Fatalf("%+v; %s", res[0], n.String())
	}
	var data []byte
	waitFor(t, "rsyslog to write 3 lines", 10*time.Second, func() bool {
		data, _ = os.ReadFile(rs.out)
		return strings.Count(string(data), "\n") >= 3
	})
	time.Sleep(200 * time.Millisecond) // for lines of a message split apart
	data, _ = os.ReadFile(rs.out)
	if lines := strings.Count(string(data), "\n"); lines != 3 {
		t.Fatalf("rsyslog wrote %d lines for 3 messages:\n%s", lines, data)
	}
	got := rs.received()
	checkReceived(t, got, readLines(t, l.path), false)
	for i, want := range []string{
		`server="mail" tool="send\nmail\r\nX-Injected: 1" verdict="deny"`,
		`server="tab\there" tool="nul\u0000del\u007fnel\u0085ls\u2028rlo\u202e" verdict="ask"`,
		`server="a\\n\"\]" tool="plain"`,
	} {
		if !strings.Contains(got[i].sd, want) {
			t.Fatalf("structured data %q, want it to hold %q", got[i].sd, want)
		}
	}
}

// TestRsyslogDownAndBack stops the receiver mid-ship: nothing is lost, and
// the copies of lines sent twice are recognised by their hash.
func TestRsyslogDownAndBack(t *testing.T) {
	rs := newRsyslogd(t, nil)
	dir := t.TempDir()
	l := newTestLog(t, dir)
	l.add(20)
	var n notes
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan []Result)
	go func() {
		done <- Run(ctx, Config{Log: l.path, StateDir: dir, Dests: syslogDests(t, "tcp://"+rs.addr(), nil), MaxLines: 3,
			Poll: 20 * time.Millisecond, MinBackoff: 50 * time.Millisecond, MaxBackoff: 200 * time.Millisecond, Logf: n.logf})
	}()
	waitFor(t, "the first lines", 10*time.Second, func() bool { return len(rs.received()) >= 20 })
	rs.stop()
	l.add(15)
	waitFor(t, "the shipper to notice", 10*time.Second, func() bool { return strings.Contains(n.String(), "trying again") })
	rs.start()
	waitFor(t, "every line", 20*time.Second, func() bool { return len(rs.received()) >= 35 })
	cancel()
	<-done
	checkReceived(t, rs.received(), readLines(t, l.path), true)
	if !strings.Contains(n.String(), "delivered again") {
		t.Fatalf("notes: %s", n.String())
	}
}

func TestRsyslogTLS(t *testing.T) {
	if _, err := os.Stat("/usr/lib/x86_64-linux-gnu/rsyslog/lmnsd_ossl.so"); err != nil {
		matches, _ := filepath.Glob("/usr/lib/*/rsyslog/lmnsd_ossl.so")
		if len(matches) == 0 {
			need.Missing(t, "rsyslog's OpenSSL driver (lmnsd_ossl.so)", "apt-get install rsyslog-openssl")
		}
	}
	dir := t.TempDir()
	ca, files := testPKI(t, dir)
	rs := newRsyslogd(t, files)
	l := newTestLog(t, dir)
	l.add(12)
	var n notes
	// One batch, so one TLS session. rsyslog 8.2302's OpenSSL driver
	// (Debian 12) loses or repeats a message when several short sessions
	// arrive one after another: in 120 runs with batches of 5 it did so 4
	// times, and never with one session or over plain TCP. That is the
	// receiver's (docs/audit.md says so); batches over TLS are checked
	// exactly against a Go receiver in TestSyslogTLSBatches.
	res := Run(context.Background(), Config{Log: l.path, StateDir: dir, Dests: syslogDests(t, "tls://"+rs.addr(), ca), Once: true, Logf: n.logf})
	if res[0].Err != nil || res[0].Shipped != 12 {
		t.Fatalf("%+v; %s", res[0], n.String())
	}
	waitFor(t, "rsyslog to write 12 lines", 10*time.Second, func() bool { return len(rs.received()) >= 12 })
	checkReceived(t, rs.received(), readLines(t, l.path), false)

	// Without the team's CA the receiver is not trusted: nothing is sent.
	other := t.TempDir()
	res = Run(context.Background(), Config{Log: l.path, StateDir: other, Dests: syslogDests(t, "tls://"+rs.addr(), nil), Once: true, MinBackoff: time.Millisecond, Logf: n.logf})
	if res[0].Err == nil || !strings.Contains(res[0].Err.Error(), "certificate") {
		t.Fatalf("an untrusted receiver: %+v", res[0])
	}
}

// testPKI writes a CA and a certificate for 127.0.0.1 signed by it.
func testPKI(t *testing.T, dir string) ([]byte, *tlsFiles) {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test team CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		KeyUsage: x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, _ := x509.MarshalPKCS8PrivateKey(key)
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	f := &tlsFiles{ca: filepath.Join(dir, "ca.pem"), cert: filepath.Join(dir, "cert.pem"), key: filepath.Join(dir, "key.pem")}
	os.WriteFile(f.ca, caPEM, 0o600)
	os.WriteFile(f.cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(f.key, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600)
	return caPEM, f
}
