package bundle

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func selfSignedPEM(t *testing.T) []byte {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "team ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func TestAuditShipLoads(t *testing.T) {
	dir := t.TempDir()
	ca := selfSignedPEM(t)
	writeFile(t, filepath.Join(dir, "team-ca.pem"), ca)
	p := writeFile(t, filepath.Join(dir, "trust.yaml"), []byte(`require_signed: false
audit_ship:
  otlp: https://otel.example.com:4318/
  headers: {Authorization: "Bearer ${OTEL_TOKEN}", X-Team: blue}
  syslog: tls://logs.example.com:6514
  ca: team-ca.pem
`))
	tr, err := LoadTrust(p, "")
	if err != nil {
		t.Fatal(err)
	}
	got := tr.AuditShip()
	if len(got) != 1 {
		t.Fatalf("AuditShip() = %d sections, want 1", len(got))
	}
	s := got[0]
	if s.File != p || s.Line != 2 || s.OTLP != "https://otel.example.com:4318" || s.Syslog != "tls://logs.example.com:6514" {
		t.Fatalf("section = %+v", s)
	}
	if s.Headers["Authorization"] != "Bearer ${OTEL_TOKEN}" || s.Headers["X-Team"] != "blue" || s.HeaderLines["X-Team"] != 4 {
		t.Fatalf("headers = %v (lines %v); ${VAR} must be kept for the shipper to expand", s.Headers, s.HeaderLines)
	}
	if s.CA != filepath.Join(dir, "team-ca.pem") || string(s.CAPEM) != string(ca) {
		t.Fatalf("ca = %q, want it resolved next to the trust file and read", s.CA)
	}
	if strings.Join(s.HeaderNames(), ",") != "Authorization,X-Team" {
		t.Fatalf("HeaderNames = %v", s.HeaderNames())
	}

	// A file without the key has no section.
	p2 := writeFile(t, filepath.Join(dir, "plain.yaml"), []byte("require_signed: false\n"))
	tr, err = LoadTrust(p2, "")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(tr.AuditShip()); n != 0 {
		t.Fatalf("AuditShip() = %d sections for a file without audit_ship", n)
	}
}

func TestAuditShipSystemAndUser(t *testing.T) {
	dir := t.TempDir()
	sys := writeFile(t, filepath.Join(dir, "system.yaml"), []byte("audit_ship:\n  syslog: tcp://127.0.0.1:514\n"))
	old := systemTrustFile
	systemTrustFile = sys
	t.Cleanup(func() { systemTrustFile = old })
	user := writeFile(t, filepath.Join(dir, "user.yaml"), []byte("audit_ship:\n  otlp: http://127.0.0.1:4318\n"))
	tr, err := LoadTrust(user, "")
	if err != nil {
		t.Fatal(err)
	}
	got := tr.AuditShip()
	if len(got) != 2 || got[0].Syslog != "tcp://127.0.0.1:514" || got[1].OTLP != "http://127.0.0.1:4318" {
		t.Fatalf("AuditShip() = %+v, want the system section first, then the user's", got)
	}
}

func TestAuditShipErrors(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "notpem.txt"), []byte("hello\n"))
	cases := []struct{ name, body, want string }{
		{"not a mapping", "audit_ship: https://x\n", ":1: audit_ship: expected a mapping"},
		{"no destination", "audit_ship:\n  ca: x.pem\n", ":1: audit_ship: names no destination"},
		{"empty mapping", "audit_ship: {}\n", ":1: audit_ship: names no destination"},
		{"unknown key", "audit_ship:\n  otlp: http://x:4318\n  sislog: tcp://x:1\n", ":3: audit_ship.sislog: unknown key (known: otlp, headers, syslog, ca)"},
		{"otlp scheme", "audit_ship:\n  otlp: grpc://x:4317\n", `:2: audit_ship.otlp: "grpc://x:4317" is not an http:// or https:// base URL`},
		{"otlp query", "audit_ship:\n  otlp: http://x:4318/?a=b\n", ":2: audit_ship.otlp:"},
		{"syslog udp", "audit_ship:\n  syslog: udp://x:514\n", `:2: audit_ship.syslog: "udp://x:514" is not tcp://HOST:PORT or tls://HOST:PORT`},
		{"syslog no port", "audit_ship:\n  syslog: tcp://x\n", ":2: audit_ship.syslog:"},
		{"headers list", "audit_ship:\n  otlp: http://x:4318\n  headers: [a]\n", ":3: audit_ship.headers: expected a mapping"},
		{"header number", "audit_ship:\n  otlp: http://x:4318\n  headers: {X-N: 3}\n", ":3: audit_ship.headers.X-N: expected a string"},
		{"header name", "audit_ship:\n  otlp: http://x:4318\n  headers: {\"a b\": c}\n", `audit_ship.headers: "a b" is not an HTTP header name`},
		{"header reference", "audit_ship:\n  otlp: http://x:4318\n  headers: {Authorization: \"Bearer ${T:-s3cr3t}\"}\n", `:3: audit_ship.headers.Authorization: the "${...}" at byte 7 is not a variable reference`},
		{"header unclosed", "audit_ship:\n  otlp: http://x:4318\n  headers:\n    X-Key: ${T\n", `:4: audit_ship.headers.X-Key: the "${" at byte 0 has no closing "}"`},
		{"twice", "audit_ship:\n  otlp: http://x:4318\n  otlp: http://y:4318\n", ":3: audit_ship.otlp: set twice (first at line 2)"},
		{"missing ca", "audit_ship:\n  otlp: https://x:4318\n  ca: gone.pem\n", ":3: audit_ship.ca: gone.pem:"},
		{"ca not pem", "audit_ship:\n  otlp: https://x:4318\n  ca: notpem.txt\n", ":3: audit_ship.ca: notpem.txt: holds no PEM certificate"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := writeFile(t, filepath.Join(dir, "trust.yaml"), []byte(c.body))
			_, err := LoadTrust(p, "")
			if err == nil {
				t.Fatalf("loaded; want error containing %q", c.want)
			}
			if !strings.HasPrefix(err.Error(), p) || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "s3cr3t") {
				t.Fatalf("error %q, want it to start with the file and contain %q", err, c.want)
			}
		})
	}
}
