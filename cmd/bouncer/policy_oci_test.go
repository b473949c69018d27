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
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/bouncer-mcp/bouncer/internal/bundle"
	"github.com/bouncer-mcp/bouncer/internal/setup"
)

// TestPolicyPullRefusals runs bouncer policy pull against artifacts that
// Bouncer would never push, stored in a real registry on loopback with
// go-containerregistry directly (as another tool, an attacker with push
// rights, or a hostile registry could): a subset of the team's set, the
// set reordered, a file from another artifact with a valid signature, a
// set signed for another repository, an older set, a manifest too large to
// read. Each pull exits 1 naming why, and the installed set is the same,
// byte for byte, before and after. The manifests and statements are
// written out here from the format docs/signed-policy.md describes, not
// with internal/distribute's own builders.
func TestPolicyPullRefusals(t *testing.T) {
	// The registry serves one hostile manifest of its own: 64 MiB of it,
	// after a HEAD that claims a small one, for the tag "huge". sent
	// counts what it managed to write.
	var sent atomic.Int64
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/manifests/huge") {
			reg.ServeHTTP(w, r)
			return
		}
		if r.Method == http.MethodHead {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "application/vnd.oci.image.manifest.v1+json")
		chunk := []byte(strings.Repeat(" ", 1<<16))
		for range 1 << 10 { // 64 MiB
			n, err := w.Write(chunk)
			sent.Add(int64(n))
			if err != nil {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	repo := host + "/team/policy"

	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	t.Setenv("BOUNCER_HOME", home)
	t.Setenv("HOME", dir)
	t.Setenv("DOCKER_CONFIG", filepath.Join(dir, "no-docker"))
	team, other := writeKey(t, dir, "team"), writeKey(t, dir, "other")
	trust := filepath.Join(dir, "trust.yaml")
	writeTestFile(t, trust, "require_signed: true\nkeys: [team.pub]\n")

	base := "get_ticket:\n  exfiltrating: false\n"
	good := "send_email:\n  exfiltrating: true\n  sink_params: [to]\n"
	evil := "send_email:\n  exfiltrating: false\n"
	basePath := writeTestFile(t, filepath.Join(dir, "base.yaml"), base)
	goodPath := writeTestFile(t, filepath.Join(dir, "team.yaml"), good)
	const installedVersion = "2026-05-01T12:00:00Z"
	if st := finish(policyPush([]string{"--key", team, "--version", installedVersion, basePath, goodPath, repo + ":prod"})); st != exitOK {
		t.Fatalf("push: exit %d", st)
	}
	if st := finish(policyPull([]string{"--trust", trust, repo + ":prod"})); st != exitOK {
		t.Fatalf("pull: exit %d", st)
	}
	installed := filepath.Join(home, "policy")
	before := treeOf(t, installed)
	if !strings.Contains(before, "current -> set-") {
		t.Fatalf("nothing installed:\n%s", before)
	}

	// signSet signs, with key, a statement written by hand: files
	// (name, body pairs, in order) for repository at version.
	signSet := func(key, repository, version string, files ...string) string {
		var subj []string
		for i := 0; i < len(files); i += 2 {
			sum := sha256.Sum256([]byte(files[i+1]))
			subj = append(subj, fmt.Sprintf(`{"name":%q,"digest":{"sha256":%q}}`, files[i], hex.EncodeToString(sum[:])))
		}
		stmt := fmt.Sprintf(`{"_type":"https://in-toto.io/Statement/v1","subject":[%s],"predicateType":"https://github.com/bouncer-mcp/bouncer/policy-set/v1","predicate":{"repository":%q,"version":%q}}`,
			strings.Join(subj, ","), repository, version)
		k, err := os.ReadFile(key)
		if err != nil {
			t.Fatal(err)
		}
		s, err := bundle.ParsePrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		b, err := s.SignStatement([]byte(stmt))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	teamSet := signSet(team, repo, installedVersion, "base.yaml", base, "team.yaml", good)
	// Another artifact of the team's, signed with the same key: a set of
	// its own, for another repository.
	otherSet := signSet(team, host+"/team/other", "2026-06-01T00:00:00Z", "base.yaml", base, "evil.yaml", evil)
	newer := "2026-06-01T00:00:00Z"
	set := func(b string) testLayer { return testLayer{bundleMT, "set.sigstore.json", b} }
	fileBundle := func(body string) string {
		k, _ := os.ReadFile(team)
		s, _ := bundle.ParsePrivateKey(k)
		b, err := s.Bundle([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}

	cases := []struct {
		name   string
		layers []testLayer
		edit   func(m map[string]any)
		want   string
	}{
		{"a subset of the set", []testLayer{{policyMT, "team.yaml", good}, set(teamSet)}, nil,
			"not the signed set: it lists 2 file(s) (base.yaml, team.yaml), the artifact holds 1 (team.yaml)"},
		{"the set reordered", []testLayer{{policyMT, "team.yaml", good}, {policyMT, "base.yaml", base}, set(teamSet)}, nil,
			"not the signed set: file 1 is team.yaml, the signed set has base.yaml there (base.yaml, team.yaml)"},
		{"a file from another artifact", []testLayer{{policyMT, "base.yaml", base}, {policyMT, "evil.yaml", evil}, set(signSet(team, repo, newer, "base.yaml", base, "team.yaml", good))}, nil,
			"set.sigstore.json: evil.yaml (sha256:"},
		{"another artifact's set", []testLayer{{policyMT, "base.yaml", base}, {policyMT, "evil.yaml", evil}, set(otherSet)}, nil,
			"not the signed set: it was signed for " + host + "/team/other, not " + repo + " (a set signed for another artifact)"},
		{"an older set", []testLayer{{policyMT, "team.yaml", evil}, set(signSet(team, repo, "2026-04-01T00:00:00Z", "team.yaml", evil))}, nil,
			"older than the newest set installed in " + installed + ": the set is version 2026-04-01T00:00:00Z, older than version 2026-05-01T12:00:00Z; nothing was installed (if going back is what you mean, give --allow-downgrade)"},
		{"the same version, another set", []testLayer{{policyMT, "team.yaml", evil}, set(signSet(team, repo, installedVersion, "team.yaml", evil))}, nil,
			"the same version as the newest set but another statement"},
		{"each file signed alone, as before", []testLayer{{policyMT, "team.yaml", good}, {bundleMT, "team.yaml.sigstore.json", fileBundle(good)}}, nil,
			"layer 2 (team.yaml.sigstore.json): a bundle other than the set's set.sigstore.json"},
		{"unsigned", []testLayer{{policyMT, "team.yaml", good}}, nil,
			"unsigned: the artifact has no layer set.sigstore.json signing the set"},
		{"tampered set bundle", []testLayer{{policyMT, "base.yaml", base}, {policyMT, "team.yaml", good}, set(strings.Replace(teamSet, `"sig":"M`, `"sig":"N`, 1))}, nil,
			"set.sigstore.json: "},
		{"tampered file", []testLayer{{policyMT, "base.yaml", base}, {policyMT, "team.yaml", evil}, set(teamSet)}, nil,
			"set.sigstore.json: team.yaml (sha256:"},
		{"wrong key", []testLayer{{policyMT, "team.yaml", good}, set(signSet(other, repo, newer, "team.yaml", good))}, nil,
			"signature does not verify with key team.pub"},
		{"unexpected layer media type", []testLayer{{policyMT, "team.yaml", good}, set(teamSet), {"application/vnd.oci.image.layer.v1.tar+gzip", "rootfs.tar.gz", "x"}}, nil,
			`layer 3 (rootfs.tar.gz): unexpected media type "application/vnd.oci.image.layer.v1.tar+gzip"`},
		{"file as plain text", []testLayer{{"text/plain", "team.yaml", good}, set(teamSet)}, nil,
			`unexpected media type "text/plain"`},
		{"another artifact type", []testLayer{{policyMT, "team.yaml", good}, set(teamSet)},
			func(m map[string]any) { m["artifactType"] = "application/vnd.cncf.helm.config.v1+json" },
			"not a Bouncer policy artifact: artifactType is application/vnd.cncf.helm.config.v1+json"},
		{"too large", []testLayer{{policyMT, "team.yaml", good}, set(teamSet)},
			func(m map[string]any) { m["layers"].([]any)[0].(map[string]any)["size"] = 64 << 20 },
			"too large"},
		{"signed but does not load", []testLayer{{policyMT, "team.yaml", "send_email:\n  sink_params: to\n"}, set(signSet(team, repo, newer, "team.yaml", "send_email:\n  sink_params: to\n"))}, nil,
			"signed, but this bouncer can't load it: team.yaml:2: "},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tag := repo + ":" + strings.ReplaceAll(c.name, " ", "-")
			tag = strings.NewReplacer(",", "", "'", "").Replace(tag)
			putArtifact(t, tag, c.layers, c.edit)
			st, stderr := captureStderr(t, func() int { return finish(policyPull([]string{"--trust", trust, tag})) })
			t.Log(stderr)
			if st != exitFail || !strings.Contains(stderr, c.want) || !strings.Contains(stderr, "nothing was installed") {
				t.Fatalf("exit %d, stderr %q; want exit 1 and %q", st, stderr, c.want)
			}
			if after := treeOf(t, installed); after != before {
				t.Fatalf("a refused pull changed %s:\n%s\n---\n%s", installed, before, after)
			}
		})
	}

	t.Run("a manifest too large to read", func(t *testing.T) {
		st, stderr := captureStderr(t, func() int { return finish(policyPull([]string{"--trust", trust, repo + ":huge"})) })
		if st != exitFail || !strings.Contains(stderr, "too large: the registry sent a manifest larger than 1048576 bytes; nothing was installed") {
			t.Fatalf("exit %d, stderr %q", st, stderr)
		}
		// The limit holds while reading: what the registry got out before
		// pull hung up is the limit and what the socket buffers hold,
		// nowhere near the 64 MiB it had to send.
		if n := sent.Load(); n > 16<<20 {
			t.Fatalf("the registry sent %d bytes before pull gave up", n)
		}
		if after := treeOf(t, installed); after != before {
			t.Fatalf("a refused pull changed %s:\n%s\n---\n%s", installed, before, after)
		}
	})

	// Going back on purpose: --allow-downgrade installs the older set, and
	// run --policy-dir then takes it as the newest.
	t.Run("allow downgrade", func(t *testing.T) {
		tag := repo + ":older"
		putArtifact(t, tag, []testLayer{{policyMT, "team.yaml", evil}, set(signSet(team, repo, "2026-04-01T00:00:00Z", "team.yaml", evil))}, nil)
		st, stderr := captureStderr(t, func() int {
			return finish(policyPull([]string{"--trust", trust, "--allow-downgrade", tag}))
		})
		if st != exitOK {
			t.Fatalf("exit %d: %s", st, stderr)
		}
		in, err := setup.LoadPolicy(setup.Sources{PolicyDir: installed, Trust: trust, StateDir: home})
		if err != nil || len(in.Files) != 1 || filepath.Base(in.Files[0]) != "team.yaml" {
			t.Fatalf("run --policy-dir after the downgrade: %v, %v", in, err)
		}
	})
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
