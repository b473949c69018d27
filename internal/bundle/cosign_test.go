package bundle

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bouncer-mcp/bouncer/internal/testsupport/need"
)

// TestCosignInterop checks both directions against the real cosign CLI
// (go install github.com/sigstore/cosign/v3/cmd/cosign@v3.1.3): cosign
// verify-blob --key accepts bundles from SignFile, and VerifyFile accepts
// bundles from cosign sign-blob --key; for a set, cosign
// verify-blob-attestation accepts SignStatement's bundles, and
// VerifyStatement accepts cosign attest-blob --statement's. Without cosign it skips (.ci/test
// installs it), and fails under CI. It runs offline: no signing config, no transparency-log upload. The keyless
// fixture is checked by cosign too, so the tests' virtual Sigstore bundles
// are ones the reference tool accepts.
func TestCosignInterop(t *testing.T) {
	cosign := need.Program(t, "cosign", "go install github.com/sigstore/cosign/v3/cmd/cosign@v3.1.3")
	run := func(t *testing.T, dir string, args ...string) string {
		t.Helper()
		cmd := exec.Command(cosign, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "COSIGN_PASSWORD=", "COSIGN_YES=true", "TUF_ROOT="+filepath.Join(dir, ".tuf"))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("cosign %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}

	for name, k := range map[string]keyPair{"ecdsa": newECKey(t), "ed25519": newEdKey(t)} {
		t.Run("bouncer signs, cosign verifies, "+name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, "k.pub"), k.pub)
			f := writeFile(t, filepath.Join(dir, "policy.yaml"), []byte(policyYAML))
			signWith(t, k, f)
			out := run(t, dir, "verify-blob", "--key", "k.pub", "--bundle", "policy.yaml.sigstore.json", "--insecure-ignore-tlog=true", "policy.yaml")
			if !strings.Contains(out, "Verified OK") {
				t.Fatalf("cosign said: %s", out)
			}
			// And cosign refuses the bundle once the file changes.
			writeFile(t, f, []byte(policyYAML+"#\n"))
			cmd := exec.Command(cosign, "verify-blob", "--key", "k.pub", "--bundle", "policy.yaml.sigstore.json", "--insecure-ignore-tlog=true", "policy.yaml")
			cmd.Dir = dir
			if out, err := cmd.CombinedOutput(); err == nil {
				t.Fatalf("cosign verified a tampered file: %s", out)
			}
		})
	}

	t.Run("cosign signs, bouncer verifies", func(t *testing.T) {
		dir := t.TempDir()
		run(t, dir, "generate-key-pair")
		f := writeFile(t, filepath.Join(dir, "policy.yaml"), []byte(policyYAML))
		run(t, dir, "sign-blob", "--key", "cosign.key", "--bundle", "policy.yaml.sigstore.json",
			"--use-signing-config=false", "--tlog-upload=false", "policy.yaml")
		tr := loadTrustFile(t, dir, "require_signed: true\nkeys: [cosign.pub]\n")
		res, err := tr.VerifyFile(f)
		if err != nil {
			t.Fatalf("VerifyFile on cosign's bundle: %v", err)
		}
		if res.Signer() != "key cosign.pub" {
			t.Fatalf("signer %q", res.Signer())
		}
		writeFile(t, f, []byte(policyYAML+"#\n"))
		if _, err := tr.VerifyFile(f); err == nil {
			t.Fatal("tampered file verified against cosign's bundle")
		}
	})

	// A set's signature: an in-toto statement in a DSSE envelope.
	// cosign verify-blob-attestation checks a file against the statement
	// bouncer signed, and VerifyStatement accepts cosign attest-blob
	// --statement's bundle.
	t.Run("bouncer signs a set, cosign verifies", func(t *testing.T) {
		dir := t.TempDir()
		k := newECKey(t)
		writeFile(t, filepath.Join(dir, "k.pub"), k.pub)
		writeFile(t, filepath.Join(dir, "a.yaml"), []byte("a"))
		s, err := ParsePrivateKey(k.priv)
		if err != nil {
			t.Fatal(err)
		}
		b, err := s.SignStatement(setStatement("a.yaml", "a", "b.yaml", "b"))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dir, "set.sigstore.json"), b)
		out := run(t, dir, "verify-blob-attestation", "--key", "k.pub", "--bundle", "set.sigstore.json",
			"--type", "https://github.com/bouncer-mcp/bouncer/policy-set/v1", "--insecure-ignore-tlog=true", "a.yaml")
		if !strings.Contains(out, "Verified OK") {
			t.Fatalf("cosign said: %s", out)
		}
		writeFile(t, filepath.Join(dir, "a.yaml"), []byte("a!"))
		cmd := exec.Command(cosign, "verify-blob-attestation", "--key", "k.pub", "--bundle", "set.sigstore.json",
			"--type", "https://github.com/bouncer-mcp/bouncer/policy-set/v1", "--insecure-ignore-tlog=true", "a.yaml")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err == nil {
			t.Fatalf("cosign verified a file the set does not name: %s", out)
		}
	})

	t.Run("cosign signs a set, bouncer verifies", func(t *testing.T) {
		dir := t.TempDir()
		run(t, dir, "generate-key-pair")
		stmt := setStatement("a.yaml", "a", "b.yaml", "b")
		writeFile(t, filepath.Join(dir, "set.json"), stmt)
		run(t, dir, "attest-blob", "--key", "cosign.key", "--statement", "set.json", "--bundle", "set.sigstore.json",
			"--use-signing-config=false", "--tlog-upload=false")
		b, err := os.ReadFile(filepath.Join(dir, "set.sigstore.json"))
		if err != nil {
			t.Fatal(err)
		}
		tr := loadTrustFile(t, dir, "keys: [cosign.pub]\n")
		got, signers, err := tr.VerifyStatement(b, subjectsOf("a.yaml", "a", "b.yaml", "b"))
		if err != nil || string(got) != string(stmt) || strings.Join(signers, ";") != "key cosign.pub" {
			t.Fatalf("VerifyStatement on cosign's bundle: %q, %v, %v", got, signers, err)
		}
		if _, _, err := tr.VerifyStatement(b, subjectsOf("a.yaml", "a!")); err == nil {
			t.Fatal("cosign's set bundle verified a file it does not name")
		}
	})

	t.Run("keyless fixture: cosign agrees on identity", func(t *testing.T) {
		dir := t.TempDir()
		kl := newKeyless(t, dir, false)
		f := writeFile(t, filepath.Join(dir, "policy.yaml"), []byte(policyYAML))
		kl.sign(t, f, testSubject, testIssuer)
		verify := func(identity string) error {
			cmd := exec.Command(cosign, "verify-blob", "--bundle", "policy.yaml.sigstore.json", "--trusted-root", "trusted_root.json",
				"--certificate-identity", identity, "--certificate-oidc-issuer", testIssuer,
				"--insecure-ignore-sct", "--insecure-ignore-tlog=true", "--use-signed-timestamps", "policy.yaml")
			cmd.Dir = dir
			_, err := cmd.CombinedOutput()
			return err
		}
		if err := verify(testSubject); err != nil {
			t.Fatalf("cosign refused the keyless fixture: %v", err)
		}
		if err := verify(testSubject + "x"); err == nil {
			t.Fatal("cosign accepted a different identity")
		}
	})
}
