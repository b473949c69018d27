package bundle

import (
	"path/filepath"
	"testing"
)

// The benchmarks measure what signed policy adds to `bouncer run` startup:
// loading the trust file (with its key or trusted root) and verifying one
// policy file against its bundle.

func benchKeyed(b *testing.B) (*Trust, string) {
	dir := b.TempDir()
	k := newECKey(b)
	writeFile(b, filepath.Join(dir, "team.pub"), k.pub)
	trust := writeFile(b, filepath.Join(dir, "trust.yaml"), []byte("require_signed: true\nkeys: [team.pub]\n"))
	f := writeFile(b, filepath.Join(dir, "policy.yaml"), []byte(policyYAML))
	signWith(b, k, f)
	tr, err := LoadTrust(trust, "")
	if err != nil {
		b.Fatal(err)
	}
	return tr, f
}

func benchKeyless(b *testing.B) (string, string) {
	dir := b.TempDir()
	kl := newKeyless(b, dir, false)
	trust := writeFile(b, filepath.Join(dir, "trust.yaml"), []byte("require_signed: true\nidentities:\n  - issuer: "+testIssuer+"\n    subject: "+testSubject+"\ntrusted_root: trusted_root.json\n"))
	f := writeFile(b, filepath.Join(dir, "policy.yaml"), []byte(policyYAML))
	kl.sign(b, f, testSubject, testIssuer)
	return trust, f
}

func BenchmarkLoadTrust(b *testing.B) {
	_, f := benchKeyed(b)
	trust := filepath.Join(filepath.Dir(f), "trust.yaml")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := LoadTrust(trust, ""); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkLoadTrustKeyless(b *testing.B) {
	trust, _ := benchKeyless(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := LoadTrust(trust, ""); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkVerifyKeyed(b *testing.B) {
	tr, f := benchKeyed(b)
	b.ReportAllocs()
	for b.Loop() {
		if err := tr.CheckPolicies([]string{f}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkVerifyKeyless(b *testing.B) {
	trust, f := benchKeyless(b)
	tr, err := LoadTrust(trust, "")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := tr.CheckPolicies([]string{f}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStartupKeyless is the whole cost run pays for a keyless-signed
// policy: load the trust file and trusted root, then verify.
func BenchmarkStartupKeyless(b *testing.B) {
	trust, f := benchKeyless(b)
	b.ReportAllocs()
	for b.Loop() {
		tr, err := LoadTrust(trust, "")
		if err != nil {
			b.Fatal(err)
		}
		if err := tr.CheckPolicies([]string{f}); err != nil {
			b.Fatal(err)
		}
	}
}
