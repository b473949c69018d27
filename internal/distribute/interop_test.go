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
	files := []File{file("base.yaml", baseYAML), file("team.yaml", teamYAML)}
	ref := host + "/team/policy:prod"
	setBundle := k.sign(t, host+"/team/policy", v(0), files...)
	dig, err := Push(ctx, ref, files, setBundle, Options{})
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
	if m.MediaType != ManifestMediaType || m.ArtifactType != ArtifactType || m.Config.MediaType != EmptyMediaType || len(m.Layers) != 3 {
		t.Fatalf("crane manifest: %+v", m)
	}
	want := map[string][]byte{SetBundleName: setBundle}
	for _, f := range files {
		want[f.Name] = f.Data
	}
	for _, l := range m.Layers {
		title := l.Annotations[TitleAnnotation]
		blob := run("blob", host+"/team/policy@"+l.Digest)
		if !bytes.Equal(blob, want[title]) {
			t.Errorf("crane blob of the layer titled %q: %q", title, blob)
		}
	}
	if m.Layers[0].MediaType != PolicyMediaType || m.Layers[1].MediaType != PolicyMediaType || m.Layers[2].MediaType != BundleMediaType {
		t.Errorf("layer media types %s, %s, %s", m.Layers[0].MediaType, m.Layers[1].MediaType, m.Layers[2].MediaType)
	}
}

// TestOrasPullsTheFiles checks the title annotations do what the OCI
// artifact guidance says: `oras pull` writes each layer as a file of that
// name, and what it writes verifies as the signed set. Without oras it
// skips, and fails under CI.
func TestOrasPullsTheFiles(t *testing.T) {
	oras := need.Program(t, "oras", "go install oras.land/oras/cmd/oras@v1.3.6")
	host := newRegistry(t, nil)
	k := newKey(t)
	files := []File{file("base.yaml", baseYAML), file("team.yaml", teamYAML)}
	ref := host + "/team/policy:prod"
	setBundle := k.sign(t, host+"/team/policy", v(0), files...)
	if _, err := Push(ctx, ref, files, setBundle, Options{}); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	cmd := exec.Command(oras, "pull", "--plain-http", "-o", out, ref)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "DOCKER_CONFIG="+t.TempDir())
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("oras pull: %v\n%s", err, b)
	}
	var pulled []File
	for _, f := range files {
		got, err := os.ReadFile(filepath.Join(out, f.Name))
		if err != nil || !bytes.Equal(got, f.Data) {
			t.Errorf("oras wrote %s: %q, %v", f.Name, got, err)
		}
		pulled = append(pulled, File{Name: f.Name, Data: got})
	}
	got, err := os.ReadFile(filepath.Join(out, SetBundleName))
	if err != nil || !bytes.Equal(got, setBundle) {
		t.Fatalf("oras wrote %s: %v", SetBundleName, err)
	}
	// What oras pulled is the signed set.
	stmt, err := k.verifier()(got, pulled)
	if err != nil {
		t.Fatalf("what oras pulled does not verify: %v", err)
	}
	st, err := ParseStatement(stmt)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Match(host+"/team/policy", pulled); err != nil {
		t.Fatalf("what oras pulled is not the signed set: %v", err)
	}
}
