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
// bundles from cosign sign-blob --key. Without cosign it skips (.ci/test
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
