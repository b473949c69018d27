package bundle

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"

	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	sgbundle "github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/testing/ca"
)

// Every fixture is made at test time: the virtual Sigstore's CA is only
// valid from five hours ago to an hour from now, and committed bundles would
// rot.

func TestMain(m *testing.M) {
	// Keep the machine's real /etc/bouncer/trust.yaml out of the tests; the
	// tests that need a system file point this at one of their own.
	dir, err := os.MkdirTemp("", "bouncer-bundle-test")
	if err != nil {
		panic(err)
	}
	systemTrustFile = filepath.Join(dir, "no-system-trust.yaml")
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// keyPair is a private key as PKCS#8 PEM and its public key as PEM.
type keyPair struct {
	priv, pub []byte
}

func newECKey(t testing.TB) keyPair {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return marshalKey(t, k, &k.PublicKey)
}

func newEdKey(t testing.TB) keyPair {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return marshalKey(t, priv, pub)
}

func marshalKey(t testing.TB, priv, pub any) keyPair {
	t.Helper()
	p8, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return keyPair{
		priv: pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: p8}),
		pub:  pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}),
	}
}

func writeFile(t testing.TB, path string, data []byte) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func signWith(t testing.TB, k keyPair, path string) {
	t.Helper()
	if err := SignFile(k.priv, path); err != nil {
		t.Fatal(err)
	}
}

// keyless is a virtual Sigstore with its trusted root on disk.
type keyless struct {
	vs       *ca.VirtualSigstore
	rootFile string
}

const (
	testIssuer  = "https://token.actions.githubusercontent.com"
	testSubject = "https://github.com/acme/mcp-policy/.github/workflows/sign.yml@refs/heads/main"
)

// newKeyless makes a virtual Sigstore and writes its trusted_root.json into
// dir. withCT includes its certificate-transparency log, which makes SCTs
// required (the virtual CA issues certificates without them).
func newKeyless(t testing.TB, dir string, withCT bool) *keyless {
	t.Helper()
	vs, err := ca.NewVirtualSigstore()
	if err != nil {
		t.Fatal(err)
	}
	var ct map[string]*root.TransparencyLog
	if withCT {
		ct = vs.CTLogs()
	}
	tr, err := root.NewTrustedRoot(root.TrustedRootMediaType01, vs.FulcioCertificateAuthorities(), ct, vs.TimestampingAuthorities(), vs.RekorLogs())
	if err != nil {
		t.Fatal(err)
	}
	js, err := tr.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	name := "trusted_root.json"
	if withCT {
		name = "trusted_root_ct.json"
	}
	return &keyless{vs: vs, rootFile: writeFile(t, filepath.Join(dir, name), js)}
}

// sign writes path.sigstore.json: a Fulcio-style certificate for subject and
// issuer, a message signature over the file, and an RFC 3161 timestamp.
func (k *keyless) sign(t testing.TB, path, subject, issuer string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, BundlePath(path), k.bundleJSON(t, data, subject, issuer))
}

func (k *keyless) bundleJSON(t testing.TB, data []byte, subject, issuer string) []byte {
	t.Helper()
	leaf, priv, err := k.vs.GenerateLeafCert(subject, issuer)
	if err != nil {
		t.Fatal(err)
	}
	digest := sha256.Sum256(data)
	sig, err := ecdsa.SignASN1(rand.Reader, priv.(*ecdsa.PrivateKey), digest[:])
	if err != nil {
		t.Fatal(err)
	}
	tsr, err := k.vs.TimestampResponse(sig)
	if err != nil {
		t.Fatal(err)
	}
	pb := &protobundle.Bundle{
		MediaType: bundleV03MediaType,
		VerificationMaterial: &protobundle.VerificationMaterial{
			Content: &protobundle.VerificationMaterial_Certificate{
				Certificate: &protocommon.X509Certificate{RawBytes: leaf.Raw},
			},
			TimestampVerificationData: &protobundle.TimestampVerificationData{
				Rfc3161Timestamps: []*protocommon.RFC3161SignedTimestamp{{SignedTimestamp: tsr}},
			},
		},
		Content: &protobundle.Bundle_MessageSignature{
			MessageSignature: &protocommon.MessageSignature{
				MessageDigest: &protocommon.HashOutput{Algorithm: protocommon.HashAlgorithm_SHA2_256, Digest: digest[:]},
				Signature:     sig,
			},
		},
	}
	b, err := sgbundle.NewBundle(pb)
	if err != nil {
		t.Fatal(err)
	}
	js, err := b.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return js
}
