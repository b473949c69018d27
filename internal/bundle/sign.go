package bundle

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"

	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	protodsse "github.com/sigstore/protobuf-specs/gen/pb-go/dsse"
	sgbundle "github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/verify"
	"github.com/sigstore/sigstore/pkg/signature"

	"github.com/bouncer-mcp/bouncer/internal/statefile"
)

const bundleV03MediaType = "application/vnd.dev.sigstore.bundle.v0.3+json"

// Signer is a parsed private key ready to sign files.
type Signer struct {
	priv crypto.Signer
	pub  crypto.PublicKey
	der  []byte // PKIX public key
}

// ParsePrivateKey reads an unencrypted PKCS#8 PEM private key: ECDSA P-256
// (as `openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256`
// writes it) or Ed25519. Other forms get an error that says how to convert.
func ParsePrivateKey(pemData []byte) (*Signer, error) {
	block, rest := pem.Decode(pemData)
	if block == nil {
		return nil, errors.New("no PEM block found")
	}
	if next, _ := pem.Decode(rest); next != nil {
		return nil, errors.New("more than one PEM block; give a file with just the private key")
	}
	switch block.Type {
	case "PRIVATE KEY":
	case "ENCRYPTED PRIVATE KEY", "ENCRYPTED SIGSTORE PRIVATE KEY", "ENCRYPTED COSIGN PRIVATE KEY":
		return nil, fmt.Errorf("%s: encrypted keys are not supported; give an unencrypted PKCS#8 key (openssl pkcs8 -topk8 -nocrypt)", block.Type)
	case "EC PRIVATE KEY":
		return nil, errors.New("EC PRIVATE KEY (SEC 1) form; convert to PKCS#8 with: openssl pkcs8 -topk8 -nocrypt -in KEY -out KEY.p8")
	default:
		return nil, fmt.Errorf("PEM block %q is not a private key (want PRIVATE KEY, PKCS#8)", block.Type)
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("not a PKCS#8 private key: %w", err)
	}
	var s crypto.Signer
	switch k := k.(type) {
	case *ecdsa.PrivateKey:
		if k.Curve != elliptic.P256() {
			return nil, fmt.Errorf("ECDSA curve %s is not supported; use P-256", k.Curve.Params().Name)
		}
		s = k
	case ed25519.PrivateKey:
		s = k
	default:
		return nil, fmt.Errorf("%T keys are not supported; use ECDSA P-256 or Ed25519", k)
	}
	der, err := x509.MarshalPKIXPublicKey(s.Public())
	if err != nil {
		return nil, err
	}
	return &Signer{priv: s, pub: s.Public(), der: der}, nil
}

// PublicKeyPEM returns the public half, as a trust file's keys entry wants it.
func (s *Signer) PublicKeyPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: s.der})
}

// Bundle signs data and returns the bundle JSON: a v0.3 bundle with a
// message signature over the exact bytes and a public-key hint, the shape
// `cosign sign-blob --key` writes. The message digest is SHA-256 for both
// key types; ECDSA signs that digest, Ed25519 signs the bytes themselves
// (pure Ed25519), which is what verifiers of either kind expect.
func (s *Signer) Bundle(data []byte) ([]byte, error) {
	digest := sha256.Sum256(data)
	sig, err := s.sign(data)
	if err != nil {
		return nil, err
	}
	pb := s.protoBundle()
	pb.Content = &protobundle.Bundle_MessageSignature{
		MessageSignature: &protocommon.MessageSignature{
			MessageDigest: &protocommon.HashOutput{Algorithm: protocommon.HashAlgorithm_SHA2_256, Digest: digest[:]},
			Signature:     sig,
		},
	}
	b, err := sgbundle.NewBundle(pb)
	if err != nil {
		return nil, fmt.Errorf("bundle: %w", err)
	}
	// Check our own work with the same verifier `bouncer verify` uses, so a
	// bundle that would not verify is never written.
	return s.selfChecked(b, func() verify.ArtifactPolicyOption { return verify.WithArtifact(bytes.NewReader(data)) })
}

// SignStatement signs an in-toto statement, its exact bytes, and returns
// the bundle JSON: a v0.3 bundle holding a DSSE envelope (payload type
// application/vnd.in-toto+json) with one signature over the envelope's
// pre-authentication encoding, the shape `cosign attest-blob --key
// --statement` writes. VerifyStatement reads it.
func (s *Signer) SignStatement(statement []byte) ([]byte, error) {
	sig, err := s.sign(dssePAE(InTotoPayloadType, statement))
	if err != nil {
		return nil, err
	}
	pb := s.protoBundle()
	pb.Content = &protobundle.Bundle_DsseEnvelope{
		DsseEnvelope: &protodsse.Envelope{
			Payload:     statement,
			PayloadType: InTotoPayloadType,
			Signatures:  []*protodsse.Signature{{Sig: sig}},
		},
	}
	b, err := sgbundle.NewBundle(pb)
	if err != nil {
		return nil, fmt.Errorf("bundle: %w", err)
	}
	// The self-check is of the signature only: which subjects the
	// statement must name is the reader's question (VerifyStatement).
	return s.selfChecked(b, verify.WithoutArtifactUnsafe)
}

// sign signs msg: ECDSA over its SHA-256 digest, Ed25519 over the bytes.
func (s *Signer) sign(msg []byte) ([]byte, error) {
	var sig []byte
	var err error
	switch k := s.priv.(type) {
	case *ecdsa.PrivateKey:
		digest := sha256.Sum256(msg)
		sig, err = ecdsa.SignASN1(rand.Reader, k, digest[:])
	case ed25519.PrivateKey:
		sig = ed25519.Sign(k, msg)
	default:
		err = fmt.Errorf("unsupported key %T", k)
	}
	if err != nil {
		return nil, fmt.Errorf("sign: %w", err)
	}
	return sig, nil
}

// dssePAE is DSSE's pre-authentication encoding, what a DSSE signature
// signs: the payload type and payload, each with its length.
func dssePAE(payloadType string, payload []byte) []byte {
	return fmt.Appendf(nil, "DSSEv1 %d %s %d %s", len(payloadType), payloadType, len(payload), payload)
}

// protoBundle is a v0.3 bundle with this key's public-key hint, for the
// caller to put the signed content in.
func (s *Signer) protoBundle() *protobundle.Bundle {
	hint := sha256.Sum256(s.der)
	return &protobundle.Bundle{
		MediaType: bundleV03MediaType,
		VerificationMaterial: &protobundle.VerificationMaterial{
			Content: &protobundle.VerificationMaterial_PublicKey{
				PublicKey: &protocommon.PublicKeyIdentifier{Hint: base64.StdEncoding.EncodeToString(hint[:])},
			},
		},
	}
}

// selfChecked verifies a new bundle with this key under artifact and
// returns its JSON.
func (s *Signer) selfChecked(b *sgbundle.Bundle, artifact func() verify.ArtifactPolicyOption) ([]byte, error) {
	sv, err := signature.LoadVerifier(s.pub, crypto.SHA256)
	if err != nil {
		return nil, err
	}
	if err := verifyWithKey(sv, b, artifact()); err != nil {
		return nil, fmt.Errorf("self-check of the new bundle failed: %w", err)
	}
	out, err := b.MarshalJSON()
	if err != nil {
		return nil, err
	}
	return append(out, '\n'), nil
}

// SignFile reads path and writes its bundle to path.sigstore.json,
// atomically, returning the bundle's path.
func (s *Signer) SignFile(path string) (string, error) {
	data, err := statefile.ReadFile(path, maxPolicySize)
	if err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	_, bp, err := s.SignBytes(path, data)
	return bp, err
}

// SignBytes signs data, the bytes the caller read from path, and writes the
// bundle to path.sigstore.json atomically. It returns the bundle and its
// path, so a caller that goes on to use data (bouncer policy push) holds
// the bundle over exactly those bytes.
func (s *Signer) SignBytes(path string, data []byte) (bundle []byte, bundlePath string, err error) {
	out, err := s.Bundle(data)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", path, err)
	}
	bp := BundlePath(path)
	// The bundle is the user's file, published beside the signed one, not
	// a state file: it is 0644, and nothing trusts it for its owner (its
	// signature is its trust). It is replaced the way state files are,
	// so a reader never sees half of one.
	if err := statefile.WriteMode(bp, out, 0o644); err != nil {
		return nil, "", fmt.Errorf("write %s: %w", bp, err)
	}
	return out, bp, nil
}

// SignFile signs path with the PEM private key keyPEM, writing
// path.sigstore.json beside it.
func SignFile(keyPEM []byte, path string) error {
	s, err := ParsePrivateKey(keyPEM)
	if err != nil {
		return err
	}
	_, err = s.SignFile(path)
	return err
}
