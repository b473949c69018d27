package bundle

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	sgbundle "github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/verify"
	"github.com/sigstore/sigstore/pkg/signature"

	"github.com/bouncer-mcp/bouncer/internal/statefile"
)

// BundleSuffix is appended to a file's name to find its bundle.
const BundleSuffix = ".sigstore.json"

// maxBundleSize bounds what is read of a bundle; a keyless bundle with a
// certificate chain and a log entry is a few kilobytes.
const maxBundleSize = 4 << 20

// maxPolicySize bounds what is read of a signed file.
const maxPolicySize = 64 << 20

// BundlePath returns where the bundle of file is expected: beside it.
func BundlePath(file string) string { return file + BundleSuffix }

// Result says who signed a file that verified.
type Result struct {
	File   string
	Bundle string
	// Signers describes, per trust layer that names signers, what the
	// bundle matched: "key team-policy.pub" or "identity SUBJECT, issuer
	// ISSUER".
	Signers []string
}

// Signer joins the signer descriptions for one line of output.
func (r Result) Signer() string { return strings.Join(r.Signers, "; ") }

// ErrNoBundle is wrapped by VerifyFile and CheckPolicies when a file has no
// bundle beside it.
var ErrNoBundle = errors.New("no bundle")

// VerifyFile verifies path against its bundle beside it (path.sigstore.json).
func (t *Trust) VerifyFile(path string) (Result, error) {
	return t.VerifyFileWithBundle(path, BundlePath(path))
}

// VerifyFileWithBundle verifies path against the bundle at bundlePath.
func (t *Trust) VerifyFileWithBundle(path, bundlePath string) (Result, error) {
	data, err := statefile.ReadFile(path, maxPolicySize)
	if err != nil {
		return Result{File: path, Bundle: bundlePath}, fmt.Errorf("read %s: %w", path, err)
	}
	return t.VerifyBytes(path, data, bundlePath)
}

// VerifyBytes verifies data, the exact bytes of file, against the bundle at
// bundlePath. Callers that have already read the file use this so that the
// bytes they act on are the bytes that were verified.
func (t *Trust) VerifyBytes(file string, data []byte, bundlePath string) (Result, error) {
	res := Result{File: file, Bundle: bundlePath}
	raw, err := statefile.ReadFile(bundlePath, maxBundleSize)
	if errors.Is(err, os.ErrNotExist) {
		return res, fmt.Errorf("%w: %s not found", ErrNoBundle, bundlePath)
	}
	if err != nil {
		return res, fmt.Errorf("bundle %s: %w", bundlePath, err)
	}
	signers, err := t.verifyBundleJSON(raw, data)
	if err != nil {
		return res, fmt.Errorf("bundle %s: %w", bundlePath, err)
	}
	res.Signers = signers
	return res, nil
}

// VerifyBundle verifies data, the exact bytes of file, against bundleJSON,
// a bundle already in memory (one fetched from a registry beside the file,
// say), under the same rules as VerifyFile. file is used in messages only.
func (t *Trust) VerifyBundle(file string, data, bundleJSON []byte) (Result, error) {
	res := Result{File: file, Bundle: file + BundleSuffix}
	switch {
	case len(data) > maxPolicySize:
		return res, fmt.Errorf("%s: larger than %d bytes", file, maxPolicySize)
	case len(bundleJSON) == 0:
		return res, fmt.Errorf("%w: %s is empty", ErrNoBundle, res.Bundle)
	case len(bundleJSON) > maxBundleSize:
		return res, fmt.Errorf("bundle %s: larger than %d bytes", res.Bundle, maxBundleSize)
	}
	signers, err := t.verifyBundleJSON(bundleJSON, data)
	if err != nil {
		return res, fmt.Errorf("bundle %s: %w", res.Bundle, err)
	}
	res.Signers = signers
	return res, nil
}

// verifyBundleJSON parses a bundle and verifies it over data.
func (t *Trust) verifyBundleJSON(raw, data []byte) ([]string, error) {
	b := &sgbundle.Bundle{}
	if err := b.UnmarshalJSON(raw); err != nil {
		return nil, fmt.Errorf("not a Sigstore bundle: %w", err)
	}
	return t.verifyEntity(b, data)
}

// verifyEntity checks one signed entity over data against every layer that
// names signers; each must accept it.
func (t *Trust) verifyEntity(e verify.SignedEntity, data []byte) ([]string, error) {
	return t.verifySigned(e, false, func() verify.ArtifactPolicyOption {
		return verify.WithArtifact(bytes.NewReader(data))
	})
}

// verifySigned checks a signed entity against every layer that names
// signers; each must accept it. statement says which kind of content it
// must hold: a DSSE envelope (a signed statement) or a plain signature
// over a file. artifact makes the policy for what was signed, afresh for
// each try (a reader is spent by one).
func (t *Trust) verifySigned(e verify.SignedEntity, statement bool, artifact func() verify.ArtifactPolicyOption) ([]string, error) {
	if !t.HasSigners() {
		return nil, errors.New("the trust configuration names no keys or identities")
	}
	vc, err := e.VerificationContent()
	if err != nil {
		return nil, err
	}
	sc, err := e.SignatureContent()
	if err != nil {
		return nil, err
	}
	// Only a plain signature over the file counts for a file. A DSSE
	// attestation (cosign attest-blob) whose subject digest matches would
	// verify too, but it states something about the file (its predicate),
	// which is not the same as the signer vouching for it as policy. For a
	// set it is the other way round: the statement is what is signed.
	switch {
	case !statement && sc.MessageSignatureContent() == nil:
		return nil, errors.New("bundle holds a DSSE envelope (an attestation), not a signature over the file; sign with cosign sign-blob or bouncer sign")
	case statement && sc.EnvelopeContent() == nil:
		return nil, errors.New("bundle holds a signature over a file, not a signed statement (a DSSE envelope)")
	}
	var signers []string
	for _, l := range t.layers {
		if !l.hasSigners() {
			continue
		}
		var who string
		switch {
		case vc.PublicKey() != nil:
			who, err = l.verifyKeyed(e, artifact)
		case vc.Certificate() != nil:
			who, err = l.verifyKeyless(e, artifact())
		default:
			err = errors.New("bundle has neither a public key nor a certificate")
		}
		if err != nil {
			if len(t.layers) > 1 {
				return nil, fmt.Errorf("not accepted by %s: %w", l.file, err)
			}
			return nil, err
		}
		signers = append(signers, who)
	}
	return signers, nil
}

// InTotoPayloadType is the DSSE payload type of an in-toto statement.
const InTotoPayloadType = "application/vnd.in-toto+json"

// Subject is a file a signed statement must name: its SHA-256 digest, and
// its name for messages.
type Subject struct {
	Name   string
	SHA256 []byte
}

// VerifyStatement verifies a bundle that holds a DSSE envelope with an
// in-toto statement (what SignStatement and `cosign attest-blob
// --statement` write), under the same signers and rules as VerifyBundle,
// and checks that the statement names each of subjects' digests. It
// returns the statement's exact bytes, the payload the signature covers,
// for the caller to read the rest of it from; and who signed. What else
// the statement must say (its type, every subject and their order) is the
// caller's to check on those bytes.
func (t *Trust) VerifyStatement(bundleJSON []byte, subjects []Subject) (statement []byte, signers []string, err error) {
	switch {
	case len(bundleJSON) == 0:
		return nil, nil, fmt.Errorf("%w: the set's bundle is empty", ErrNoBundle)
	case len(bundleJSON) > maxBundleSize:
		return nil, nil, fmt.Errorf("the set's bundle is larger than %d bytes", maxBundleSize)
	case len(subjects) == 0:
		return nil, nil, errors.New("no files to check the statement against")
	}
	payload, err := PeekStatement(bundleJSON)
	if err != nil {
		return nil, nil, err
	}
	b := &sgbundle.Bundle{}
	if err := b.UnmarshalJSON(bundleJSON); err != nil {
		return nil, nil, fmt.Errorf("not a Sigstore bundle: %w", err)
	}
	ads := make([]verify.ArtifactDigest, len(subjects))
	for i, s := range subjects {
		ads[i] = verify.ArtifactDigest{Algorithm: "sha256", Digest: s.SHA256}
	}
	signers, err = t.verifySigned(b, true, func() verify.ArtifactPolicyOption { return verify.WithArtifactDigests(ads) })
	if err == nil {
		return payload, signers, nil
	}
	// Say which it was: a signature that does not verify, or a good
	// signature over a statement that does not name one of the files.
	if _, serr := t.verifySigned(b, true, verify.WithoutArtifactUnsafe); serr != nil {
		return nil, nil, serr
	}
	named := map[string]bool{}
	var lite struct {
		Subject []struct {
			Digest map[string]string `json:"digest"`
		} `json:"subject"`
	}
	_ = json.Unmarshal(payload, &lite)
	for _, s := range lite.Subject {
		named[strings.ToLower(s.Digest["sha256"])] = true
	}
	for _, s := range subjects {
		if h := hex.EncodeToString(s.SHA256); !named[h] {
			return nil, nil, fmt.Errorf("%s (sha256:%s) is not in the signed statement: it is not a file of the signed set", s.Name, h)
		}
	}
	return nil, nil, err
}

// PeekStatement returns the in-toto statement a DSSE bundle carries,
// without verifying anything. It is for bouncer policy push, to check that
// a bundle signed elsewhere describes the files it is pushed with; nothing
// it returns is to be trusted before VerifyStatement.
func PeekStatement(bundleJSON []byte) ([]byte, error) {
	b := &sgbundle.Bundle{}
	if err := b.UnmarshalJSON(bundleJSON); err != nil {
		return nil, fmt.Errorf("not a Sigstore bundle: %w", err)
	}
	env := b.GetDsseEnvelope()
	if env == nil {
		return nil, errors.New("bundle holds a signature over a file, not a signed statement (a DSSE envelope)")
	}
	if env.PayloadType != InTotoPayloadType {
		return nil, fmt.Errorf("bundle's DSSE payload is %q, not an in-toto statement (%s)", env.PayloadType, InTotoPayloadType)
	}
	return env.Payload, nil
}

// verifyKeyed tries each key of the layer. The bundle's key hint is ignored:
// it is unauthenticated and cosign and Bouncer compute it differently, so
// the signature itself decides.
func (l *layer) verifyKeyed(e verify.SignedEntity, artifact func() verify.ArtifactPolicyOption) (string, error) {
	if len(l.keys) == 0 {
		return "", fmt.Errorf("signed with a key, but %s lists no keys", l.file)
	}
	var errs []string
	for _, k := range l.keys {
		if err := verifyWithKey(k.verifier, e, artifact()); err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", k.name, err))
			continue
		}
		return "key " + k.name, nil
	}
	if len(errs) == 1 {
		return "", fmt.Errorf("signature does not verify with key %s", errs[0])
	}
	return "", fmt.Errorf("signature verifies with none of the %d keys (%s)", len(l.keys), strings.Join(errs, "; "))
}

func verifyWithKey(sv signature.Verifier, e verify.SignedEntity, artifact verify.ArtifactPolicyOption) error {
	key := root.NewExpiringKey(sv, time.Time{}, time.Time{}) // zero: no validity window
	tm := root.NewTrustedPublicKeyMaterial(func(string) (root.TimeConstrainedVerifier, error) { return key, nil })
	// WithNoObserverTimestamps must be the only option: a keyed bundle
	// carries no trusted time, and the key in the trust file has no
	// validity window.
	v, err := verify.NewVerifier(tm, verify.WithNoObserverTimestamps())
	if err != nil {
		return err
	}
	_, err = v.Verify(e, verify.NewPolicy(artifact, verify.WithKey()))
	return err
}

// verifyKeyless checks a certificate bundle against the layer's trusted root
// and identities. It needs a trusted time for the short-lived certificate:
// at least one RFC 3161 timestamp from a timestamping authority in the
// trusted root, or a transparency-log entry from a log in it. Log entries in
// the bundle are always verified when present; SCTs are required when the
// trusted root lists certificate-transparency logs (the public Sigstore
// root does).
func (l *layer) verifyKeyless(e verify.SignedEntity, artifact verify.ArtifactPolicyOption) (string, error) {
	if len(l.identities) == 0 || l.root == nil {
		return "", fmt.Errorf("signed keyless (with a certificate), but %s lists no identities", l.file)
	}
	opts := []verify.VerifierOption{verify.WithObserverTimestamps(1)}
	entries, err := e.TlogEntries()
	if err != nil {
		return "", err
	}
	if len(entries) > 0 {
		opts = append(opts, verify.WithTransparencyLog(1))
	}
	if len(l.root.CTLogs()) > 0 {
		opts = append(opts, verify.WithSignedCertificateTimestamps(1))
	}
	v, err := verify.NewVerifier(l.root, opts...)
	if err != nil {
		return "", err
	}
	popts := make([]verify.PolicyOption, 0, len(l.identities))
	for _, id := range l.identities {
		popts = append(popts, verify.WithCertificateIdentity(id.ci))
	}
	res, err := v.Verify(e, verify.NewPolicy(artifact, popts...))
	if err != nil {
		return "", err
	}
	subject, issuer := "", ""
	if res.Signature != nil && res.Signature.Certificate != nil {
		subject = res.Signature.Certificate.SubjectAlternativeName
		issuer = res.Signature.Certificate.Issuer
	}
	return fmt.Sprintf("identity %s, issuer %s", subject, issuer), nil
}

// CheckPolicies is what `bouncer run` calls before it starts the upstream.
// With require_signed, every file needs a bundle that verifies. Without it,
// a missing bundle is fine, but a bundle that is present is still checked
// when the configuration names signers, and one that fails stops run: a
// stale or foreign bundle beside a policy means the file is not what its
// signer signed. The error names the file and why.
func (t *Trust) CheckPolicies(files []string) error {
	for _, f := range files {
		data, err := statefile.ReadFile(f, maxPolicySize)
		if err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		if err := t.CheckPolicy(f, data); err != nil {
			return err
		}
	}
	return nil
}

// CheckPolicy applies CheckPolicies' rule to one file whose exact bytes the
// caller has already read.
func (t *Trust) CheckPolicy(file string, data []byte) error {
	if !t.RequireSigned() && !t.HasSigners() {
		return nil
	}
	bp := BundlePath(file)
	_, err := t.VerifyBytes(file, data, bp)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrNoBundle):
		if !t.RequireSigned() {
			return nil
		}
		return fmt.Errorf("%s: not signed: %s is missing, and %s requires signed policy; sign the file with a key that trust configuration lists (bouncer sign --key KEY FILE) or use the signed copy your team distributes", file, bp, t.requiredBy())
	}
	return fmt.Errorf("%s: signature check failed: %w (if the file was edited since it was signed, restore the signed version or sign it again with bouncer sign)", file, err)
}

// requiredBy names the trust files that set require_signed.
func (t *Trust) requiredBy() string {
	var fs []string
	for _, l := range t.layers {
		if l.requireSigned {
			fs = append(fs, l.file)
		}
	}
	return strings.Join(fs, " and ")
}
