// Package distribute moves signed policy sets between a machine and an OCI
// registry: push stores policy files and the one signature over the set as
// one OCI artifact, fetch resolves a reference to a digest, has the set's
// signature verified and checks that the files are exactly the set it
// names before returning anything, and Install puts a verified set into a
// directory so that a reader sees the old set or the new one, never a mix,
// and never an older set than it has had (unless told to go back).
//
// The package never parses policy and never decides trust: the caller passes
// the verifier (internal/bundle under the trust configuration) and checks
// that the set loads (internal/policy). It imports nothing of Bouncer's own.
// What the signature covers, the set statement, is this package's (see
// statement.go).
//
// # The artifact
//
// One OCI image manifest (application/vnd.oci.image.manifest.v1+json,
// image-spec v1.1) with
//
//   - artifactType application/vnd.bouncer.policy.v1,
//   - the empty config (application/vnd.oci.empty.v1+json, the two bytes {}),
//   - one layer per policy file, media type
//     application/vnd.bouncer.policy.v1+yaml, in load order,
//   - one last layer, the set's Sigstore bundle, media type
//     application/vnd.dev.sigstore.bundle.v0.3+json: a DSSE envelope
//     holding the signed set statement,
//   - each layer's file name in the org.opencontainers.image.title
//     annotation: NAME for a file, set.sigstore.json for the bundle.
//
// That is the layout the OCI artifact guidance describes, so `oras pull`
// writes the files under their names and `crane blob` reads any one of them.
// Artifacts of Bouncer before set signing (a bundle per file, none over the
// set) are refused: each of their files was signed alone.
package distribute

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// Media types of the artifact. See the package documentation and
// docs/signed-policy.md.
const (
	// ManifestMediaType is the only manifest type a pull accepts.
	ManifestMediaType = "application/vnd.oci.image.manifest.v1+json"
	// ArtifactType names a Bouncer policy set in the manifest's artifactType.
	ArtifactType = "application/vnd.bouncer.policy.v1"
	// EmptyMediaType is the config's media type: the OCI empty descriptor.
	EmptyMediaType = "application/vnd.oci.empty.v1+json"
	// PolicyMediaType is a policy file's layer: its exact bytes.
	PolicyMediaType = "application/vnd.bouncer.policy.v1+yaml"
	// BundleMediaType is a Sigstore bundle's layer (the type Sigstore
	// registers for v0.3 bundles).
	BundleMediaType = "application/vnd.dev.sigstore.bundle.v0.3+json"
	// TitleAnnotation carries a layer's file name.
	TitleAnnotation = "org.opencontainers.image.title"
	// BundleSuffix ends a bundle's name; no policy file's name may end in
	// it.
	BundleSuffix = ".sigstore.json"
	// SetBundleName is the set bundle's layer title and its file name in
	// an installed set.
	SetBundleName = "set" + BundleSuffix
)

// emptyConfig is the content of the OCI empty descriptor.
var emptyConfig = []byte("{}")

// Limits on what is pushed and what a pull will fetch. A real policy set is
// a few files of a few kilobytes.
const (
	// MaxManifestSize bounds the manifest (registries commonly cap it at 4 MiB).
	MaxManifestSize = 1 << 20
	// MaxFiles bounds the number of policy files in one artifact.
	MaxFiles = 64
	// MaxFileSize bounds one policy file (internal/policy's own bound).
	MaxFileSize = 4 << 20
	// MaxBundleSize bounds the set's bundle (internal/bundle's own bound).
	MaxBundleSize = 4 << 20
	// MaxTotalSize bounds all layers together.
	MaxTotalSize = 32 << 20
)

// RecordName is the file in an installed set that records what was
// installed. No file in an artifact may have this name.
const RecordName = "installed.json"

// File is one policy file of a set.
type File struct {
	// Name is the file's base name, as it is installed.
	Name string
	// Data is the file's exact bytes.
	Data []byte
}

// descriptor and manifest are the parts of the OCI structures this package
// writes and reads. Unknown fields of a fetched manifest are ignored (its
// digest still covers them).
type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

type manifest struct {
	SchemaVersion int               `json:"schemaVersion"`
	MediaType     string            `json:"mediaType"`
	ArtifactType  string            `json:"artifactType,omitempty"`
	Config        descriptor        `json:"config"`
	Layers        []descriptor      `json:"layers"`
	Annotations   map[string]string `json:"annotations,omitempty"`
}

func sha256Digest(b []byte) string {
	h := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(h[:])
}

// fileName is what a policy file may be called: a plain base name, no
// leading dot (so it never clashes with the installer's own entries), no
// path separator, no control or shell-unfriendly characters.
var fileName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._+-]{0,127}$`)

// CheckName reports whether name can be a policy file of an artifact. Push
// and pull apply the same rule, so what one pushes the other installs.
func CheckName(name string) error {
	switch {
	case !fileName.MatchString(name):
		return fmt.Errorf("file name %q: must be a plain name of letters, digits, '.', '_', '+' or '-' (at most 128, not starting with '.')", name)
	case strings.HasSuffix(name, BundleSuffix):
		return fmt.Errorf("file name %q: a policy file can't end in %s (that names a bundle)", name, BundleSuffix)
	case strings.EqualFold(name, RecordName):
		return fmt.Errorf("file name %q: reserved for the installer's record", name)
	}
	return nil
}

// checkFiles applies the name and size rules to a set's files, names
// compared without case (a macOS volume would fold two into one file).
func checkFiles(files []File) error {
	if len(files) == 0 {
		return errors.New("no policy files")
	}
	if len(files) > MaxFiles {
		return fmt.Errorf("%d policy files; at most %d go in one artifact", len(files), MaxFiles)
	}
	seen := map[string]string{}
	var total int64
	for _, f := range files {
		if err := CheckName(f.Name); err != nil {
			return err
		}
		if prev, ok := seen[strings.ToLower(f.Name)]; ok {
			return fmt.Errorf("two files named %q and %q; names must differ (ignoring case)", prev, f.Name)
		}
		seen[strings.ToLower(f.Name)] = f.Name
		if len(f.Data) > MaxFileSize {
			return fmt.Errorf("%s: %d bytes, larger than %d", f.Name, len(f.Data), MaxFileSize)
		}
		total += int64(len(f.Data))
	}
	if total > MaxTotalSize {
		return fmt.Errorf("%d bytes in all, more than %d", total, MaxTotalSize)
	}
	return nil
}

// blob is one piece of content the manifest refers to.
type blob struct {
	mediaType string
	data      []byte
}

// checkSetBundle applies checkFiles' limits to the set's bundle too.
func checkSetBundle(files []File, setBundle []byte) error {
	if err := checkFiles(files); err != nil {
		return err
	}
	if len(setBundle) == 0 {
		return errors.New("no bundle signing the set")
	}
	if len(setBundle) > MaxBundleSize {
		return fmt.Errorf("%s: %d bytes, larger than %d", SetBundleName, len(setBundle), MaxBundleSize)
	}
	total := int64(len(setBundle))
	for _, f := range files {
		total += int64(len(f.Data))
	}
	if total > MaxTotalSize {
		return fmt.Errorf("%d bytes in all, more than %d", total, MaxTotalSize)
	}
	return nil
}

// buildManifest returns the manifest JSON for files and the set's bundle,
// and the blobs it refers to (the config first). The output depends only
// on its input, so pushing the same files and bundle twice gives the same
// digest.
func buildManifest(files []File, setBundle []byte) ([]byte, []blob, error) {
	if err := checkSetBundle(files, setBundle); err != nil {
		return nil, nil, err
	}
	m := manifest{
		SchemaVersion: 2,
		MediaType:     ManifestMediaType,
		ArtifactType:  ArtifactType,
		Config:        descriptor{MediaType: EmptyMediaType, Digest: sha256Digest(emptyConfig), Size: int64(len(emptyConfig))},
		Layers:        []descriptor{},
	}
	blobs := []blob{{EmptyMediaType, emptyConfig}}
	add := func(mt, title string, data []byte) {
		m.Layers = append(m.Layers, descriptor{
			MediaType:   mt,
			Digest:      sha256Digest(data),
			Size:        int64(len(data)),
			Annotations: map[string]string{TitleAnnotation: title},
		})
		blobs = append(blobs, blob{mt, data})
	}
	for _, f := range files {
		add(PolicyMediaType, f.Name, f.Data)
	}
	add(BundleMediaType, SetBundleName, setBundle)
	raw, err := json.Marshal(m)
	if err != nil {
		return nil, nil, err
	}
	return raw, blobs, nil
}

// layerPlan is a checked manifest: the layers to fetch.
type layerPlan struct {
	files    []planFile
	bundle   descriptor // the set's bundle
	bundleAt int        // its layer index, for messages
}

type planFile struct {
	name string
	data descriptor
	at   int // layer index, for messages
}

// parseManifest checks a fetched manifest against the format above, before
// any layer is fetched: its media types, names and sizes, and that it
// holds one bundle, the set's. Anything else in it is refused.
func parseManifest(raw []byte) (*layerPlan, error) {
	if len(raw) > MaxManifestSize {
		return nil, fmt.Errorf("manifest of %d bytes is too large (at most %d)", len(raw), MaxManifestSize)
	}
	var m manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("manifest is not JSON: %v", err)
	}
	if m.SchemaVersion != 2 || m.MediaType != ManifestMediaType {
		return nil, fmt.Errorf("unexpected manifest (schemaVersion %d, mediaType %q); want an OCI image manifest %s", m.SchemaVersion, m.MediaType, ManifestMediaType)
	}
	if m.ArtifactType != ArtifactType {
		what := m.ArtifactType
		if what == "" {
			what = "none; config " + m.Config.MediaType
		}
		return nil, fmt.Errorf("not a Bouncer policy artifact: artifactType is %s, want %s", what, ArtifactType)
	}
	if m.Config.MediaType != EmptyMediaType {
		return nil, fmt.Errorf("unexpected config media type %q, want %s", m.Config.MediaType, EmptyMediaType)
	}
	plan := &layerPlan{}
	byName := map[string]bool{} // lower-case policy names
	var total int64
	for i, l := range m.Layers {
		title := l.Annotations[TitleAnnotation]
		where := fmt.Sprintf("layer %d", i+1)
		if title != "" {
			where += fmt.Sprintf(" (%s)", title)
		}
		if !strings.HasPrefix(l.Digest, "sha256:") || len(l.Digest) != len("sha256:")+64 {
			return nil, fmt.Errorf("%s: digest %q is not a sha256 digest", where, l.Digest)
		}
		if _, err := hex.DecodeString(l.Digest[len("sha256:"):]); err != nil {
			return nil, fmt.Errorf("%s: digest %q is not a sha256 digest", where, l.Digest)
		}
		if l.Size < 0 {
			return nil, fmt.Errorf("%s: negative size", where)
		}
		total += l.Size
		if total > MaxTotalSize {
			return nil, fmt.Errorf("too large: the layers add up to more than %d bytes", MaxTotalSize)
		}
		if title == "" {
			return nil, fmt.Errorf("%s: no %s annotation naming the file", where, TitleAnnotation)
		}
		switch l.MediaType {
		case PolicyMediaType:
			if err := CheckName(title); err != nil {
				return nil, fmt.Errorf("%s: %v", where, err)
			}
			key := strings.ToLower(title)
			if byName[key] {
				return nil, fmt.Errorf("%s: a second file named %s", where, title)
			}
			if l.Size > MaxFileSize {
				return nil, fmt.Errorf("%s: too large: %d bytes (a policy file is at most %d)", where, l.Size, MaxFileSize)
			}
			byName[key] = true
			plan.files = append(plan.files, planFile{name: title, data: l, at: i + 1})
		case BundleMediaType:
			if title != SetBundleName {
				return nil, fmt.Errorf("%s: a bundle other than the set's %s: this artifact signs each file alone, as Bouncer did before sets were signed whole; push the set again with this bouncer (bouncer policy push --key)", where, SetBundleName)
			}
			if plan.bundleAt != 0 {
				return nil, fmt.Errorf("%s: a second %s", where, SetBundleName)
			}
			if l.Size > MaxBundleSize {
				return nil, fmt.Errorf("%s: too large: %d bytes (a bundle is at most %d)", where, l.Size, MaxBundleSize)
			}
			plan.bundle, plan.bundleAt = l, i+1
		default:
			return nil, fmt.Errorf("%s: unexpected media type %q (a policy artifact holds only %s and %s layers)", where, l.MediaType, PolicyMediaType, BundleMediaType)
		}
	}
	if len(plan.files) == 0 {
		return nil, errors.New("the artifact holds no policy file")
	}
	if len(plan.files) > MaxFiles {
		return nil, fmt.Errorf("too many files: %d policy files (at most %d)", len(plan.files), MaxFiles)
	}
	if plan.bundleAt == 0 {
		return nil, fmt.Errorf("unsigned: the artifact has no layer %s signing the set", SetBundleName)
	}
	return plan, nil
}
