package distribute

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/bouncer-mcp/bouncer/internal/bundle"
)

// The tests run against go-containerregistry's registry on loopback: real
// HTTP, the real distribution API, the real client. A handler wrapped
// around it plays the hostile or broken registry where a test needs one.

func newRegistry(t *testing.T, wrap func(http.Handler) http.Handler) string {
	t.Helper()
	var h http.Handler = registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	if wrap != nil {
		h = wrap(h)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// key is a signing key and the trust configuration that accepts it.
type key struct {
	signer *bundle.Signer
	trust  *bundle.Trust
}

func newKey(t *testing.T) key {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	p8, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	s, err := bundle.ParsePrivateKey(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: p8}))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write(t, filepath.Join(dir, "team.pub"), s.PublicKeyPEM())
	tf := write(t, filepath.Join(dir, "trust.yaml"), []byte("require_signed: true\nkeys: [team.pub]\n"))
	tr, err := bundle.LoadTrust(tf, "")
	if err != nil {
		t.Fatal(err)
	}
	return key{s, tr}
}

func (k key) verifier() Verifier {
	return func(b []byte, files []File) ([]byte, error) {
		subjects := make([]bundle.Subject, len(files))
		for i, f := range files {
			sum := sha256.Sum256(f.Data)
			subjects[i] = bundle.Subject{Name: f.Name, SHA256: sum[:]}
		}
		stmt, _, err := k.trust.VerifyStatement(b, subjects)
		return stmt, err
	}
}

func file(name, body string) File { return File{Name: name, Data: []byte(body)} }

// sign returns the set's bundle for files pushed to repository at version.
func (k key) sign(t *testing.T, repository string, version time.Time, files ...File) []byte {
	t.Helper()
	stmt, err := NewStatement(repository, version, time.Time{}, files)
	if err != nil {
		t.Fatal(err)
	}
	b, err := k.signer.SignStatement(stmt)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// push signs files for ref's repository at version and pushes them, as
// bouncer policy push --key does.
func (k key) push(t *testing.T, ref string, version time.Time, files ...File) string {
	t.Helper()
	repo, err := RepositoryOf(ref, false)
	if err != nil {
		t.Fatal(err)
	}
	d, err := Push(ctx, ref, files, k.sign(t, repo, version, files...), Options{})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// v is a version n hours after a fixed time.
func v(n int) time.Time {
	return time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC).Add(time.Duration(n) * time.Hour)
}

func write(t *testing.T, path string, data []byte) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

const (
	baseYAML = "tools:\n  send_email:\n    exfiltrating: true\n    sink_params: [to]\n"
	teamYAML = "tools:\n  send_email:\n    exfiltrating: true\n    sink_params: [to, cc]\n    trusted_destinations: [ops@example.com]\n"
)

var ctx = context.Background()

// pushRaw stores a manifest and blobs as they are, the way a tool other
// than Bouncer (or an attacker with push rights) could.
func pushRaw(t *testing.T, ref string, man any, blobs ...[]byte) string {
	t.Helper()
	raw, ok := man.([]byte)
	if !ok {
		var err error
		if raw, err = json.Marshal(man); err != nil {
			t.Fatal(err)
		}
	}
	r, err := ParseReference(ref, false)
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{}
	p, err := newPusherForTest(r, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range blobs {
		if err := p.Upload(ctx, r.Context(), static.NewLayer(b, "application/octet-stream")); err != nil {
			t.Fatal(err)
		}
	}
	mt := types.MediaType(ManifestMediaType)
	var probe struct {
		MediaType string `json:"mediaType"`
	}
	if json.Unmarshal(raw, &probe) == nil && probe.MediaType != "" {
		mt = types.MediaType(probe.MediaType)
	}
	if err := p.Put(ctx, r, typedManifest{raw, mt}); err != nil {
		t.Fatal(err)
	}
	return sha256Digest(raw)
}

type typedManifest struct {
	raw []byte
	mt  types.MediaType
}

func (m typedManifest) RawManifest() ([]byte, error)        { return m.raw, nil }
func (m typedManifest) MediaType() (types.MediaType, error) { return m.mt, nil }

// artifactOf builds the manifest Push would write for files and a set
// bundle, as a value a test can change before pushing it with pushRaw.
func artifactOf(t *testing.T, files []File, setBundle []byte) (manifest, [][]byte) {
	t.Helper()
	raw, blobs, err := buildManifest(files, setBundle)
	if err != nil {
		t.Fatal(err)
	}
	var m manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	var bs [][]byte
	for _, b := range blobs {
		bs = append(bs, b.data)
	}
	return m, bs
}

func TestPushFetchInstall(t *testing.T) {
	host := newRegistry(t, nil)
	k := newKey(t)
	files := []File{file("base.yaml", baseYAML), file("team.yaml", teamYAML)}
	ref := host + "/team/policy:prod"
	setBundle := k.sign(t, host+"/team/policy", v(0), files...)
	dig, err := Push(ctx, ref, files, setBundle, Options{})
	if err != nil {
		t.Fatal(err)
	}
	a, err := Fetch(ctx, ref, k.verifier(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if a.Digest != dig || a.Pinned() != host+"/team/policy@"+dig {
		t.Fatalf("fetched %s (%s), pushed %s", a.Digest, a.Pinned(), dig)
	}
	if len(a.Files) != 2 || a.Files[0].Name != "base.yaml" || a.Files[1].Name != "team.yaml" ||
		string(a.Files[1].Data) != teamYAML || !bytes.Equal(a.SetBundle, setBundle) {
		t.Fatalf("fetched files differ: %+v", a.Files)
	}
	if a.Statement == nil || !a.Statement.Version.Equal(v(0)) || a.Statement.Repository != host+"/team/policy" || len(a.Statement.Files) != 2 {
		t.Fatalf("fetched statement %+v", a.Statement)
	}

	// The same files and bundle give the same digest.
	if again, err := Push(ctx, host+"/team/policy:again", files, setBundle, Options{}); err != nil || again != dig {
		t.Fatalf("second push: %s, %v; want %s", again, err, dig)
	}

	dir := filepath.Join(t.TempDir(), "policy")
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	res, err := Install(dir, a, InstallOptions{Private: true, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if res.Unchanged {
		t.Fatal("first install reported unchanged")
	}
	set, err := ReadInstalled(dir)
	if err != nil {
		t.Fatal(err)
	}
	if set.Digest != dig || set.Ref != ref || !set.Installed.Equal(now) || len(set.Paths) != 2 ||
		set.Paths[0] != filepath.Join(set.Dir, "base.yaml") || set.Paths[1] != filepath.Join(set.Dir, "team.yaml") ||
		set.Record.Statement != a.Statement.Digest || !set.Version.Equal(v(0)) {
		t.Fatalf("installed set %+v", set)
	}
	for _, p := range append(set.Paths, filepath.Join(set.Dir, SetBundleName), filepath.Join(set.Dir, RecordName), filepath.Join(dir, highWaterName)) {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, want 0600 in a private directory", p, st.Mode().Perm())
		}
	}
	if got, _ := os.ReadFile(filepath.Join(set.Dir, SetBundleName)); !bytes.Equal(got, setBundle) {
		t.Fatal("the set's bundle is not installed beside the files")
	}
	// The installed set verifies where it lies, as bouncer run checks it.
	vs, err := VerifyInstalled(dir, k.verifier(), Freshness{})
	if err != nil {
		t.Fatalf("installed set does not verify: %v", err)
	}
	if vs.Statement.Digest != a.Statement.Digest || vs.Statement.Files[1].Digest != sha256Digest([]byte(teamYAML)) {
		t.Fatalf("verified statement %+v", vs.Statement)
	}

	// Pulling the same digest again changes nothing.
	before := snapshot(t, dir)
	res, err = Install(dir, a, InstallOptions{Private: true, Now: now.Add(time.Hour)})
	if err != nil || !res.Unchanged {
		t.Fatalf("reinstall: %+v, %v", res, err)
	}
	if after := snapshot(t, dir); after != before {
		t.Fatalf("an unchanged pull changed the directory:\n%s\n---\n%s", before, after)
	}
}

// snapshot describes a directory tree: names, modes, link targets and
// contents, so a test can tell that nothing changed.
func snapshot(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			fmt.Fprintf(&b, "%s: %v\n", p, err)
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		fi, _ := os.Lstat(p)
		switch {
		case fi.Mode()&os.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			fmt.Fprintf(&b, "%s -> %s\n", rel, target)
		case fi.IsDir():
			fmt.Fprintf(&b, "%s/ %v\n", rel, fi.Mode().Perm())
		default:
			data, _ := os.ReadFile(p)
			fmt.Fprintf(&b, "%s %v %x\n", rel, fi.Mode().Perm(), data)
		}
		return nil
	})
	return b.String()
}

func TestDigestPinning(t *testing.T) {
	host := newRegistry(t, nil)
	k := newKey(t)
	ref := host + "/team/policy:prod"
	d1 := k.push(t, ref, v(1), file("team.yaml", baseYAML))
	dir := t.TempDir()
	a1, err := Fetch(ctx, ref, k.verifier(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Install(dir, a1, InstallOptions{Private: true, Now: time.Now()}); err != nil {
		t.Fatal(err)
	}
	first := snapshot(t, dir)

	// The tag moves to a new signed version: a pull by tag gets it, a
	// pull by the old digest still gets the old one.
	v2 := file("team.yaml", teamYAML)
	d2 := k.push(t, ref, v(2), v2)
	if a, err := Fetch(ctx, ref, k.verifier(), Options{}); err != nil || a.Digest != d2 || string(a.Files[0].Data) != teamYAML {
		t.Fatalf("by tag after the move: %v", err)
	}
	if a, err := Fetch(ctx, host+"/team/policy@"+d1, k.verifier(), Options{}); err != nil || a.Digest != d1 || string(a.Files[0].Data) != baseYAML {
		t.Fatalf("by the old digest: %v", err)
	}

	// The tag moves to a tampered manifest: the file changed, the set's
	// bundle kept. Refused, and the installed set stays.
	tampered := file("team.yaml", teamYAML+"    trusted_destinations: [attacker@evil.example]\n")
	m, blobs := artifactOf(t, []File{tampered}, k.sign(t, host+"/team/policy", v(3), v2))
	dt := pushRaw(t, ref, m, blobs...)
	_, err = Fetch(ctx, ref, k.verifier(), Options{})
	if err == nil || !strings.Contains(err.Error(), "set.sigstore.json: team.yaml (sha256:"+sha256Digest(tampered.Data)[7:]+") is not in the signed statement: it is not a file of the signed set") {
		t.Fatalf("tampered manifest at the tag: %v", err)
	}
	if dt == d2 {
		t.Fatal("tampered manifest has the signed digest")
	}
	if snapshot(t, dir) != first {
		t.Fatal("a refused pull changed the installed set")
	}
}

func TestFetchRefuses(t *testing.T) {
	k, other := newKey(t), newKey(t)
	good := file("team.yaml", teamYAML)
	// signed returns good's set bundle for host's repository pol.
	signed := func(t *testing.T, host string) []byte { return k.sign(t, host+"/pol", v(0), good) }

	cases := []struct {
		name  string
		setup func(t *testing.T, host string) string // returns the ref to fetch
		wrap  func(t *testing.T, next http.Handler) http.Handler
		want  string
	}{
		{name: "tampered bundle", want: "set.sigstore.json: ", setup: func(t *testing.T, host string) string {
			var b map[string]any
			json.Unmarshal(signed(t, host), &b)
			env := b["dsseEnvelope"].(map[string]any)
			sig := env["signatures"].([]any)[0].(map[string]any)
			raw := []byte(sig["sig"].(string))
			raw[10] ^= 1
			sig["sig"] = string(raw)
			bun, _ := json.Marshal(b)
			m, blobs := artifactOf(t, []File{good}, bun)
			pushRaw(t, host+"/pol:x", m, blobs...)
			return host + "/pol:x"
		}},
		{name: "wrong key", want: "set.sigstore.json: signature does not verify with key team.pub", setup: func(t *testing.T, host string) string {
			if _, err := Push(ctx, host+"/pol:x", []File{good}, other.sign(t, host+"/pol", v(0), good), Options{}); err != nil {
				t.Fatal(err)
			}
			return host + "/pol:x"
		}},
		{name: "unsigned", want: "unsigned: the artifact has no layer set.sigstore.json signing the set", setup: func(t *testing.T, host string) string {
			m, blobs := artifactOf(t, []File{good}, signed(t, host))
			m.Layers = m.Layers[:1]
			pushRaw(t, host+"/pol:x", m, blobs[:2]...)
			return host + "/pol:x"
		}},
		{name: "each file signed alone, as before", want: "layer 2 (team.yaml.sigstore.json): a bundle other than the set's set.sigstore.json", setup: func(t *testing.T, host string) string {
			fileBundle, err := k.signer.Bundle(good.Data)
			if err != nil {
				t.Fatal(err)
			}
			m, blobs := artifactOf(t, []File{good}, fileBundle)
			m.Layers[1].Annotations[TitleAnnotation] = "team.yaml.sigstore.json"
			pushRaw(t, host+"/pol:x", m, blobs...)
			return host + "/pol:x"
		}},
		{name: "a file's own signature as the set's", want: "set.sigstore.json: bundle holds a signature over a file, not a signed statement", setup: func(t *testing.T, host string) string {
			fileBundle, err := k.signer.Bundle(good.Data)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Push(ctx, host+"/pol:x", []File{good}, fileBundle, Options{}); err != nil {
				t.Fatal(err)
			}
			return host + "/pol:x"
		}},
		{name: "two set bundles", want: "layer 3 (set.sigstore.json): a second set.sigstore.json", setup: func(t *testing.T, host string) string {
			m, blobs := artifactOf(t, []File{good}, signed(t, host))
			m.Layers = append(m.Layers, m.Layers[1])
			pushRaw(t, host+"/pol:x", m, blobs...)
			return host + "/pol:x"
		}},
		{name: "layer of another media type", want: `layer 3 (run.sh): unexpected media type "application/x-sh"`, setup: func(t *testing.T, host string) string {
			m, blobs := artifactOf(t, []File{good}, signed(t, host))
			extra := []byte("#!/bin/sh\n")
			m.Layers = append(m.Layers, descriptor{MediaType: "application/x-sh", Digest: sha256Digest(extra), Size: int64(len(extra)), Annotations: map[string]string{TitleAnnotation: "run.sh"}})
			pushRaw(t, host+"/pol:x", m, append(blobs, extra)...)
			return host + "/pol:x"
		}},
		{name: "another artifact type", want: "not a Bouncer policy artifact: artifactType is application/vnd.example.sbom.v1", setup: func(t *testing.T, host string) string {
			m, blobs := artifactOf(t, []File{good}, signed(t, host))
			m.ArtifactType = "application/vnd.example.sbom.v1"
			pushRaw(t, host+"/pol:x", m, blobs...)
			return host + "/pol:x"
		}},
		{name: "a container image", want: "artifactType is none; config application/vnd.oci.image.config.v1+json", setup: func(t *testing.T, host string) string {
			m, blobs := artifactOf(t, []File{good}, signed(t, host))
			m.ArtifactType = ""
			m.Config = descriptor{MediaType: "application/vnd.oci.image.config.v1+json", Digest: sha256Digest([]byte("{}")), Size: 2}
			pushRaw(t, host+"/pol:x", m, blobs...)
			return host + "/pol:x"
		}},
		{name: "an index", want: "is a application/vnd.oci.image.index.v1+json, not a Bouncer policy artifact", setup: func(t *testing.T, host string) string {
			inner := mustBuild(t, []File{good}, signed(t, host))
			d := pushRaw(t, host+"/pol:inner", inner)
			idx := map[string]any{"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
				"manifests": []any{map[string]any{"mediaType": ManifestMediaType, "digest": d, "size": len(inner)}}}
			pushRaw(t, host+"/pol:x", idx)
			return host + "/pol:x"
		}},
		{name: "a file too large", want: "team.yaml): too large: 5242880 bytes", setup: func(t *testing.T, host string) string {
			m, blobs := artifactOf(t, []File{good}, signed(t, host))
			m.Layers[0].Size = 5 << 20 // the blob need not exist: nothing is fetched
			pushRaw(t, host+"/pol:x", m, blobs...)
			return host + "/pol:x"
		}},
		{name: "a file name that climbs out", want: `file name "../team.yaml"`, setup: func(t *testing.T, host string) string {
			m, blobs := artifactOf(t, []File{good}, signed(t, host))
			m.Layers[0].Annotations[TitleAnnotation] = "../team.yaml"
			pushRaw(t, host+"/pol:x", m, blobs...)
			return host + "/pol:x"
		}},
		{name: "the record's name", want: "reserved for the installer's record", setup: func(t *testing.T, host string) string {
			m, blobs := artifactOf(t, []File{good}, signed(t, host))
			m.Layers[0].Annotations[TitleAnnotation] = "Installed.json"
			pushRaw(t, host+"/pol:x", m, blobs...)
			return host + "/pol:x"
		}},
		{name: "tag not there", want: "not found at registry", setup: func(t *testing.T, host string) string {
			k.push(t, host+"/pol:x", v(0), good)
			return host + "/pol:nope"
		}},
		{name: "no registry named", want: "strict validation requires the registry", setup: func(t *testing.T, host string) string {
			return "team/policy:prod"
		}},
		{name: "no tag named", want: `reference "HOST/pol"`, setup: func(t *testing.T, host string) string {
			return host + "/pol"
		}},
		{
			name: "registry serves other bytes for a layer",
			want: "team.yaml (layer 1): tampered:",
			setup: func(t *testing.T, host string) string {
				k.push(t, host+"/pol:x", v(0), good)
				return host + "/pol:x"
			},
			wrap: func(t *testing.T, next http.Handler) http.Handler {
				target := "/blobs/" + sha256Digest(good.Data)
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, target) {
						rec := httptest.NewRecorder()
						next.ServeHTTP(rec, r)
						body := bytes.Replace(rec.Body.Bytes(), []byte("[to, cc]"), []byte("[to, xx]"), 1)
						for k, v := range rec.Header() {
							w.Header()[k] = v
						}
						w.WriteHeader(rec.Code)
						w.Write(body)
						return
					}
					next.ServeHTTP(w, r)
				})
			},
		},
		{
			name: "registry serves another manifest for the digest",
			want: "tampered: the registry's manifest for sha256:",
			setup: func(t *testing.T, host string) string {
				k.push(t, host+"/pol:x", v(0), good)
				return host + "/pol:x"
			},
			wrap: func(t *testing.T, next http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/manifests/sha256:") {
						rec := httptest.NewRecorder()
						next.ServeHTTP(rec, r)
						body := bytes.Replace(rec.Body.Bytes(), []byte(`"schemaVersion":2`), []byte(`"schemaVersion":2 `), 1)
						w.Header().Set("Content-Type", rec.Header().Get("Content-Type"))
						w.WriteHeader(rec.Code)
						w.Write(body)
						return
					}
					next.ServeHTTP(w, r)
				})
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var wrap func(http.Handler) http.Handler
			if c.wrap != nil {
				wrap = func(h http.Handler) http.Handler { return c.wrap(t, h) }
			}
			host := newRegistry(t, wrap)
			ref := c.setup(t, host)
			_, err := Fetch(ctx, ref, k.verifier(), Options{})
			t.Log(err)
			want := strings.ReplaceAll(c.want, "HOST", host)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("Fetch(%s) = %v, want an error containing %q", ref, err, want)
			}
		})
	}
}

func mustBuild(t *testing.T, files []File, setBundle []byte) []byte {
	t.Helper()
	raw, _, err := buildManifest(files, setBundle)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func TestFetchNeedsAVerifier(t *testing.T) {
	if _, err := Fetch(ctx, "127.0.0.1:1/p:x", nil, Options{}); err == nil || !strings.Contains(err.Error(), "no verifier") {
		t.Fatalf("Fetch without a verifier: %v", err)
	}
}

func TestUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	k := newKey(t)
	start := time.Now()
	_, err = Fetch(ctx, addr+"/team/policy:prod", k.verifier(), Options{})
	if err == nil || !strings.Contains(err.Error(), "registry "+addr+" unreachable") {
		t.Fatalf("Fetch from a closed port: %v", err)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("took %v to give up on a refused connection", d)
	}
	if _, err := Push(ctx, addr+"/team/policy:prod", []File{file("a.yaml", baseYAML)}, k.sign(t, addr+"/team/policy", v(0), file("a.yaml", baseYAML)), Options{}); err == nil || !strings.Contains(err.Error(), "unreachable") {
		t.Fatalf("Push to a closed port: %v", err)
	}
}

// TestCredentials: a registry that wants a password gets it from the Docker
// config's credential helper, as docker, crane and cosign would.
func TestCredentials(t *testing.T) {
	host := newRegistry(t, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if u, p, ok := r.BasicAuth(); !ok || u != "ci" || p != "s3cret" {
				w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
				http.Error(w, `{"errors":[{"code":"UNAUTHORIZED","message":"who are you"}]}`, http.StatusUnauthorized)
				return
			}
			next.ServeHTTP(w, r)
		})
	})
	k := newKey(t)
	files := []File{file("team.yaml", teamYAML)}
	ref := host + "/team/policy:prod"
	setBundle := k.sign(t, host+"/team/policy", v(0), files...)

	// No Docker config: anonymous, refused, and the message says where
	// credentials go.
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("DOCKER_CONFIG", filepath.Join(home, "no-docker"))
	t.Setenv("REGISTRY_AUTH_FILE", filepath.Join(home, "none.json"))
	t.Setenv("XDG_RUNTIME_DIR", home)
	if _, err := Push(ctx, ref, files, setBundle, Options{}); err == nil || !strings.Contains(err.Error(), "refused access (401)") || !strings.Contains(err.Error(), "credHelpers") {
		t.Fatalf("anonymous push: %v", err)
	}

	// A credential helper named in $DOCKER_CONFIG/config.json.
	bin := t.TempDir()
	write(t, filepath.Join(bin, "docker-credential-bouncertest"), []byte(`#!/bin/sh
[ "$1" = get ] || exit 1
read host
echo "{\"ServerURL\":\"$host\",\"Username\":\"ci\",\"Secret\":\"s3cret\"}"
`))
	os.Chmod(filepath.Join(bin, "docker-credential-bouncertest"), 0o755)
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	cfg := filepath.Join(home, "docker")
	write(t, filepath.Join(cfg, "config.json"), []byte(`{"credHelpers": {"`+host+`": "bouncertest"}}`))
	t.Setenv("DOCKER_CONFIG", cfg)
	dig, err := Push(ctx, ref, files, setBundle, Options{})
	if err != nil {
		t.Fatalf("push with the helper's credentials: %v", err)
	}
	a, err := Fetch(ctx, ref, k.verifier(), Options{})
	if err != nil || a.Digest != dig {
		t.Fatalf("fetch with the helper's credentials: %v", err)
	}
}

func TestPlainHTTPGuard(t *testing.T) {
	var reached []string
	next := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		reached = append(reached, r.URL.String())
		return &http.Response{StatusCode: 200, Body: io.NopCloser(strings.NewReader("")), Request: r}, nil
	})
	cases := []struct {
		url, plainHost string
		ok             bool
	}{
		{"https://registry.example/v2/", "", true},
		{"http://127.0.0.1:5000/v2/", "", true},
		{"http://127.9.9.9:5000/v2/", "", true},
		{"http://[::1]:5000/v2/", "", true},
		{"http://localhost:5000/v2/", "", true},
		{"http://10.0.0.5:5000/v2/", "", false}, // go-containerregistry would use plain HTTP here
		{"http://192.168.1.2/v2/", "", false},
		{"http://registry.localhost:5000/v2/", "", false},
		{"http://registry.example/v2/", "", false},
		{"http://10.0.0.5:5000/v2/", "10.0.0.5:5000", true},
		{"http://token.example/token", "10.0.0.5:5000", false}, // the opt-in is for the registry, not a redirect elsewhere
		{"ftp://registry.example/x", "", false},
	}
	for _, c := range cases {
		g := &schemeGuard{next: next, plainHost: c.plainHost}
		reached = nil
		req, _ := http.NewRequest(http.MethodGet, c.url, nil)
		_, err := g.RoundTrip(req)
		if c.ok != (err == nil) || c.ok != (len(reached) == 1) {
			t.Errorf("%s (plain %q): err %v, reached %v", c.url, c.plainHost, err, reached)
		}
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestPushRefuses(t *testing.T) {
	host := newRegistry(t, nil)
	k := newKey(t)
	f := file("team.yaml", teamYAML)
	b := k.sign(t, host+"/pol", v(0), f)
	for name, c := range map[string]struct {
		ref   string
		files []File
		set   []byte
		want  string
	}{
		"by digest":        {host + "/pol@" + sha256Digest(nil), []File{f}, b, "push needs a tag"},
		"no files":         {host + "/pol:x", nil, b, "no policy files"},
		"no set bundle":    {host + "/pol:x", []File{f}, nil, "no bundle signing the set"},
		"same name twice":  {host + "/pol:x", []File{f, {Name: "Team.yaml", Data: f.Data}}, b, `two files named "team.yaml" and "Team.yaml"`},
		"hidden file":      {host + "/pol:x", []File{{Name: ".team.yaml", Data: f.Data}}, b, `file name ".team.yaml"`},
		"a bundle's name":  {host + "/pol:x", []File{{Name: "x.sigstore.json", Data: f.Data}}, b, "can't end in .sigstore.json"},
		"file too large":   {host + "/pol:x", []File{{Name: "a.yaml", Data: make([]byte, MaxFileSize+1)}}, b, "larger than"},
		"bundle too large": {host + "/pol:x", []File{f}, make([]byte, MaxBundleSize+1), "set.sigstore.json: 4194305 bytes, larger than"},
		"registry missing": {"team/policy:prod", []File{f}, b, "strict validation"},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := Push(ctx, c.ref, c.files, c.set, Options{}); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Push: %v, want %q", err, c.want)
			}
		})
	}
}

func newPusherForTest(r name.Reference, o Options) (*remote.Pusher, error) {
	return remote.NewPusher(o.remoteOptions(ctx, r)...)
}

// TestHeadFallback: a registry that does not answer HEAD on manifests (or
// answers without a digest) is read with GET; the digest is then the hash
// of the bytes received, and tampering is still caught.
func TestHeadFallback(t *testing.T) {
	for name, head := range map[string]func(w http.ResponseWriter){
		"405": func(w http.ResponseWriter) { w.WriteHeader(http.StatusMethodNotAllowed) },
		"no digest": func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", ManifestMediaType)
			w.Header().Set("Content-Length", "10")
		},
	} {
		t.Run(name, func(t *testing.T) {
			var heads atomic.Int32
			host := newRegistry(t, func(next http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if r.Method == http.MethodHead && strings.Contains(r.URL.Path, "/manifests/") {
						heads.Add(1)
						head(w)
						return
					}
					next.ServeHTTP(w, r)
				})
			})
			k := newKey(t)
			dig := k.push(t, host+"/team/policy:prod", v(0), file("team.yaml", teamYAML))
			a, err := Fetch(ctx, host+"/team/policy:prod", k.verifier(), Options{})
			if err != nil || a.Digest != dig || heads.Load() == 0 {
				t.Fatalf("Fetch: %v (digest %v, HEADs %d)", err, a, heads.Load())
			}
		})
	}
}

// TestFetchRefusesWhatTheSetDoesNotSay: a registry (or anyone with push
// rights) serving files that each carry the team's signature somewhere,
// but not as the set the signature names, is refused by Fetch itself.
func TestFetchRefusesWhatTheSetDoesNotSay(t *testing.T) {
	host := newRegistry(t, nil)
	k := newKey(t)
	repo := host + "/team/policy"
	base, team, evil := file("base.yaml", baseYAML), file("team.yaml", teamYAML), file("evil.yaml", "tools: {}\n")
	teamSet := k.sign(t, repo, v(1), base, team)
	for _, c := range []struct {
		name  string
		files []File
		set   []byte
		want  string
	}{
		{"a subset", []File{team}, teamSet, "not the signed set: it lists 2 file(s) (base.yaml, team.yaml), the artifact holds 1 (team.yaml)"},
		{"a reorder", []File{team, base}, teamSet, "not the signed set: file 1 is team.yaml, the signed set has base.yaml there"},
		{"a file renamed", []File{base, {Name: "zz.yaml", Data: team.Data}}, teamSet, "not the signed set: file 2 is zz.yaml, the signed set has team.yaml there"},
		{"a foreign file", []File{base, evil}, teamSet, "set.sigstore.json: evil.yaml (sha256:"},
		{"another repository's set", []File{base, evil}, k.sign(t, host+"/team/other", v(2), base, evil), "it was signed for " + host + "/team/other, not " + repo},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, blobs := artifactOf(t, c.files, c.set)
			pushRaw(t, repo+":x", m, blobs...)
			_, err := Fetch(ctx, repo+":x", k.verifier(), Options{})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Fetch: %v, want %q", err, c.want)
			}
		})
	}
}

// TestManifestReadIsCapped: a registry that answers a manifest request
// with more than MaxManifestSize bytes is cut off as the byte after the
// limit arrives, whether the manifest is read by digest after a HEAD that
// claimed a small one, or by tag after a HEAD the registry refused.
func TestManifestReadIsCapped(t *testing.T) {
	const huge = 64 << 20
	k := newKey(t)
	for _, byDigest := range []bool{true, false} {
		t.Run(fmt.Sprint("by digest ", byDigest), func(t *testing.T) {
			var sent atomic.Int64
			var smallDigest string
			host := newRegistry(t, func(next http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if !strings.Contains(r.URL.Path, "/manifests/") || (r.Method != http.MethodHead && r.Method != http.MethodGet) {
						next.ServeHTTP(w, r)
						return
					}
					if r.Method == http.MethodHead {
						if !byDigest {
							w.WriteHeader(http.StatusMethodNotAllowed)
							return
						}
						next.ServeHTTP(w, r) // the real, small manifest's digest
						return
					}
					w.Header().Set("Content-Type", ManifestMediaType)
					if byDigest {
						w.Header().Set("Docker-Content-Digest", smallDigest)
					}
					chunk := bytes.Repeat([]byte(" "), 1<<16)
					for sent.Load() < huge {
						n, err := w.Write(chunk)
						sent.Add(int64(n))
						if err != nil {
							return
						}
					}
				})
			})
			smallDigest = k.push(t, host+"/team/policy:prod", v(0), file("team.yaml", teamYAML))
			_, err := Fetch(ctx, host+"/team/policy:prod", k.verifier(), Options{})
			if !errors.Is(err, ErrManifestTooLarge) || !strings.Contains(err.Error(), "too large: the registry sent a manifest larger than 1048576 bytes") {
				t.Fatalf("Fetch: %v", err)
			}
			if n := sent.Load(); n > 16<<20 {
				t.Fatalf("the registry got %d bytes out before Fetch gave up; the limit is %d", n, MaxManifestSize)
			}
		})
	}
}
