package distribute

import (
	"strings"
	"testing"
	"time"
)

// FuzzParseManifest feeds the manifest checker what a registry could send.
// Whatever it accepts names only plain file names and exactly one bundle,
// the set's, within the limits.
func FuzzParseManifest(f *testing.F) {
	raw, _, err := buildManifest([]File{
		{Name: "base.yaml", Data: []byte(baseYAML)},
		{Name: "team.yaml", Data: []byte(teamYAML)},
	}, []byte("{}"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(raw)
	f.Add([]byte(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[]}`))
	f.Add([]byte(strings.Replace(string(raw), "set.sigstore.json", "team.yaml.sigstore.json", 1)))
	f.Add([]byte(strings.Replace(string(raw), `"base.yaml"`, `"../x"`, 1)))
	f.Fuzz(func(t *testing.T, raw []byte) {
		plan, err := parseManifest(raw)
		if err != nil {
			return
		}
		if len(plan.files) == 0 || len(plan.files) > MaxFiles {
			t.Fatalf("accepted %d files", len(plan.files))
		}
		if plan.bundleAt == 0 || plan.bundle.MediaType != BundleMediaType || plan.bundle.Annotations[TitleAnnotation] != SetBundleName {
			t.Fatalf("accepted the set bundle %+v at %d", plan.bundle, plan.bundleAt)
		}
		total := plan.bundle.Size
		if total > MaxBundleSize || total < 0 {
			t.Fatalf("accepted a bundle of %d bytes", total)
		}
		for _, f := range plan.files {
			if err := CheckName(f.name); err != nil {
				t.Fatalf("accepted a bad name: %v", err)
			}
			if f.data.MediaType != PolicyMediaType {
				t.Fatalf("accepted media type %s", f.data.MediaType)
			}
			if f.data.Size > MaxFileSize || f.data.Size < 0 {
				t.Fatalf("accepted size %d", f.data.Size)
			}
			total += f.data.Size
		}
		if total > MaxTotalSize {
			t.Fatalf("accepted %d bytes in all", total)
		}
	})
}

// FuzzParseStatement feeds the statement reader what a signer could sign
// (a trusted signer's mistake, or another tool's statement). Whatever it
// accepts has plain, distinct file names, SHA-256 digests, a repository and
// a version, and matches the files it names.
func FuzzParseStatement(f *testing.F) {
	files := []File{{Name: "base.yaml", Data: []byte(baseYAML)}, {Name: "team.yaml", Data: []byte(teamYAML)}}
	raw, err := NewStatement("registry.example/team/policy", time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC), time.Time{}, files)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(raw)
	f.Add([]byte(strings.Replace(string(raw), `"base.yaml"`, `"../base.yaml"`, 1)))
	f.Add([]byte(strings.Replace(string(raw), `"sha256"`, `"sha512"`, 1)))
	f.Add([]byte(`{"_type":"https://in-toto.io/Statement/v1","subject":[],"predicateType":"x","predicate":{}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		st, err := ParseStatement(raw)
		if err != nil {
			return
		}
		if st.Repository == "" || st.Version.IsZero() || len(st.Files) == 0 || len(st.Files) > MaxFiles || st.Digest != sha256Digest(raw) {
			t.Fatalf("accepted %+v", st)
		}
		seen := map[string]bool{}
		names := make([]string, len(st.Files))
		digests := make([]string, len(st.Files))
		for i, s := range st.Files {
			if err := CheckName(s.Name); err != nil || seen[strings.ToLower(s.Name)] {
				t.Fatalf("accepted name %q (%v)", s.Name, err)
			}
			seen[strings.ToLower(s.Name)] = true
			if !strings.HasPrefix(s.Digest, "sha256:") || len(s.Digest) != len("sha256:")+64 {
				t.Fatalf("accepted digest %q", s.Digest)
			}
			names[i], digests[i] = s.Name, s.Digest
		}
		if err := st.match(names, digests); err != nil {
			t.Fatalf("a statement does not match its own subjects: %v", err)
		}
	})
}
