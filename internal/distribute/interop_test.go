package distribute

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bouncer-mcp/bouncer/internal/testsupport/need"
)

// TestCraneReadsTheArtifact checks the artifact against crane, the
// reference client of the library it is built on (go install
// github.com/google/go-containerregistry/cmd/crane@v0.22.1; .ci/test
// installs it): crane resolves the tag to the digest Push returned, reads
// the manifest as OCI with our artifactType, and hands out each file by its
// layer's digest. Without crane it skips, and fails under CI.
func TestCraneReadsTheArtifact(t *testing.T) {
	crane := need.Program(t, "crane", "go install github.com/google/go-containerregistry/cmd/crane@v0.22.1")
	run := func(args ...string) []byte {
		t.Helper()
		cmd := exec.Command(crane, args...)
		cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "DOCKER_CONFIG="+t.TempDir())
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("crane %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
		}
		return out
	}
	host := newRegistry(t, nil)
	k := newKey(t)
	files := []File{k.file(t, "base.yaml", baseYAML), k.file(t, "team.yaml", teamYAML)}
	ref := host + "/team/policy:prod"
	dig, err := Push(ctx, ref, files, Options{})
	if err != nil {
		t.Fatal(err)
	}

	if got := strings.TrimSpace(string(run("digest", ref))); got != dig {
		t.Fatalf("crane digest = %s, Push said %s", got, dig)
	}
	var m struct {
		MediaType    string `json:"mediaType"`
		ArtifactType string `json:"artifactType"`
		Config       struct {
			MediaType string `json:"mediaType"`
		} `json:"config"`
		Layers []struct {
			MediaType   string            `json:"mediaType"`
			Digest      string            `json:"digest"`
			Annotations map[string]string `json:"annotations"`
		} `json:"layers"`
	}
	if err := json.Unmarshal(run("manifest", ref), &m); err != nil {
		t.Fatal(err)
	}
	if m.MediaType != ManifestMediaType || m.ArtifactType != ArtifactType || m.Config.MediaType != EmptyMediaType || len(m.Layers) != 4 {
		t.Fatalf("crane manifest: %+v", m)
	}
	want := map[string][]byte{}
	for _, f := range files {
		want[f.Name] = f.Data
		want[f.Name+BundleSuffix] = f.Bundle
	}
	for _, l := range m.Layers {
		title := l.Annotations[TitleAnnotation]
		blob := run("blob", host+"/team/policy@"+l.Digest)
		if !bytes.Equal(blob, want[title]) {
			t.Errorf("crane blob of the layer titled %q: %q", title, blob)
		}
	}
	if m.Layers[0].MediaType != PolicyMediaType || m.Layers[1].MediaType != BundleMediaType {
		t.Errorf("layer media types %s, %s", m.Layers[0].MediaType, m.Layers[1].MediaType)
	}
}

// TestOrasPullsTheFiles checks the title annotations do what the OCI
// artifact guidance says: `oras pull` writes each layer as a file of that
// name. Without oras it skips, and fails under CI.
func TestOrasPullsTheFiles(t *testing.T) {
	oras := need.Program(t, "oras", "go install oras.land/oras/cmd/oras@v1.3.6")
	host := newRegistry(t, nil)
	k := newKey(t)
	files := []File{k.file(t, "base.yaml", baseYAML), k.file(t, "team.yaml", teamYAML)}
	ref := host + "/team/policy:prod"
	if _, err := Push(ctx, ref, files, Options{}); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	cmd := exec.Command(oras, "pull", "--plain-http", "-o", out, ref)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "DOCKER_CONFIG="+t.TempDir())
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("oras pull: %v\n%s", err, b)
	}
	for _, f := range files {
		got, err := os.ReadFile(filepath.Join(out, f.Name))
		if err != nil || !bytes.Equal(got, f.Data) {
			t.Errorf("oras wrote %s: %q, %v", f.Name, got, err)
		}
		got, err = os.ReadFile(filepath.Join(out, f.Name+BundleSuffix))
		if err != nil || !bytes.Equal(got, f.Bundle) {
			t.Errorf("oras wrote %s%s: %v", f.Name, BundleSuffix, err)
		}
		if _, err := k.trust.VerifyFile(filepath.Join(out, f.Name)); err != nil {
			t.Errorf("what oras pulled does not verify: %v", err)
		}
	}
}
