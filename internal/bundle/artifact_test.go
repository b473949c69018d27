package bundle

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestVerifyBundle checks the in-memory form that bouncer policy pull uses
// on files and bundles fetched from a registry: the same verdicts as
// VerifyFile, with nothing on disk.
func TestVerifyBundle(t *testing.T) {
	team, other := newECKey(t), newECKey(t)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "team.pub"), team.pub)
	tr := loadTrustFile(t, dir, "keys: [team.pub]\n")
	f := writeFile(t, filepath.Join(dir, "p.yaml"), []byte(policyYAML))
	signWith(t, team, f)
	good, err := os.ReadFile(BundlePath(f))
	if err != nil {
		t.Fatal(err)
	}
	g := writeFile(t, filepath.Join(t.TempDir(), "p.yaml"), []byte(policyYAML))
	signWith(t, other, g)
	foreign, _ := os.ReadFile(BundlePath(g))

	if res, err := tr.VerifyBundle("p.yaml", []byte(policyYAML), good); err != nil || res.Signer() != "key team.pub" {
		t.Fatalf("good bundle: %v, signer %q", err, res.Signer())
	}
	for name, c := range map[string]struct {
		data, bundle []byte
		want         string
	}{
		"tampered file":   {[]byte(policyYAML + "#\n"), good, "does not verify with key team.pub"},
		"wrong key":       {[]byte(policyYAML), foreign, "does not verify with key team.pub"},
		"empty bundle":    {[]byte(policyYAML), nil, "no bundle"},
		"garbage bundle":  {[]byte(policyYAML), []byte("{}"), "not a Sigstore bundle"},
		"tampered bundle": {[]byte(policyYAML), []byte(strings.Replace(string(good), `"signature":"`, `"signature":"AAAA`, 1)), "bundle p.yaml.sigstore.json"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := tr.VerifyBundle("p.yaml", c.data, c.bundle)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v, want %q", err, c.want)
			}
		})
	}
}

func TestPolicyArtifact(t *testing.T) {
	k := newECKey(t)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "team.pub"), k.pub)
	tr := loadTrustFile(t, dir, "keys: [team.pub]\npolicy_artifact: registry.example/team/policy:prod\n")
	ref, src := tr.PolicyArtifact()
	if ref != "registry.example/team/policy:prod" || src != filepath.Join(dir, "trust.yaml")+":2" {
		t.Fatalf("PolicyArtifact = %q, %q", ref, src)
	}
	if ref, _ := loadTrustFile(t, dir, "keys: [team.pub]\n").PolicyArtifact(); ref != "" {
		t.Fatalf("no policy_artifact gave %q", ref)
	}

	t.Run("the system file's wins", func(t *testing.T) {
		etc := t.TempDir()
		old := systemTrustFile
		systemTrustFile = writeFile(t, filepath.Join(etc, "trust.yaml"), []byte("policy_artifact: registry.example/team/policy:prod\n"))
		t.Cleanup(func() { systemTrustFile = old })
		user := writeFile(t, filepath.Join(dir, "mine.yaml"), []byte("keys: [team.pub]\npolicy_artifact: registry.example/me/policy:dev\n"))
		tr, err := LoadTrust(user, "")
		if err != nil {
			t.Fatal(err)
		}
		if ref, src := tr.PolicyArtifact(); ref != "registry.example/team/policy:prod" || !strings.HasPrefix(src, systemTrustFile+":") {
			t.Fatalf("PolicyArtifact = %q, %q", ref, src)
		}
	})

	for body, want := range map[string]string{
		"policy_artifact: [a, b]\n": "policy_artifact: expected a string",
		"policy_artifact: ''\n":     "policy_artifact: empty",
		"policy_artifcat: x\n":      "unknown key (known: require_signed, enforce, keys, identities, trusted_root, policy_artifact, audit_ship, max_age)",
	} {
		p := writeFile(t, filepath.Join(t.TempDir(), "trust.yaml"), []byte(body))
		if _, err := LoadTrust(p, ""); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err %v, want %q", body, err, want)
		}
	}
}
