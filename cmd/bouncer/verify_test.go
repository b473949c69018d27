package main

import (
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/sha256"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	sgbundle "github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/testing/ca"
)

// TestVerifyKeylessCLI runs `bouncer verify` as a subprocess on a keyless
// bundle from a virtual Sigstore, made now (its CA is valid only for a few
// hours), with the trusted root on disk as a team would deploy it.
func TestVerifyKeylessCLI(t *testing.T) {
	const (
		issuer  = "https://token.actions.githubusercontent.com"
		subject = "https://github.com/acme/mcp-policy/.github/workflows/sign.yml@refs/heads/main"
	)
	dir := t.TempDir()
	vs, err := ca.NewVirtualSigstore()
	if err != nil {
		t.Fatal(err)
	}
	// No CT log in the root: the virtual CA's certificates carry no SCTs.
	tr, err := root.NewTrustedRoot(root.TrustedRootMediaType01, vs.FulcioCertificateAuthorities(), nil, vs.TimestampingAuthorities(), vs.RekorLogs())
	if err != nil {
		t.Fatal(err)
	}
	js, err := tr.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("trusted_root.json", js)
	write("trust.yaml", []byte("require_signed: true\nidentities:\n  - issuer: "+issuer+"\n    subject_regexp: '^https://github\\.com/acme/mcp-policy/\\.github/workflows/sign\\.yml@refs/heads/main$'\ntrusted_root: trusted_root.json\n"))
	policy := []byte("send_email:\n  exfiltrating: true\n  sink_params: [to]\n")
	sign := func(name, subject string) {
		leaf, priv, err := vs.GenerateLeafCert(subject, issuer)
		if err != nil {
			t.Fatal(err)
		}
		digest := sha256.Sum256(policy)
		sig, err := ecdsa.SignASN1(rand.Reader, priv.(*ecdsa.PrivateKey), digest[:])
		if err != nil {
			t.Fatal(err)
		}
		tsr, err := vs.TimestampResponse(sig)
		if err != nil {
			t.Fatal(err)
		}
		b, err := sgbundle.NewBundle(&protobundle.Bundle{
			MediaType: "application/vnd.dev.sigstore.bundle.v0.3+json",
			VerificationMaterial: &protobundle.VerificationMaterial{
				Content: &protobundle.VerificationMaterial_Certificate{Certificate: &protocommon.X509Certificate{RawBytes: leaf.Raw}},
				TimestampVerificationData: &protobundle.TimestampVerificationData{
					Rfc3161Timestamps: []*protocommon.RFC3161SignedTimestamp{{SignedTimestamp: tsr}},
				},
			},
			Content: &protobundle.Bundle_MessageSignature{MessageSignature: &protocommon.MessageSignature{
				MessageDigest: &protocommon.HashOutput{Algorithm: protocommon.HashAlgorithm_SHA2_256, Digest: digest[:]},
				Signature:     sig,
			}},
		})
		if err != nil {
			t.Fatal(err)
		}
		out, err := b.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		write(name, policy)
		write(name+".sigstore.json", out)
	}
	sign("good.yaml", subject)
	sign("fork.yaml", "https://github.com/evil/mcp-policy/.github/workflows/sign.yml@refs/heads/main")

	t.Setenv("BOUNCER_HOME", filepath.Join(dir, "home"))
	t.Chdir(dir)
	status, out := captureVerifyStdout(t, func() int { return finish(cmdVerify([]string{"--trust", "trust.yaml", "good.yaml", "fork.yaml"})) })
	if status != exitFail {
		t.Fatalf("exit status %d, want %d\n%s", status, exitFail, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 2 {
		t.Fatalf("want one line per file, got:\n%s", out)
	}
	if want := "OK good.yaml (identity " + subject + ", issuer " + issuer + ")"; lines[0] != want {
		t.Errorf("line 1 = %q, want %q", lines[0], want)
	}
	if !strings.HasPrefix(lines[1], "FAIL fork.yaml: ") || !strings.Contains(lines[1], "SAN") {
		t.Errorf("line 2 = %q, want a FAIL naming the subject mismatch", lines[1])
	}
}

// captureVerifyStdout runs f with os.Stdout going to a pipe and returns what it
// wrote.
func captureVerifyStdout(t *testing.T, f func() int) (int, string) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stdout
	os.Stdout = w
	done := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(r)
		done <- b
	}()
	status := f()
	os.Stdout = old
	w.Close()
	return status, string(<-done)
}
