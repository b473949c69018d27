package distribute

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Options say how to reach the registry.
type Options struct {
	// PlainHTTP allows plain HTTP to the registry named in the reference
	// (TLS is still tried first). Without it, plain HTTP is used only for
	// a loopback registry (localhost, 127.0.0.0/8, ::1); everything else,
	// private addresses included, must speak HTTPS, and a redirect or token
	// service on plain HTTP elsewhere is refused.
	PlainHTTP bool
	// Keychain finds credentials; nil means authn.DefaultKeychain (the
	// Docker config, ~/.docker/config.json or $DOCKER_CONFIG, with its
	// credential helpers, as crane and cosign read it).
	Keychain authn.Keychain
	// Transport is the HTTP transport under the plain-HTTP guard; nil
	// means remote.DefaultTransport.
	Transport http.RoundTripper
	// UserAgent is sent to the registry.
	UserAgent string
}

// ParseReference parses a registry reference. It must name its registry
// and a tag or digest: "registry.example/team/policy:prod" or
// "...@sha256:HEX". A bare "team/policy" would silently mean Docker Hub's
// library and "latest", which is never what a team that pins its policy
// means.
func ParseReference(ref string, plainHTTP bool) (name.Reference, error) {
	opts := []name.Option{name.StrictValidation}
	if plainHTTP {
		opts = append(opts, name.Insecure)
	}
	var r name.Reference
	var err error
	if strings.Contains(ref, "@") {
		r, err = name.NewDigest(ref, opts...)
	} else {
		r, err = name.NewTag(ref, opts...)
	}
	if err != nil {
		return nil, fmt.Errorf("reference %q: %v (write REGISTRY/REPOSITORY:TAG or REGISTRY/REPOSITORY@sha256:DIGEST)", ref, err)
	}
	return r, nil
}

func (o Options) remoteOptions(ctx context.Context, ref name.Reference) []remote.Option {
	kc := o.Keychain
	if kc == nil {
		kc = authn.DefaultKeychain
	}
	base := o.Transport
	if base == nil {
		base = remote.DefaultTransport
	}
	g := &schemeGuard{next: base}
	if o.PlainHTTP {
		g.plainHost = ref.Context().RegistryStr()
	}
	opts := []remote.Option{
		remote.WithContext(ctx),
		remote.WithAuthFromKeychain(kc),
		remote.WithTransport(manifestCap{g}),
	}
	if o.UserAgent != "" {
		opts = append(opts, remote.WithUserAgent(o.UserAgent))
	}
	return opts
}

// schemeGuard refuses plain-HTTP requests except to a loopback host or to
// the one registry the user allowed it for. It sits under go-containerregistry's
// own transports, so it sees every request: the registry's, a token
// service's and a redirect's.
type schemeGuard struct {
	next      http.RoundTripper
	plainHost string // host:port allowed on plain HTTP, or ""
}

// ErrPlainHTTP is wrapped by the error for a refused plain-HTTP request.
var ErrPlainHTTP = errors.New("plain HTTP refused")

func (g *schemeGuard) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Scheme != "https" {
		if !(r.URL.Scheme == "http" && (IsLoopback(r.URL.Hostname()) || (g.plainHost != "" && r.URL.Host == g.plainHost))) {
			return nil, fmt.Errorf("%w: %s://%s is not a loopback address; use HTTPS, or give --plain-http to allow it for the registry you named", ErrPlainHTTP, r.URL.Scheme, r.URL.Host)
		}
	}
	return g.next.RoundTrip(r)
}

// IsLoopback reports whether host (no port) is "localhost" or a loopback
// IP literal. Other names are not resolved: whether they lead to this
// machine is DNS's say, not the name's.
func IsLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// manifestCap bounds what is read of a manifest while it is read.
// go-containerregistry reads up to 100 MiB of a manifest before it hands
// it over; a registry that answers with more than MaxManifestSize bytes
// gets ErrManifestTooLarge as soon as the byte after the limit arrives.
// Like schemeGuard it sits under go-containerregistry's transports, so it
// sees the manifest requests by tag, by digest and after a failed HEAD.
type manifestCap struct{ next http.RoundTripper }

// ErrManifestTooLarge is wrapped when a registry sends a manifest larger
// than MaxManifestSize.
var ErrManifestTooLarge = fmt.Errorf("manifest larger than %d bytes", MaxManifestSize)

func (c manifestCap) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := c.next.RoundTrip(r)
	if err == nil && r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/manifests/") {
		resp.Body = &cappedBody{ReadCloser: resp.Body, limit: MaxManifestSize}
	}
	return resp, err
}

// cappedBody reads at most limit+1 bytes of a body, and fails once the
// byte past limit is read.
type cappedBody struct {
	io.ReadCloser
	limit, n int64
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if room := b.limit + 1 - b.n; int64(len(p)) > room {
		p = p[:room]
	}
	n, err := b.ReadCloser.Read(p)
	b.n += int64(n)
	if b.n > b.limit {
		return n, ErrManifestTooLarge
	}
	return n, err
}

// rawManifest is a manifest to PUT as it is.
type rawManifest []byte

func (m rawManifest) RawManifest() ([]byte, error)        { return m, nil }
func (m rawManifest) MediaType() (types.MediaType, error) { return ManifestMediaType, nil }

// Push stores files and the set's bundle (setBundle, over the statement
// NewStatement made for them) as one policy artifact at ref (a tag) and
// returns the manifest's digest. Blobs are uploaded first and the manifest
// last, so the tag never points at an artifact whose layers are missing.
func Push(ctx context.Context, ref string, files []File, setBundle []byte, o Options) (string, error) {
	r, err := ParseReference(ref, o.PlainHTTP)
	if err != nil {
		return "", err
	}
	if _, ok := r.(name.Tag); !ok {
		return "", fmt.Errorf("reference %q: push needs a tag (REGISTRY/REPOSITORY:TAG), not a digest", ref)
	}
	raw, blobs, err := buildManifest(files, setBundle)
	if err != nil {
		return "", err
	}
	p, err := remote.NewPusher(o.remoteOptions(ctx, r)...)
	if err != nil {
		return "", err
	}
	repo := r.Context()
	for _, b := range blobs {
		if err := p.Upload(ctx, repo, static.NewLayer(b.data, types.MediaType(b.mediaType))); err != nil {
			return "", registryError(repo.RegistryStr(), err)
		}
	}
	if err := p.Put(ctx, r, rawManifest(raw)); err != nil {
		return "", registryError(repo.RegistryStr(), err)
	}
	return sha256Digest(raw), nil
}

// Verifier checks the set's bundle: that its signature verifies under the
// trust configuration and that the statement it signs names each file's
// SHA-256 digest as a subject. It returns the statement's exact bytes, the
// payload the signature covers. An error means nothing may be installed;
// it should say why.
type Verifier func(setBundle []byte, files []File) (statement []byte, err error)

// Artifact is a fetched policy set, verified.
type Artifact struct {
	// Ref is the reference as given.
	Ref string
	// Repository is the registry and repository, without tag or digest.
	Repository string
	// Digest is the manifest digest the reference resolved to; everything
	// was fetched by it.
	Digest string
	// Files are the policy files in load order.
	Files []File
	// SetBundle is the set's Sigstore bundle, as fetched.
	SetBundle []byte
	// Statement is what SetBundle signs, checked against Files and
	// Repository.
	Statement *Statement
}

// Pinned returns REPOSITORY@DIGEST, the reference that fetches exactly this
// artifact again.
func (a *Artifact) Pinned() string { return a.Repository + "@" + a.Digest }

// RepositoryOf returns what a set statement names for ref: its
// REGISTRY/REPOSITORY, with no tag or digest.
func RepositoryOf(ref string, plainHTTP bool) (string, error) {
	r, err := ParseReference(ref, plainHTTP)
	if err != nil {
		return "", err
	}
	return r.Context().String(), nil
}

// Fetch resolves ref to a manifest digest, fetches the manifest and every
// layer by digest, checks each against its digest and the format, has the
// set's bundle verified, and checks that the files are exactly the set the
// verified statement names, in its order, for this repository. It returns
// only when all of that succeeded; it writes nothing.
func Fetch(ctx context.Context, ref string, verify Verifier, o Options) (*Artifact, error) {
	if verify == nil {
		return nil, errors.New("no verifier: an unverified policy set is never fetched")
	}
	r, err := ParseReference(ref, o.PlainHTTP)
	if err != nil {
		return nil, err
	}
	repo := r.Context()
	p, err := remote.NewPuller(o.remoteOptions(ctx, r)...)
	if err != nil {
		return nil, err
	}
	// Resolve: HEAD gives the digest, media type and size before any body
	// is read. A digest reference is checked the same way.
	var manifestBytes []byte // set when HEAD failed and GET answered instead
	head, err := p.Head(ctx, r)
	if err != nil && headUnsupported(err) {
		// Some registries answer HEAD badly (no digest header, 405).
		// Then GET by the reference: the digest is the hash of the bytes
		// received, which is as good as fetching by it.
		var d *remote.Descriptor
		if d, err = p.Get(ctx, r); err == nil {
			head, manifestBytes = &d.Descriptor, d.Manifest
		}
	}
	if err != nil {
		return nil, manifestError(ref, repo.RegistryStr(), err)
	}
	if head.MediaType != ManifestMediaType {
		return nil, fmt.Errorf("%s is a %s, not a Bouncer policy artifact (an OCI image manifest with artifactType %s)", ref, head.MediaType, ArtifactType)
	}
	if head.Size > MaxManifestSize {
		return nil, fmt.Errorf("%s: too large: manifest of %d bytes (at most %d)", ref, head.Size, MaxManifestSize)
	}
	if head.Digest.Algorithm != "sha256" {
		return nil, fmt.Errorf("%s: digest %s: only sha256 digests are accepted", ref, head.Digest)
	}
	pinned := repo.Digest(head.Digest.String())
	// Fetch by digest: the registry can no longer hand over anything but
	// the manifest the tag pointed at a moment ago.
	raw := manifestBytes
	if raw == nil {
		desc, err := p.Get(ctx, pinned)
		if err != nil {
			if strings.Contains(err.Error(), "does not match requested digest") {
				return nil, fmt.Errorf("%s: tampered: the registry's manifest for %s is not the one the tag resolved to (%v)", ref, head.Digest, err)
			}
			return nil, manifestError(ref, repo.RegistryStr(), err)
		}
		raw = desc.Manifest
	}
	if got := sha256Digest(raw); got != head.Digest.String() {
		return nil, fmt.Errorf("%s: tampered: the manifest's bytes hash to %s, not %s", ref, got, head.Digest)
	}
	plan, err := parseManifest(raw)
	if err != nil {
		return nil, fmt.Errorf("%s@%s: %w", repo, head.Digest, err)
	}
	a := &Artifact{Ref: ref, Repository: repo.String(), Digest: head.Digest.String()}
	for _, pf := range plan.files {
		data, err := fetchBlob(ctx, p, repo, pf.data)
		if err != nil {
			return nil, fmt.Errorf("%s (layer %d): %w", pf.name, pf.at, err)
		}
		a.Files = append(a.Files, File{Name: pf.name, Data: data})
	}
	if a.SetBundle, err = fetchBlob(ctx, p, repo, plan.bundle); err != nil {
		return nil, fmt.Errorf("%s (layer %d): %w", SetBundleName, plan.bundleAt, err)
	}
	// The set is verified whole before the caller can write any of it:
	// the signature, then that these files are the statement's subjects,
	// all of them, in its order, and that it is this repository's.
	stmt, err := verify(a.SetBundle, a.Files)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", SetBundleName, err)
	}
	if a.Statement, err = ParseStatement(stmt); err != nil {
		return nil, fmt.Errorf("%s: %w", SetBundleName, err)
	}
	if err := a.Statement.Match(a.Repository, a.Files); err != nil {
		return nil, err
	}
	return a, nil
}

// manifestError is registryError, except for a manifest cut off at
// MaxManifestSize, which is the artifact's fault, not the connection's.
func manifestError(ref, registry string, err error) error {
	if errors.Is(err, ErrManifestTooLarge) {
		return fmt.Errorf("%s: too large: the registry sent a %w", ref, ErrManifestTooLarge)
	}
	return registryError(registry, err)
}

// fetchBlob reads one layer by digest, at most its declared size, and
// checks the bytes against the digest and size the manifest gave.
func fetchBlob(ctx context.Context, p *remote.Puller, repo name.Repository, d descriptor) ([]byte, error) {
	l, err := p.Layer(ctx, repo.Digest(d.Digest))
	if err != nil {
		return nil, registryError(repo.RegistryStr(), err)
	}
	rc, err := l.Compressed()
	if err != nil {
		return nil, registryError(repo.RegistryStr(), err)
	}
	defer rc.Close()
	var buf bytes.Buffer
	n, err := io.Copy(&buf, io.LimitReader(rc, d.Size+1))
	if err != nil {
		// go-containerregistry checks digest and size as it reads; its
		// errors start "error verifying".
		if strings.Contains(err.Error(), "error verifying") {
			return nil, fmt.Errorf("tampered: the registry's content does not match %s (%v)", d.Digest, err)
		}
		return nil, registryError(repo.RegistryStr(), err)
	}
	if n != d.Size {
		return nil, fmt.Errorf("tampered: the registry sent %d bytes or more for %s, the manifest says %d", n, d.Digest, d.Size)
	}
	if got := sha256Digest(buf.Bytes()); got != d.Digest {
		return nil, fmt.Errorf("tampered: the registry's content hashes to %s, not %s", got, d.Digest)
	}
	return buf.Bytes(), nil
}

// headUnsupported reports whether a failed HEAD is worth a GET: the
// registry does not do HEAD on manifests, or answered it without the
// headers a digest needs. Refusals, absence and network errors are not.
func headUnsupported(err error) bool {
	var te *transport.Error
	if errors.As(err, &te) {
		return te.StatusCode == http.StatusMethodNotAllowed || te.StatusCode == http.StatusNotImplemented
	}
	return strings.Contains(err.Error(), "response did not include")
}

// registryError names what went wrong talking to the registry, in words a
// person can act on.
func registryError(registry string, err error) error {
	var te *transport.Error
	if errors.As(err, &te) {
		switch te.StatusCode {
		case http.StatusUnauthorized, http.StatusForbidden:
			return fmt.Errorf("registry %s refused access (%d): %v; give credentials in the Docker config (docker login, crane auth login, or a credHelpers entry in ~/.docker/config.json or $DOCKER_CONFIG/config.json)", registry, te.StatusCode, err)
		case http.StatusNotFound:
			return fmt.Errorf("not found at registry %s: %v", registry, err)
		}
		return fmt.Errorf("registry %s: %v", registry, err)
	}
	if errors.Is(err, ErrPlainHTTP) {
		return err
	}
	var ne net.Error
	var oe *net.OpError
	var de *net.DNSError
	if errors.As(err, &oe) || errors.As(err, &de) || (errors.As(err, &ne) && ne.Timeout()) {
		return fmt.Errorf("registry %s unreachable: %v", registry, err)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("registry %s: timed out: %v", registry, err)
	}
	return fmt.Errorf("registry %s: %v", registry, err)
}
