package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/bouncer-mcp/bouncer/internal/bundle"
)

// TestPolicyPullRefusals runs bouncer policy pull against artifacts that
// Bouncer would never push, stored in a real registry on loopback with
// go-containerregistry directly (as another tool, or an attacker with push
// rights, could): each pull exits 1 naming why, and the installed set is
// the same, byte for byte, before and after. The manifests are written out
// here from the format docs/signed-policy.md describes, not with
// internal/distribute's own builder.
func TestPolicyPullRefusals(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")

	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	t.Setenv("BOUNCER_HOME", home)
	t.Setenv("HOME", dir)
	t.Setenv("DOCKER_CONFIG", filepath.Join(dir, "no-docker"))
	team, other := writeKey(t, dir, "team"), writeKey(t, dir, "other")
	trust := filepath.Join(dir, "trust.yaml")
	writeTestFile(t, trust, "require_signed: true\nkeys: [team.pub]\n")

	good := "send_email:\n  exfiltrating: true\n  sink_params: [to]\n"
	goodPath := writeTestFile(t, filepath.Join(dir, "team.yaml"), good)
	if st := policyPush([]string{"--key", team, goodPath, host + "/team/policy:prod"}); st != exitOK {
		t.Fatalf("push: exit %d", st)
	}
	if st := policyPull([]string{"--trust", trust, host + "/team/policy:prod"}); st != exitOK {
		t.Fatalf("pull: exit %d", st)
	}
	installed := filepath.Join(home, "policy")
	before := treeOf(t, installed)
	if !strings.Contains(before, "current -> set-") {
		t.Fatalf("nothing installed:\n%s", before)
	}

	sign := func(key, body string) string {
		k, err := os.ReadFile(key)
		if err != nil {
			t.Fatal(err)
		}
		s, err := bundle.ParsePrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		b, err := s.Bundle([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	goodBundle := sign(team, good)

	cases := []struct {
		name   string
		layers []testLayer
		edit   func(m map[string]any)
		want   string
	}{
		{"missing bundle", []testLayer{{policyMT, "team.yaml", good}}, nil,
			"team.yaml: missing bundle: the artifact has no layer team.yaml.sigstore.json"},
		{"tampered bundle", []testLayer{{policyMT, "team.yaml", good}, {bundleMT, "team.yaml.sigstore.json", strings.Replace(goodBundle, `"signature":"M`, `"signature":"N`, 1)}}, nil,
			"team.yaml: bundle team.yaml.sigstore.json: "},
		{"tampered file", []testLayer{{policyMT, "team.yaml", good + "  trusted_destinations: [attacker@evil.example]\n"}, {bundleMT, "team.yaml.sigstore.json", goodBundle}}, nil,
			"signature does not verify with key team.pub"},
		{"wrong key", []testLayer{{policyMT, "team.yaml", good}, {bundleMT, "team.yaml.sigstore.json", sign(other, good)}}, nil,
			"signature does not verify with key team.pub"},
		{"unexpected layer media type", []testLayer{{policyMT, "team.yaml", good}, {bundleMT, "team.yaml.sigstore.json", goodBundle}, {"application/vnd.oci.image.layer.v1.tar+gzip", "rootfs.tar.gz", "x"}}, nil,
			`layer 3 (rootfs.tar.gz): unexpected media type "application/vnd.oci.image.layer.v1.tar+gzip"`},
		{"file as plain text", []testLayer{{"text/plain", "team.yaml", good}, {bundleMT, "team.yaml.sigstore.json", goodBundle}}, nil,
			`unexpected media type "text/plain"`},
		{"another artifact type", []testLayer{{policyMT, "team.yaml", good}, {bundleMT, "team.yaml.sigstore.json", goodBundle}},
			func(m map[string]any) { m["artifactType"] = "application/vnd.cncf.helm.config.v1+json" },
			"not a Bouncer policy artifact: artifactType is application/vnd.cncf.helm.config.v1+json"},
		{"too large", []testLayer{{policyMT, "team.yaml", good}, {bundleMT, "team.yaml.sigstore.json", goodBundle}},
			func(m map[string]any) { m["layers"].([]any)[0].(map[string]any)["size"] = 64 << 20 },
			"too large"},
		{"signed but does not load", []testLayer{{policyMT, "team.yaml", "send_email:\n  sink_params: to\n"}, {bundleMT, "team.yaml.sigstore.json", sign(team, "send_email:\n  sink_params: to\n")}}, nil,
			"signed, but this bouncer can't load it: team.yaml:2: "},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tag := host + "/team/policy:" + strings.ReplaceAll(c.name, " ", "-")
			putArtifact(t, tag, c.layers, c.edit)
			st, stderr := captureStderr(t, func() int { return policyPull([]string{"--trust", trust, tag}) })
			if st != exitFail || !strings.Contains(stderr, c.want) || !strings.Contains(stderr, "nothing was installed") {
				t.Fatalf("exit %d, stderr %q; want exit 1 and %q", st, stderr, c.want)
			}
			if after := treeOf(t, installed); after != before {
				t.Fatalf("a refused pull changed %s:\n%s\n---\n%s", installed, before, after)
			}
		})
	}
}

const (
	policyMT = "application/vnd.bouncer.policy.v1+yaml"
	bundleMT = "application/vnd.dev.sigstore.bundle.v0.3+json"
)

type testLayer struct{ mediaType, title, data string }

// putArtifact writes the policy artifact layout by hand: an OCI image
// manifest with artifactType, the empty config, a titled layer per file.
func putArtifact(t *testing.T, ref string, layers []testLayer, edit func(map[string]any)) {
	t.Helper()
	r, err := name.NewTag(ref)
	if err != nil {
		t.Fatal(err)
	}
	up := func(data []byte) string {
		if err := remote.WriteLayer(r.Context(), static.NewLayer(data, "application/octet-stream")); err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		return "sha256:" + hex.EncodeToString(sum[:])
	}
	m := map[string]any{
		"schemaVersion": 2,
		"mediaType":     "application/vnd.oci.image.manifest.v1+json",
		"artifactType":  "application/vnd.bouncer.policy.v1",
		"config":        map[string]any{"mediaType": "application/vnd.oci.empty.v1+json", "digest": up([]byte("{}")), "size": 2},
	}
	ls := []any{}
	for _, l := range layers {
		ls = append(ls, map[string]any{"mediaType": l.mediaType, "digest": up([]byte(l.data)), "size": len(l.data),
			"annotations": map[string]any{"org.opencontainers.image.title": l.title}})
	}
	m["layers"] = ls
	if edit != nil {
		edit(m)
	}
	raw, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Put(r, ociManifest(raw)); err != nil {
		t.Fatal(err)
	}
}

type ociManifest []byte

func (m ociManifest) RawManifest() ([]byte, error) { return m, nil }
func (m ociManifest) MediaType() (types.MediaType, error) {
	return types.OCIManifestSchema1, nil
}

func writeKey(t *testing.T, dir, name string) string {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	p8, _ := x509.MarshalPKCS8PrivateKey(k)
	der, _ := x509.MarshalPKIXPublicKey(&k.PublicKey)
	writeTestFile(t, filepath.Join(dir, name+".pub"), string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})))
	return writeTestFile(t, filepath.Join(dir, name+".pem"), string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: p8})))
}

func writeTestFile(t *testing.T, path, body string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// treeOf lists a directory tree with link targets and file contents.
func treeOf(t *testing.T, dir string) string {
	t.Helper()
	var lines []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(dir, p)
		fi, _ := os.Lstat(p)
		switch {
		case fi.Mode()&os.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			lines = append(lines, rel+" -> "+target)
		case fi.IsDir():
			lines = append(lines, fmt.Sprintf("%s/ %v", rel, fi.Mode()))
		default:
			b, _ := os.ReadFile(p)
			lines = append(lines, fmt.Sprintf("%s %v %q", rel, fi.Mode(), b))
		}
		return nil
	})
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// captureStderr runs f with os.Stderr going to a pipe and returns what it
// wrote.
func captureStderr(t *testing.T, f func() int) (int, string) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stderr
	os.Stderr = w
	done := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(r)
		done <- b
	}()
	status := f()
	os.Stderr = old
	w.Close()
	return status, string(<-done)
}
