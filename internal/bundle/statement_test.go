package bundle

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sigstore/sigstore-go/pkg/verify"
)

// setStatement is an in-toto statement naming the files (name, body pairs).
func setStatement(files ...string) []byte {
	var subj []string
	for i := 0; i < len(files); i += 2 {
		subj = append(subj, fmt.Sprintf(`{"name":%q,"digest":{"sha256":"%x"}}`, files[i], sha256.Sum256([]byte(files[i+1]))))
	}
	return []byte(`{"_type":"https://in-toto.io/Statement/v1","subject":[` + strings.Join(subj, ",") +
		`],"predicateType":"https://github.com/bouncer-mcp/bouncer/policy-set/v1","predicate":{"repository":"r.example/p","version":"2026-05-01T12:00:00Z"}}`)
}

func subjectsOf(files ...string) []Subject {
	var out []Subject
	for i := 0; i < len(files); i += 2 {
		sum := sha256.Sum256([]byte(files[i+1]))
		out = append(out, Subject{Name: files[i], SHA256: sum[:]})
	}
	return out
}

// TestSignStatement: a set statement signed with either key type verifies
// under the key, hands back the exact statement bytes, and is refused when
// anything about it is off.
func TestSignStatement(t *testing.T) {
	other := newECKey(t)
	for name, k := range map[string]keyPair{"ecdsa": newECKey(t), "ed25519": newEdKey(t)} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, "team.pub"), k.pub)
			tr := loadTrustFile(t, dir, "keys: [team.pub]\n")
			s, err := ParsePrivateKey(k.priv)
			if err != nil {
				t.Fatal(err)
			}
			stmt := setStatement("a.yaml", "a", "b.yaml", "b")
			b, err := s.SignStatement(stmt)
			if err != nil {
				t.Fatal(err)
			}
			got, signers, err := tr.VerifyStatement(b, subjectsOf("a.yaml", "a", "b.yaml", "b"))
			if err != nil || string(got) != string(stmt) || strings.Join(signers, ";") != "key team.pub" {
				t.Fatalf("VerifyStatement: %q, %v, %v", got, signers, err)
			}
			// Any subset of the statement's files is named in it; which
			// subset is the set is the caller's to check (distribute).
			if _, _, err := tr.VerifyStatement(b, subjectsOf("b.yaml", "b")); err != nil {
				t.Fatalf("a file the statement names: %v", err)
			}

			o, _ := ParsePrivateKey(other.priv)
			foreign, _ := o.SignStatement(stmt)
			fileBundle, _ := s.Bundle(stmt)
			var env map[string]any
			json.Unmarshal(b, &env)
			dsse := env["dsseEnvelope"].(map[string]any)
			dsse["payload"] = base64.StdEncoding.EncodeToString([]byte(strings.Replace(string(stmt), "r.example/p", "r.example/q", 1)))
			tampered, _ := json.Marshal(env)
			dsse["payload"] = base64.StdEncoding.EncodeToString(stmt)
			dsse["payloadType"] = "text/plain"
			otherType, _ := json.Marshal(env)

			for what, c := range map[string]struct {
				bundle   []byte
				subjects []Subject
				want     string
			}{
				"a file not in the statement": {b, subjectsOf("a.yaml", "a", "c.yaml", "c"), "c.yaml (sha256:"},
				"a file changed":              {b, subjectsOf("a.yaml", "a!"), "a.yaml (sha256:"},
				"another key":                 {foreign, subjectsOf("a.yaml", "a"), "signature does not verify with key team.pub"},
				"a file's signature":          {fileBundle, subjectsOf("a.yaml", "a"), "bundle holds a signature over a file, not a signed statement"},
				"the statement edited":        {tampered, subjectsOf("a.yaml", "a"), "signature does not verify with key team.pub"},
				"another payload type":        {otherType, subjectsOf("a.yaml", "a"), `DSSE payload is "text/plain", not an in-toto statement`},
				"no files":                    {b, nil, "no files to check the statement against"},
				"empty bundle":                {nil, subjectsOf("a.yaml", "a"), "no bundle"},
				"garbage":                     {[]byte("{}"), subjectsOf("a.yaml", "a"), "not a Sigstore bundle"},
			} {
				t.Run(what, func(t *testing.T) {
					if _, _, err := tr.VerifyStatement(c.bundle, c.subjects); err == nil || !strings.Contains(err.Error(), c.want) {
						t.Fatalf("VerifyStatement: %v, want %q", err, c.want)
					}
				})
			}
			// A set's signature is not a signature over a file either way round.
			if _, err := tr.VerifyBundle("a.yaml", []byte("a"), b); err == nil || !strings.Contains(err.Error(), "DSSE") {
				t.Fatalf("a set bundle taken as a file's: %v", err)
			}
		})
	}
}

// TestStatementKeyless: a set statement signed keyless (a DSSE envelope with
// a Fulcio-style certificate and a log entry) verifies for the pinned
// identity only.
func TestStatementKeyless(t *testing.T) {
	dir := t.TempDir()
	kl := newKeyless(t, dir, false)
	tr := loadTrustFile(t, dir, "identities:\n  - issuer: "+testIssuer+"\n    subject: "+testSubject+"\ntrusted_root: trusted_root.json\n")
	tr.layers[0].root = noCT{kl.vs}
	stmt := setStatement("a.yaml", "a")
	digests := func() verify.ArtifactPolicyOption {
		return verify.WithArtifactDigests([]verify.ArtifactDigest{{Algorithm: "sha256", Digest: subjectsOf("a.yaml", "a")[0].SHA256}})
	}
	e, err := kl.vs.Attest(testSubject, testIssuer, stmt)
	if err != nil {
		t.Fatal(err)
	}
	signers, err := tr.verifySigned(e, true, digests)
	if err != nil || len(signers) != 1 || !strings.Contains(signers[0], "identity "+testSubject) {
		t.Fatalf("keyless statement: %v, %v", signers, err)
	}
	stranger, err := kl.vs.Attest("https://github.com/evil/repo/.github/workflows/x.yml@refs/heads/main", testIssuer, stmt)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.verifySigned(stranger, true, digests); err == nil {
		t.Fatal("a statement signed by an identity the trust file does not name verified")
	}
	// A plain signature by the pinned identity is not a signed statement.
	plain, err := kl.vs.Sign(testSubject, testIssuer, stmt)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.verifySigned(plain, true, digests); err == nil || !strings.Contains(err.Error(), "not a signed statement") {
		t.Fatalf("a message signature as a statement: %v", err)
	}
}
