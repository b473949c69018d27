package distribute

import (
	"strings"
	"testing"
)

// FuzzParseManifest feeds the manifest checker what a registry could send.
// Whatever it accepts names only plain file names, each paired with its
// bundle, within the limits.
func FuzzParseManifest(f *testing.F) {
	raw, _, err := buildManifest([]File{
		{Name: "base.yaml", Data: []byte(baseYAML), Bundle: []byte("{}")},
		{Name: "team.yaml", Data: []byte(teamYAML), Bundle: []byte("{}")},
	})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(raw)
	f.Add([]byte(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[]}`))
	f.Add([]byte(strings.Replace(string(raw), "team.yaml.sigstore.json", "../x.sigstore.json", 1)))
	f.Fuzz(func(t *testing.T, raw []byte) {
		plan, err := parseManifest(raw)
		if err != nil {
			return
		}
		if len(plan.files) == 0 || len(plan.files) > MaxFiles {
			t.Fatalf("accepted %d files", len(plan.files))
		}
		var total int64
		for _, f := range plan.files {
			if err := CheckName(f.name); err != nil {
				t.Fatalf("accepted a bad name: %v", err)
			}
			if f.data.MediaType != PolicyMediaType || f.bundle.MediaType != BundleMediaType {
				t.Fatalf("accepted media types %s, %s", f.data.MediaType, f.bundle.MediaType)
			}
			if !strings.EqualFold(f.bundle.Annotations[TitleAnnotation], f.name+BundleSuffix) {
				t.Fatalf("paired %s with %s", f.name, f.bundle.Annotations[TitleAnnotation])
			}
			if f.data.Size > MaxFileSize || f.bundle.Size > MaxBundleSize || f.data.Size < 0 || f.bundle.Size < 0 {
				t.Fatalf("accepted sizes %d, %d", f.data.Size, f.bundle.Size)
			}
			total += f.data.Size + f.bundle.Size
		}
		if total > MaxTotalSize {
			t.Fatalf("accepted %d bytes in all", total)
		}
	})
}
