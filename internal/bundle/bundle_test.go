package bundle

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/testing/ca"

	"github.com/bouncer-mcp/bouncer/internal/testsupport/need"
)

const policyYAML = "tools:\n  send_email:\n    exfiltrating: true\n    sink_params: [to]\n"

// loadTrustFile writes a trust file into dir and loads it as --trust.
func loadTrustFile(t *testing.T, dir, body string) *Trust {
	t.Helper()
	p := writeFile(t, filepath.Join(dir, "trust.yaml"), []byte(body))
	tr, err := LoadTrust(p, "")
	if err != nil {
		t.Fatalf("LoadTrust: %v", err)
	}
	return tr
}

func TestKeyed(t *testing.T) {
	ec, ed, other := newECKey(t), newEdKey(t), newECKey(t)
	cases := []struct {
		name    string
		prepare func(t *testing.T, dir, file string) // signs (or not) file
		want    string                               // "" = verifies; else substring of the error
		signer  string
	}{
		{"ecdsa valid", func(t *testing.T, dir, f string) { signWith(t, ec, f) }, "", "key team.pub"},
		{"ed25519 valid", func(t *testing.T, dir, f string) { signWith(t, ed, f) }, "", "key ed.pub"},
		{"tampered file", func(t *testing.T, dir, f string) {
			signWith(t, ec, f)
			writeFile(t, f, []byte(policyYAML+"  # edited\n"))
		}, "verifies with none of the 2 keys", ""},
		{"one byte appended", func(t *testing.T, dir, f string) {
			signWith(t, ec, f)
			writeFile(t, f, []byte(policyYAML+"\n"))
		}, "verifies with none", ""},
		{"wrong key", func(t *testing.T, dir, f string) { signWith(t, other, f) }, "verifies with none", ""},
		{"missing bundle", func(t *testing.T, dir, f string) {}, "no bundle", ""},
		{"bundle of another file", func(t *testing.T, dir, f string) {
			g := writeFile(t, filepath.Join(dir, "other.yaml"), []byte("tools: {}\n"))
			signWith(t, ec, g)
			if err := os.Rename(BundlePath(g), BundlePath(f)); err != nil {
				t.Fatal(err)
			}
		}, "verifies with none", ""},
		{"garbage bundle", func(t *testing.T, dir, f string) {
			writeFile(t, BundlePath(f), []byte("{\"mediaType\": 1}"))
		}, "not a Sigstore bundle", ""},
		{"empty bundle", func(t *testing.T, dir, f string) { writeFile(t, BundlePath(f), nil) }, "not a Sigstore bundle", ""},
		{"keyless bundle, only keys trusted", func(t *testing.T, dir, f string) {
			newKeyless(t, dir, false).sign(t, f, testSubject, testIssuer)
		}, "lists no identities", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, "team.pub"), ec.pub)
			writeFile(t, filepath.Join(dir, "ed.pub"), ed.pub)
			tr := loadTrustFile(t, dir, "require_signed: true\nkeys:\n  - team.pub\n  - ed.pub\n")
			f := writeFile(t, filepath.Join(dir, "policy.yaml"), []byte(policyYAML))
			c.prepare(t, dir, f)
			res, err := tr.VerifyFile(f)
			if c.want == "" {
				if err != nil {
					t.Fatalf("VerifyFile: %v", err)
				}
				if res.Signer() != c.signer {
					t.Fatalf("signer %q, want %q", res.Signer(), c.signer)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("VerifyFile error %v, want it to contain %q", err, c.want)
			}
			if cerr := tr.CheckPolicies([]string{f}); cerr == nil || !strings.Contains(cerr.Error(), f) {
				t.Fatalf("CheckPolicies = %v, want an error naming %s", cerr, f)
			}
		})
	}
}

func TestCheckPolicies(t *testing.T) {
	k := newECKey(t)
	cases := []struct {
		name    string
		trust   string
		prepare func(t *testing.T, f string)
		want    string // "" = run may start
	}{
		{"required and signed", "require_signed: true\nkeys: [k.pub]\n", func(t *testing.T, f string) { signWith(t, k, f) }, ""},
		{"required, bundle missing", "require_signed: true\nkeys: [k.pub]\n", func(t *testing.T, f string) {}, "not signed"},
		{"required, tampered", "require_signed: true\nkeys: [k.pub]\n", func(t *testing.T, f string) {
			signWith(t, k, f)
			writeFile(t, f, []byte("tools: {}\n"))
		}, "signature check failed"},
		{"not required, bundle missing", "require_signed: false\nkeys: [k.pub]\n", func(t *testing.T, f string) {}, ""},
		{"not required, stale bundle present", "require_signed: false\nkeys: [k.pub]\n", func(t *testing.T, f string) {
			signWith(t, k, f)
			writeFile(t, f, []byte("tools: {}\n"))
		}, "signature check failed"},
		{"not required, no signers, junk bundle", "require_signed: false\n", func(t *testing.T, f string) {
			writeFile(t, BundlePath(f), []byte("junk"))
		}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, "k.pub"), k.pub)
			tr := loadTrustFile(t, dir, c.trust)
			f := writeFile(t, filepath.Join(dir, "p.yaml"), []byte(policyYAML))
			c.prepare(t, f)
			err := tr.CheckPolicies([]string{f})
			if c.want == "" {
				if err != nil {
					t.Fatalf("CheckPolicies: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), f+": ") {
				t.Fatalf("CheckPolicies = %v, want %q and the file name first", err, c.want)
			}
		})
	}
}

func TestKeyless(t *testing.T) {
	cases := []struct {
		name       string
		identities string
		subject    string
		issuer     string
		withCT     bool
		tamper     bool
		want       string
	}{
		{name: "valid, regexp", identities: `    subject_regexp: '^https://github\.com/acme/mcp-policy/\.github/workflows/sign\.yml@refs/heads/main$'`,
			subject: testSubject, issuer: testIssuer},
		{name: "valid, exact subject", identities: "    subject: " + testSubject, subject: testSubject, issuer: testIssuer},
		{name: "unanchored regexp must match the whole subject", identities: `    subject_regexp: 'github\.com/acme/mcp-policy/'`,
			subject: "https://github.com/evil/x/github.com/acme/mcp-policy/.github/workflows/sign.yml@refs/heads/main", issuer: testIssuer,
			want: "SAN"},
		{name: "wrong subject", identities: "    subject: " + testSubject,
			subject: "https://github.com/acme/mcp-policy/.github/workflows/sign.yml@refs/heads/evil", issuer: testIssuer, want: "SAN"},
		{name: "wrong issuer", identities: "    subject: " + testSubject,
			subject: testSubject, issuer: "https://accounts.google.com", want: "issuer"},
		{name: "tampered file", identities: "    subject: " + testSubject, subject: testSubject, issuer: testIssuer, tamper: true,
			want: "verify"},
		{name: "root with CT logs needs SCTs", identities: "    subject: " + testSubject, subject: testSubject, issuer: testIssuer, withCT: true,
			want: "SCT"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			kl := newKeyless(t, dir, c.withCT)
			f := writeFile(t, filepath.Join(dir, "p.yaml"), []byte(policyYAML))
			kl.sign(t, f, c.subject, c.issuer)
			if c.tamper {
				writeFile(t, f, []byte(policyYAML+"#\n"))
			}
			tr := loadTrustFile(t, dir, "require_signed: true\nidentities:\n  - issuer: "+testIssuer+"\n"+c.identities+"\ntrusted_root: "+filepath.Base(kl.rootFile)+"\n")
			res, err := tr.VerifyFile(f)
			if c.want == "" {
				if err != nil {
					t.Fatalf("VerifyFile: %v", err)
				}
				if want := "identity " + c.subject + ", issuer " + c.issuer; res.Signer() != want {
					t.Fatalf("signer %q, want %q", res.Signer(), want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("VerifyFile error %v, want it to contain %q", err, c.want)
			}
		})
	}
}

// TestKeylessTime checks the certificate against the time the log observed
// the signature: a leaf that had expired by then does not verify.
func TestKeylessTime(t *testing.T) {
	dir := t.TempDir()
	kl := newKeyless(t, dir, false)
	tr := loadTrustFile(t, dir, "identities:\n  - issuer: "+testIssuer+"\n    subject: "+testSubject+"\ntrusted_root: trusted_root.json\n")
	// The virtual Sigstore's log IDs do not survive a trip through
	// trusted_root.json (it keeps them hex-encoded), so its log entries are
	// checked against the virtual Sigstore itself.
	tr.layers[0].root = noCT{kl.vs}
	data := []byte(policyYAML)

	// The virtual CA's leaves are valid for ten minutes from now.
	ok, err := kl.vs.SignAtTime(testSubject, testIssuer, data, time.Now().Add(2*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.verifyEntity(ok, data); err != nil {
		t.Fatalf("log entry inside the certificate's validity: %v", err)
	}
	late, err := kl.vs.SignAtTime(testSubject, testIssuer, data, time.Now().Add(30*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.verifyEntity(late, data); err == nil || !strings.Contains(err.Error(), "outside certificate validity") {
		t.Fatalf("log entry after the certificate expired: err = %v, want the certificate to be out of its validity", err)
	}
	// A log entry in the bundle is verified, not just counted: one from a log
	// the trusted root does not list fails.
	other := newKeyless(t, t.TempDir(), false)
	foreign, err := other.vs.Sign(testSubject, testIssuer, data)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.verifyEntity(foreign, data); err == nil {
		t.Fatal("entity from a different Sigstore verified")
	}
}

// TestSystemTrust checks that /etc/bouncer/trust.yaml cannot be weakened by
// a user's file: require_signed stays, and the user's keys do not widen
// what is accepted.
func TestSystemTrust(t *testing.T) {
	team, mine, second := newECKey(t), newECKey(t), newECKey(t)
	etc := t.TempDir()
	home := t.TempDir()
	writeFile(t, filepath.Join(etc, "team.pub"), team.pub)
	writeFile(t, filepath.Join(etc, "second.pub"), second.pub)
	writeFile(t, filepath.Join(home, "mine.pub"), mine.pub)
	writeFile(t, filepath.Join(home, "second.pub"), second.pub)

	setSystem := func(t *testing.T, body string) {
		old := systemTrustFile
		systemTrustFile = writeFile(t, filepath.Join(etc, "trust.yaml"), []byte(body))
		t.Cleanup(func() { systemTrustFile = old })
	}
	signed := func(t *testing.T, k keyPair) string {
		f := writeFile(t, filepath.Join(t.TempDir(), "p.yaml"), []byte(policyYAML))
		signWith(t, k, f)
		return f
	}

	t.Run("require_signed cannot be dropped by --trust", func(t *testing.T) {
		setSystem(t, "require_signed: true\nkeys: [team.pub]\n")
		user := writeFile(t, filepath.Join(home, "weak.yaml"), []byte("require_signed: false\nkeys: [mine.pub]\n"))
		tr, err := LoadTrust(user, "")
		if err != nil {
			t.Fatal(err)
		}
		if !tr.RequireSigned() {
			t.Fatal("user file dropped require_signed")
		}
		unsigned := writeFile(t, filepath.Join(t.TempDir(), "p.yaml"), []byte(policyYAML))
		if err := tr.CheckPolicies([]string{unsigned}); err == nil || !strings.Contains(err.Error(), "not signed") {
			t.Fatalf("unsigned policy: %v", err)
		}
		if err := tr.CheckPolicies([]string{signed(t, mine)}); err == nil {
			t.Fatal("a key from the user's file was accepted over the team's pin")
		}
		if err := tr.CheckPolicies([]string{signed(t, team)}); err == nil {
			t.Fatal("the user's file narrows: a team-signed file must also satisfy the user's keys")
		}
	})
	t.Run("require_signed cannot be dropped by the home file", func(t *testing.T) {
		setSystem(t, "require_signed: true\nkeys: [team.pub]\n")
		writeFile(t, filepath.Join(home, UserTrustFileName), []byte("require_signed: false\n"))
		tr, err := LoadTrust("", home)
		if err != nil {
			t.Fatal(err)
		}
		if !tr.RequireSigned() || len(tr.Files()) != 2 {
			t.Fatalf("RequireSigned=%v files=%v", tr.RequireSigned(), tr.Files())
		}
		if err := tr.CheckPolicies([]string{signed(t, team)}); err != nil {
			t.Fatalf("team-signed file refused: %v", err)
		}
		if err := tr.CheckPolicies([]string{signed(t, mine)}); err == nil {
			t.Fatal("foreign key accepted")
		}
	})
	t.Run("user file can narrow", func(t *testing.T) {
		setSystem(t, "require_signed: false\nkeys: [team.pub, second.pub]\n")
		user := writeFile(t, filepath.Join(home, "narrow.yaml"), []byte("require_signed: true\nkeys: [second.pub]\n"))
		tr, err := LoadTrust(user, "")
		if err != nil {
			t.Fatal(err)
		}
		if !tr.RequireSigned() {
			t.Fatal("user's require_signed not added")
		}
		if err := tr.CheckPolicies([]string{signed(t, second)}); err != nil {
			t.Fatalf("key in both files refused: %v", err)
		}
		if err := tr.CheckPolicies([]string{signed(t, team)}); err == nil {
			t.Fatal("key the user narrowed away was accepted")
		}
	})
	t.Run("system file naming no signers pins nobody", func(t *testing.T) {
		setSystem(t, "require_signed: false\n")
		user := writeFile(t, filepath.Join(home, "own.yaml"), []byte("require_signed: true\nkeys: [mine.pub]\n"))
		tr, err := LoadTrust(user, "")
		if err != nil {
			t.Fatal(err)
		}
		if err := tr.CheckPolicies([]string{signed(t, mine)}); err != nil {
			t.Fatalf("user key refused when the system file pins nobody: %v", err)
		}
	})
	t.Run("unreadable system file fails closed", func(t *testing.T) {
		old := systemTrustFile
		systemTrustFile = t.TempDir() // a directory, not a file
		t.Cleanup(func() { systemTrustFile = old })
		if _, err := LoadTrust("", home); err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Fatalf("LoadTrust = %v", err)
		}
	})
	t.Run("malformed system file is an error", func(t *testing.T) {
		setSystem(t, "require_signed: yes please\n")
		if _, err := LoadTrust("", home); err == nil || !strings.Contains(err.Error(), "trust.yaml:1: require_signed:") {
			t.Fatalf("LoadTrust = %v", err)
		}
	})
}

func TestLoadTrustLocations(t *testing.T) {
	home := t.TempDir()
	if _, err := LoadTrust("", home); !errors.Is(err, ErrNoTrust) {
		t.Fatalf("no file anywhere: %v, want ErrNoTrust", err)
	}
	if _, err := LoadTrust(filepath.Join(home, "nope.yaml"), home); err == nil || errors.Is(err, ErrNoTrust) {
		t.Fatalf("missing --trust FILE: %v, want a plain error", err)
	}
	k := newECKey(t)
	writeFile(t, filepath.Join(home, "k.pub"), k.pub)
	writeFile(t, filepath.Join(home, UserTrustFileName), []byte("require_signed: true\nkeys: [k.pub]\n"))
	tr, err := LoadTrust("", home)
	if err != nil {
		t.Fatal(err)
	}
	if !tr.RequireSigned() || tr.Files()[0] != filepath.Join(home, UserTrustFileName) {
		t.Fatalf("home file not used: %v", tr.Files())
	}
	// --trust replaces the home file (the system file is the only one that
	// always applies).
	other := writeFile(t, filepath.Join(t.TempDir(), "t.yaml"), []byte("require_signed: false\n"))
	tr, err = LoadTrust(other, home)
	if err != nil {
		t.Fatal(err)
	}
	if tr.RequireSigned() || len(tr.Files()) != 1 {
		t.Fatalf("--trust did not replace the home file: %v", tr.Files())
	}
}

func TestTrustErrors(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "k.pub"), newECKey(t).pub)
	writeFile(t, filepath.Join(dir, "bad.pub"), []byte("not a key\n"))
	writeFile(t, filepath.Join(dir, "root.json"), []byte("{}"))
	cases := []struct {
		name, body, want string
	}{
		{"unknown key", "require_signed: true\nkeys: [k.pub]\nrequire_signd: true\n", ":3: require_signd: unknown key"},
		{"string bool", "require_signed: \"true\"\n", `:1: require_signed: expected true or false, got the string "true"`},
		{"yes is not a bool", "require_signed: yes\n", ":1: require_signed: expected true or false"},
		{"scalar keys", "keys: k.pub\n", ":1: keys: expected a list"},
		{"null keys", "keys:\n", ":1: keys: expected a list of public key files, got nothing"},
		{"key not a string", "keys:\n  - 12\n", ":2: keys: expected a string"},
		{"duplicate key", "require_signed: true\nkeys: [k.pub]\nrequire_signed: false\n", ":3: require_signed: set twice (first at line 1)"},
		{"require without signers", "require_signed: true\n", ":1: require_signed: true, but no keys or identities"},
		{"missing key file", "keys:\n  - k.pub\n  - gone.pub\n", ":3: keys: gone.pub:"},
		{"bad key file", "keys:\n  - bad.pub\n", ":2: keys: bad.pub: not a PEM public key"},
		{"identity without root", "identities:\n  - issuer: x\n    subject: y\n", ":2: identities: keyless identities need trusted_root"},
		{"identity without issuer", "identities:\n  - subject: y\ntrusted_root: root.json\n", ":2: identities.issuer: missing"},
		{"identity without subject", "identities:\n  - issuer: x\ntrusted_root: root.json\n", ":2: identities: give subject or subject_regexp"},
		{"identity with both", "identities:\n  - issuer: x\n    subject: y\n    subject_regexp: y\ntrusted_root: root.json\n", "not both"},
		{"bad regexp", "identities:\n  - issuer: x\n    subject_regexp: '(('\ntrusted_root: root.json\n", ":3: identities.subject_regexp: bad regular expression"},
		{"identity unknown key", "identities:\n  - issuer: x\n    subjct: y\n", ":3: identities.subjct: unknown key"},
		{"bad trusted root", "identities:\n  - issuer: x\n    subject: y\ntrusted_root: root.json\n", ":4: trusted_root: root.json:"},
		{"syntax error", "require_signed: true\nkeys: [k.pub\n", "trust.yaml:"},
		{"not a mapping", "- a\n- b\n", ":1: expected a mapping"},
		{"empty", "", "empty trust file"},
		{"alias", "keys: &a [k.pub]\nx: *a\n", ":1: keys: YAML anchors and aliases are not allowed"},
		{"two documents", "require_signed: false\n---\nrequire_signed: true\n", ":2: the file holds one YAML document; found another"},
		{"empty string", "trusted_root: ''\n", ":1: trusted_root: empty"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := writeFile(t, filepath.Join(dir, "trust.yaml"), []byte(c.body))
			_, err := LoadTrust(p, "")
			if err == nil {
				t.Fatalf("loaded; want error containing %q", c.want)
			}
			if !strings.HasPrefix(err.Error(), p) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q, want it to start with the file and contain %q", err, c.want)
			}
		})
	}
}

func TestParsePrivateKey(t *testing.T) {
	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	rsaKey, _ := rsa.GenerateKey(rand.Reader, 2048)
	ecKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	sec1, _ := x509.MarshalECPrivateKey(ecKey)
	pk8 := func(k any) []byte {
		b, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: b})
	}
	cases := []struct {
		name string
		pem  []byte
		want string // "" = accepted
	}{
		{"ecdsa p-256", newECKey(t).priv, ""},
		{"ed25519", newEdKey(t).priv, ""},
		{"p-384", pk8(p384), "P-384 is not supported"},
		{"rsa", pk8(rsaKey), "not supported"},
		{"sec1", pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: sec1}), "convert to PKCS#8"},
		{"encrypted", pem.EncodeToMemory(&pem.Block{Type: "ENCRYPTED PRIVATE KEY", Bytes: []byte{1}}), "encrypted keys are not supported"},
		{"cosign encrypted", pem.EncodeToMemory(&pem.Block{Type: "ENCRYPTED SIGSTORE PRIVATE KEY", Bytes: []byte{1}}), "encrypted"},
		{"public key", newECKey(t).pub, "not a private key"},
		{"not pem", []byte("hello"), "no PEM block"},
		{"two blocks", append(newECKey(t).priv, newECKey(t).priv...), "more than one PEM block"},
		{"garbage der", pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte{1, 2, 3}}), "not a PKCS#8"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParsePrivateKey(c.pem)
			if c.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v, want %q", err, c.want)
			}
		})
	}
}

// TestOpenSSLKeys signs with keys made by openssl, the way the contract
// tells users to make them, and verifies with openssl's public key.
func TestOpenSSLKeys(t *testing.T) {
	need.Program(t, "openssl", "apt-get install openssl")
	for name, args := range map[string][]string{
		"p256":    {"genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"},
		"ed25519": {"genpkey", "-algorithm", "ed25519"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			key, pub := filepath.Join(dir, "k.pem"), filepath.Join(dir, "k.pub")
			run := func(args ...string) {
				if out, err := exec.Command("openssl", args...).CombinedOutput(); err != nil {
					t.Fatalf("openssl %v: %v\n%s", args, err, out)
				}
			}
			run(append(args, "-out", key)...)
			run("pkey", "-in", key, "-pubout", "-out", pub)
			pemData, err := os.ReadFile(key)
			if err != nil {
				t.Fatal(err)
			}
			f := writeFile(t, filepath.Join(dir, "p.yaml"), []byte(policyYAML))
			if err := SignFile(pemData, f); err != nil {
				t.Fatal(err)
			}
			tr := loadTrustFile(t, dir, "require_signed: true\nkeys: [k.pub]\n")
			if _, err := tr.VerifyFile(f); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestSignFileAtomic(t *testing.T) {
	dir := t.TempDir()
	k := newECKey(t)
	f := writeFile(t, filepath.Join(dir, "p.yaml"), []byte(policyYAML))
	writeFile(t, BundlePath(f), []byte("old"))
	s, err := ParsePrivateKey(k.priv)
	if err != nil {
		t.Fatal(err)
	}
	bp, err := s.SignFile(f)
	if err != nil || bp != BundlePath(f) {
		t.Fatalf("SignFile = %q, %v", bp, err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 2 {
		t.Fatalf("left behind: %v", ents)
	}
	writeFile(t, filepath.Join(dir, "k.pub"), s.PublicKeyPEM())
	tr := loadTrustFile(t, dir, "keys: [k.pub]\n")
	if _, err := tr.VerifyFile(f); err != nil {
		t.Fatalf("replaced bundle: %v", err)
	}
	// A missing directory fails without leaving anything.
	if _, err := s.SignFile(filepath.Join(dir, "nope", "p.yaml")); err == nil {
		t.Fatal("signed a file that does not exist")
	}
}

func TestVerifyWithoutSigners(t *testing.T) {
	dir := t.TempDir()
	tr := loadTrustFile(t, dir, "require_signed: false\n")
	f := writeFile(t, filepath.Join(dir, "p.yaml"), []byte(policyYAML))
	signWith(t, newECKey(t), f)
	if _, err := tr.VerifyFile(f); err == nil || !strings.Contains(err.Error(), "names no keys or identities") {
		t.Fatalf("VerifyFile = %v", err)
	}
}

// noCT is a virtual Sigstore without its CT log, whose certificates carry no
// SCTs.
type noCT struct{ *ca.VirtualSigstore }

func (noCT) CTLogs() map[string]*root.TransparencyLog { return nil }

// TestAttestationRefused checks that a DSSE attestation by a trusted
// identity is not taken as a signature over the policy file.
func TestAttestationRefused(t *testing.T) {
	dir := t.TempDir()
	kl := newKeyless(t, dir, false)
	tr := loadTrustFile(t, dir, "identities:\n  - issuer: "+testIssuer+"\n    subject: "+testSubject+"\ntrusted_root: trusted_root.json\n")
	tr.layers[0].root = noCT{kl.vs}
	statement := []byte(`{"_type":"https://in-toto.io/Statement/v1","subject":[{"name":"p.yaml","digest":{"sha256":"00"}}],"predicateType":"https://example.com/x","predicate":{}}`)
	e, err := kl.vs.Attest(testSubject, testIssuer, statement)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.verifyEntity(e, []byte(policyYAML)); err == nil || !strings.Contains(err.Error(), "DSSE") {
		t.Fatalf("attestation: err = %v, want a DSSE refusal", err)
	}
}

// enforce: true in the system file holds whatever the user's file or flag
// says; a user's file can add it.
func TestEnforce(t *testing.T) {
	etc, home := t.TempDir(), t.TempDir()
	old := systemTrustFile
	t.Cleanup(func() { systemTrustFile = old })
	for _, c := range []struct {
		name, system, user string
		want               bool
		from               string
	}{
		{"system enforces, user says false", "enforce: true\n", "enforce: false\n", true, "etc"},
		{"system enforces, no user file", "enforce: true\n", "", true, "etc"},
		{"system silent, user enforces", "require_signed: false\n", "enforce: true\n", true, "home"},
		{"nobody enforces", "require_signed: false\n", "enforce: false\n", false, ""},
		{"no system file", "", "enforce: false\n", false, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			systemTrustFile = filepath.Join(etc, "absent.yaml")
			if c.system != "" {
				systemTrustFile = writeFile(t, filepath.Join(etc, "trust.yaml"), []byte(c.system))
			}
			flag := ""
			if c.user != "" {
				flag = writeFile(t, filepath.Join(home, "trust.yaml"), []byte(c.user))
			}
			tr, err := LoadTrust(flag, "")
			if err != nil {
				t.Fatal(err)
			}
			file, on := tr.Enforce()
			dirs := map[string]string{"etc": etc, "home": home}
			if on != c.want || (on && filepath.Dir(file) != dirs[c.from]) {
				t.Fatalf("Enforce() = %q, %v; want %v from %s", file, on, c.want, c.from)
			}
		})
	}
	systemTrustFile = writeFile(t, filepath.Join(etc, "bad.yaml"), []byte("enforce: yes\n"))
	if _, err := LoadTrust("", ""); err == nil || !strings.Contains(err.Error(), "enforce: expected true or false") {
		t.Fatalf("enforce: yes accepted: %v", err)
	}
}
