package bundle

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParseTrust feeds arbitrary bytes to the trust-file parser and loader.
// Whatever the input, it must not panic, and every failure must be an *Error
// that starts with the file name, the form bouncer prints.
func FuzzParseTrust(f *testing.F) {
	for _, s := range []string{
		"require_signed: true\nkeys:\n  - team.pub\n",
		"identities:\n  - issuer: https://token.actions.githubusercontent.com\n    subject_regexp: '^x$'\ntrusted_root: trusted_root.json\n",
		"require_signed: false\n",
		"keys: &a [x]\nidentities: *a\n",
		"{}",
		"- a",
		"require_signed: !!str true\n",
		"keys: [\"\\u0000\"]\n",
		"identities:\n  - {issuer: x, subject: y, subject_regexp: z}\n",
		"---\n---\n",
	} {
		f.Add([]byte(s))
	}
	dir := f.TempDir()
	file := filepath.Join(dir, "trust.yaml")
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := parseTrust(file, data)
		if err == nil {
			_, err = cfg.load(dir)
		}
		if err == nil {
			return
		}
		var te *Error
		if !errors.As(err, &te) {
			t.Fatalf("error of type %T: %v", err, err)
		}
		if !strings.HasPrefix(err.Error(), file) {
			t.Fatalf("error does not name the file: %v", err)
		}
	})
}

// FuzzVerifyBundle feeds arbitrary bundle bytes to the verifier, seeded with
// real keyed and keyless bundles. A bundle file is attacker-writable input:
// verification must never panic, and a mutated bundle must never verify
// unless it still carries a valid signature by the trusted key over the file.
func FuzzVerifyBundle(f *testing.F) {
	dir := f.TempDir()
	k := newECKey(f)
	writeFile(f, filepath.Join(dir, "k.pub"), k.pub)
	kl := newKeyless(f, dir, false)
	trust := writeFile(f, filepath.Join(dir, "trust.yaml"), []byte("keys: [k.pub]\nidentities:\n  - issuer: "+testIssuer+"\n    subject: "+testSubject+"\ntrusted_root: trusted_root.json\n"))
	tr, err := LoadTrust(trust, "")
	if err != nil {
		f.Fatal(err)
	}
	data := []byte(policyYAML)
	s, err := ParsePrivateKey(k.priv)
	if err != nil {
		f.Fatal(err)
	}
	keyed, err := s.Bundle(data)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(keyed)
	f.Add(kl.bundleJSON(f, data, testSubject, testIssuer))
	f.Add([]byte(`{"mediaType":"application/vnd.dev.sigstore.bundle.v0.3+json"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		signers, err := tr.verifyBundleJSON(b, data)
		if err == nil && len(signers) == 0 {
			t.Fatal("verified with no signer named")
		}
		// A bundle that verifies is bound to these bytes: it must not
		// verify a different file.
		if err == nil {
			if _, err := tr.verifyBundleJSON(b, append([]byte("#\n"), data...)); err == nil {
				t.Fatal("one bundle verified two different files")
			}
		}
	})
}
