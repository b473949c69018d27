// Package bundle verifies policy files against Sigstore bundles and reads the
// trust configuration that says which signers count.
//
// Verification is offline: keys and the Sigstore trusted root come from local
// files named by the trust configuration, and nothing here opens a network
// connection or fetches TUF metadata. Of Bouncer's own packages it imports
// only the leaves filepos, yamlstrict and envexpand (the error type, the
// YAML dialect it shares with policy files, and the one ${VAR} rule), so the
// trust decision can be read and tested on its own.
//
// A trust configuration can come in two layers. When the system file
// (/etc/bouncer/trust.yaml) exists it always applies; a user's file (--trust
// FILE, else $BOUNCER_HOME/trust.yaml) can only add requirements on top of it:
// require_signed is the OR of both, and a bundle must satisfy the signers of
// every layer that names any. A user can therefore narrow whom the team's
// file accepts, but cannot make a key or identity of their own acceptable.
package bundle

import (
	"crypto"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/verify"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
	"gopkg.in/yaml.v3"

	"github.com/bouncer-mcp/bouncer/internal/filepos"
	"github.com/bouncer-mcp/bouncer/internal/statefile"
	"github.com/bouncer-mcp/bouncer/internal/yamlstrict"
)

// systemTrustFile is the machine-wide trust configuration. It is a variable
// only so that this package's tests can point it at a temporary file; nothing
// outside the tests may change it, and there is deliberately no flag or
// environment variable for it, since either would let a user drop it.
var systemTrustFile = "/etc/bouncer/trust.yaml"

// UserTrustFileName is the name of the per-user trust file in the state
// directory.
const UserTrustFileName = "trust.yaml"

// maxTrustFileSize bounds what is read of a trust file; real ones are a few
// hundred bytes.
const maxTrustFileSize = 1 << 20

// Error is a problem in a trust file: the one file-position error
// (package filepos), printed as "FILE:LINE: KEY: problem" (LINE and KEY
// are left out when unknown).
type Error = filepos.Error

// Trust is a loaded trust configuration: one or two layers. It is immutable
// after LoadTrust and safe for concurrent use.
type Trust struct {
	layers []*layer
}

// layer is one trust file, fully loaded: keys parsed, trusted root read.
type layer struct {
	file          string // path as found
	system        bool   // the /etc file
	requireSigned bool
	enforce       bool // enforce: true: bouncer run --observe is refused
	keys          []trustedKey
	identities    []identity
	root          root.TrustedMaterial // nil without trusted_root
	rootFile      string
	artifact      lineString // policy_artifact: the OCI reference `bouncer policy pull` follows
	auditShip     *AuditShip // nil without audit_ship
	maxAge        lineAge    // max_age: how long past its version an installed set is used
}

// lineAge is a length of time from a trust file, with its text and line.
type lineAge struct {
	val  time.Duration
	text string
	line int
}

// trustedKey is one public key from a trust file.
type trustedKey struct {
	name     string // as written in the trust file, for messages
	path     string // where it was read
	verifier signature.Verifier
}

// identity is one keyless signer: the OIDC issuer and the certificate's
// subject (SAN), exactly or by a whole-value regular expression.
type identity struct {
	issuer, subject, subjectRegexp string
	ci                             verify.CertificateIdentity
}

func (l *layer) hasSigners() bool { return len(l.keys) > 0 || len(l.identities) > 0 }

// RequireSigned reports whether every policy file must carry a verified
// bundle: true when any layer says so.
func (t *Trust) RequireSigned() bool {
	for _, l := range t.layers {
		if l.requireSigned {
			return true
		}
	}
	return false
}

// Enforce reports whether a layer says `enforce: true`, and the file that
// says it: then `bouncer run --observe` is refused. Like require_signed, a
// user's file or flag can add it but never drop the system file's.
func (t *Trust) Enforce() (file string, on bool) {
	for _, l := range t.layers {
		if l.enforce {
			return l.file, true
		}
	}
	return "", false
}

// HasSigners reports whether any layer names a key or identity, i.e. whether
// a bundle could verify at all.
func (t *Trust) HasSigners() bool {
	for _, l := range t.layers {
		if l.hasSigners() {
			return true
		}
	}
	return false
}

// Files lists the trust files that were loaded, system file first.
func (t *Trust) Files() []string {
	out := make([]string, len(t.layers))
	for i, l := range t.layers {
		out[i] = l.file
	}
	return out
}

// MaxAge returns the max_age an installed policy set is held to (how long
// past its version it may be used), and where it was set, "max_age 30d
// (FILE:LINE)"; 0 and "" when no layer sets one. Each layer can only
// narrow: the smallest one wins, so a user's file can't lengthen the
// system file's.
func (t *Trust) MaxAge() (time.Duration, string) {
	var best lineAge
	file := ""
	for _, l := range t.layers {
		if l.maxAge.val > 0 && (best.val == 0 || l.maxAge.val < best.val) {
			best, file = l.maxAge, l.file
		}
	}
	if best.val == 0 {
		return 0, ""
	}
	return best.val, fmt.Sprintf("max_age %s (%s:%d)", best.text, file, best.line)
}

// ParseAge reads a length of time as a trust file's max_age and `bouncer
// policy push --expires` take it: Go's durations (90m, 720h) or whole days
// (30d). It must be positive.
func ParseAge(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if n, ok := strings.CutSuffix(s, "d"); ok && err != nil {
		days, aerr := strconv.Atoi(n)
		if aerr == nil && days > 0 && days < 1<<20 {
			d, err = time.Duration(days)*24*time.Hour, nil
		}
	}
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%q is not a length of time (write 30d, 720h or 90m)", s)
	}
	return d, nil
}

// PolicyArtifact returns the OCI reference named by policy_artifact, the
// artifact `bouncer policy pull` follows when given no reference, and where
// it was set ("FILE:LINE"). The system file's wins: a user's file cannot
// point a machine whose team pinned an artifact at another one.
func (t *Trust) PolicyArtifact() (ref, source string) {
	for _, l := range t.layers { // system file first
		if l.artifact.val != "" {
			return l.artifact.val, fmt.Sprintf("%s:%d", l.file, l.artifact.line)
		}
	}
	return "", ""
}

// AllFiles lists every file the trust configuration was read from: the
// trust files, their keys and trusted roots. They are Bouncer's own state:
// no tool argument may reach them (engine.Options.Own).
func (t *Trust) AllFiles() []string {
	if t == nil {
		return nil
	}
	var out []string
	for _, l := range t.layers {
		out = append(out, l.file)
		for _, k := range l.keys {
			out = append(out, k.path)
		}
		if l.rootFile != "" {
			out = append(out, l.rootFile)
		}
	}
	return out
}

// ErrNoTrust is returned by LoadTrust when no trust file exists anywhere.
var ErrNoTrust = errors.New("no trust configuration")

// LoadTrust reads the trust configuration. flagPath is --trust (empty when
// not given; then it must exist); stateDir is the state directory, whose
// trust.yaml is used when there is no flag. The system file is read first
// whenever it exists. With no file anywhere it returns an empty Trust and an
// error wrapping ErrNoTrust, so callers can choose whether that matters.
// Any unreadable or malformed file is an *Error naming it.
func LoadTrust(flagPath, stateDir string) (*Trust, error) {
	t := &Trust{}
	if sys, err := loadLayerIfExists(systemTrustFile); err != nil {
		return nil, err
	} else if sys != nil {
		sys.system = true
		t.layers = append(t.layers, sys)
	}
	switch {
	case flagPath != "":
		l, err := loadLayer(flagPath)
		if err != nil {
			return nil, err
		}
		t.layers = append(t.layers, l)
	case stateDir != "":
		l, err := loadLayerIfExists(filepath.Join(stateDir, UserTrustFileName))
		if err != nil {
			return nil, err
		}
		if l != nil {
			t.layers = append(t.layers, l)
		}
	}
	if len(t.layers) == 0 {
		where := systemTrustFile
		if stateDir != "" {
			where = filepath.Join(stateDir, UserTrustFileName) + " or " + where
		}
		return t, fmt.Errorf("%w: give --trust FILE, or create %s", ErrNoTrust, where)
	}
	return t, nil
}

// loadLayerIfExists loads path, or returns nil, nil when nothing is there.
// Anything else (a permission problem, a directory) is an error, so an
// unreadable system file fails closed instead of being skipped.
func loadLayerIfExists(path string) (*layer, error) {
	if _, err := os.Lstat(path); errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	return loadLayer(path)
}

func loadLayer(path string) (*layer, error) {
	data, err := statefile.ReadFile(path, maxTrustFileSize)
	if err != nil {
		return nil, &Error{File: path, Msg: err.Error()}
	}
	cfg, err := parseTrust(path, data)
	if err != nil {
		return nil, err
	}
	return cfg.load(filepath.Dir(path))
}

// trustConfig is a parsed but not yet loaded trust file; each value keeps
// its line for messages.
type trustConfig struct {
	file              string
	requireSigned     bool
	requireSignedLine int
	enforce           bool
	keys              []lineString
	identities        []identityConfig
	trustedRoot       lineString
	policyArtifact    lineString
	auditShip         *AuditShip
	maxAge            lineAge
}

type lineString struct {
	val  string
	line int
}

type identityConfig struct {
	line                           int
	issuer, subject, subjectRegexp string
	subjectRegexpLine              int
}

// parseTrust checks the YAML shape strictly: one mapping document, only the
// known keys, each once, each of its type. It reads no other file.
func parseTrust(file string, data []byte) (*trustConfig, error) {
	cfg := &trustConfig{file: file}
	fail := func(n *yaml.Node, key, format string, a ...any) error {
		line := 0
		if n != nil {
			line = n.Line
		}
		return &Error{File: file, Line: line, Key: key, Msg: fmt.Sprintf(format, a...)}
	}
	// The YAML dialect is yamlstrict's, shared with policy files: one
	// document; no anchors, aliases, merge keys or tags; every key a
	// string, given once.
	top, err := yamlstrict.Decode(file, data)
	if err != nil {
		return nil, err
	}
	if top == nil {
		return nil, fail(nil, "", "empty trust file (write require_signed: false to mean no requirements)")
	}
	if top.Kind != yaml.MappingNode {
		return nil, fail(top, "", "expected a mapping of require_signed, enforce, keys, identities, trusted_root")
	}
	for i := 0; i+1 < len(top.Content); i += 2 {
		k, v := top.Content[i], top.Content[i+1]
		switch k.Value {
		case "require_signed":
			if v.Kind != yaml.ScalarNode || v.Tag != "!!bool" {
				return nil, fail(v, k.Value, "expected true or false, got %s", yamlstrict.Describe(v))
			}
			var b bool
			if err := v.Decode(&b); err != nil {
				return nil, fail(v, k.Value, "expected true or false")
			}
			cfg.requireSigned, cfg.requireSignedLine = b, k.Line
		case "enforce":
			if v.Kind != yaml.ScalarNode || v.Tag != "!!bool" {
				return nil, fail(v, k.Value, "expected true or false, got %s", yamlstrict.Describe(v))
			}
			if err := v.Decode(&cfg.enforce); err != nil {
				return nil, fail(v, k.Value, "expected true or false")
			}
		case "keys":
			if v.Kind != yaml.SequenceNode {
				return nil, fail(v, k.Value, "expected a list of public key files, got %s", yamlstrict.Describe(v))
			}
			for _, e := range v.Content {
				s, err := str(file, "keys", e)
				if err != nil {
					return nil, err
				}
				cfg.keys = append(cfg.keys, lineString{s, e.Line})
			}
		case "identities":
			if v.Kind != yaml.SequenceNode {
				return nil, fail(v, k.Value, "expected a list of {issuer, subject or subject_regexp}, got %s", yamlstrict.Describe(v))
			}
			for _, e := range v.Content {
				id, err := parseIdentity(file, e)
				if err != nil {
					return nil, err
				}
				cfg.identities = append(cfg.identities, id)
			}
		case "trusted_root":
			s, err := str(file, k.Value, v)
			if err != nil {
				return nil, err
			}
			cfg.trustedRoot = lineString{s, v.Line}
		case "policy_artifact":
			s, err := str(file, k.Value, v)
			if err != nil {
				return nil, err
			}
			cfg.policyArtifact = lineString{s, v.Line}
		case "max_age":
			s, err := str(file, k.Value, v)
			if err != nil {
				return nil, err
			}
			d, err := ParseAge(s)
			if err != nil {
				return nil, fail(v, k.Value, "%v: how long past its version an installed policy set is used", err)
			}
			cfg.maxAge = lineAge{d, s, v.Line}
		case "audit_ship":
			s, err := parseAuditShip(file, k, v)
			if err != nil {
				return nil, err
			}
			cfg.auditShip = s
		default:
			return nil, fail(k, k.Value, "unknown key (known: require_signed, enforce, keys, identities, trusted_root, policy_artifact, audit_ship, max_age)")
		}
	}
	if cfg.requireSigned && len(cfg.keys) == 0 && len(cfg.identities) == 0 {
		return nil, &Error{File: file, Line: cfg.requireSignedLine, Key: "require_signed",
			Msg: "true, but no keys or identities are listed, so no bundle could verify"}
	}
	if len(cfg.identities) > 0 && cfg.trustedRoot.val == "" {
		return nil, &Error{File: file, Line: cfg.identities[0].line, Key: "identities",
			Msg: "keyless identities need trusted_root (the Sigstore trusted_root.json to check certificates against)"}
	}
	return cfg, nil
}

func parseIdentity(file string, n *yaml.Node) (identityConfig, error) {
	id := identityConfig{line: n.Line}
	if n.Kind != yaml.MappingNode {
		return id, &Error{File: file, Line: n.Line, Key: "identities", Msg: "expected a mapping with issuer and subject or subject_regexp, got " + yamlstrict.Describe(n)}
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		key := "identities." + k.Value
		s, err := str(file, key, v)
		if err != nil {
			return id, err
		}
		switch k.Value {
		case "issuer":
			id.issuer = s
		case "subject":
			id.subject = s
		case "subject_regexp":
			if _, err := regexp.Compile(s); err != nil {
				return id, &Error{File: file, Line: v.Line, Key: key, Msg: "bad regular expression: " + err.Error()}
			}
			id.subjectRegexp, id.subjectRegexpLine = s, v.Line
		default:
			return id, &Error{File: file, Line: k.Line, Key: key, Msg: "unknown key (known: issuer, subject, subject_regexp)"}
		}
	}
	switch {
	case id.issuer == "":
		return id, &Error{File: file, Line: n.Line, Key: "identities.issuer", Msg: "missing (the OIDC issuer, e.g. https://token.actions.githubusercontent.com)"}
	case id.subject == "" && id.subjectRegexp == "":
		return id, &Error{File: file, Line: n.Line, Key: "identities", Msg: "give subject or subject_regexp"}
	case id.subject != "" && id.subjectRegexp != "":
		return id, &Error{File: file, Line: n.Line, Key: "identities", Msg: "give subject or subject_regexp, not both"}
	}
	return id, nil
}

// str returns a non-empty plain string scalar.
func str(file, key string, n *yaml.Node) (string, error) {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!str" {
		return "", &Error{File: file, Line: n.Line, Key: key, Msg: "expected a string, got " + yamlstrict.Describe(n)}
	}
	if strings.TrimSpace(n.Value) == "" {
		return "", &Error{File: file, Line: n.Line, Key: key, Msg: "empty"}
	}
	return n.Value, nil
}

// load reads the key files and trusted root a parsed trust file names,
// relative to dir.
func (c *trustConfig) load(dir string) (*layer, error) {
	l := &layer{file: c.file, requireSigned: c.requireSigned, enforce: c.enforce, artifact: c.policyArtifact, maxAge: c.maxAge}
	rel := func(p string) string {
		if filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(dir, p)
	}
	for _, k := range c.keys {
		v, err := loadPublicKey(rel(k.val))
		if err != nil {
			msg := fmt.Sprintf("%s: %v", k.val, err)
			if errors.Is(err, fs.ErrNotExist) {
				at := ""
				if rel(k.val) != k.val {
					at = " at " + rel(k.val)
				}
				msg = fmt.Sprintf("%s: no such file%s (a relative path is relative to this trust file's directory); put the team's PEM public key there or fix the path", k.val, at)
			}
			return nil, &Error{File: c.file, Line: k.line, Key: "keys", Msg: msg}
		}
		l.keys = append(l.keys, trustedKey{name: k.val, path: rel(k.val), verifier: v})
	}
	for _, id := range c.identities {
		re := ""
		if id.subjectRegexp != "" {
			// Whole-value match, as everywhere else in Bouncer: an
			// unanchored pattern would accept any subject that merely
			// contains the team's repository path.
			re = "^(?:" + id.subjectRegexp + ")$"
		}
		ci, err := verify.NewShortCertificateIdentity(id.issuer, "", id.subject, re)
		if err != nil {
			return nil, &Error{File: c.file, Line: id.line, Key: "identities", Msg: err.Error()}
		}
		l.identities = append(l.identities, identity{issuer: id.issuer, subject: id.subject, subjectRegexp: id.subjectRegexp, ci: ci})
	}
	if c.trustedRoot.val != "" {
		p := rel(c.trustedRoot.val)
		data, err := statefile.ReadFile(p, 16<<20)
		if err != nil {
			return nil, &Error{File: c.file, Line: c.trustedRoot.line, Key: "trusted_root", Msg: fmt.Sprintf("%s: %v", c.trustedRoot.val, err)}
		}
		tr, err := root.NewTrustedRootFromJSON(data)
		if err != nil {
			return nil, &Error{File: c.file, Line: c.trustedRoot.line, Key: "trusted_root", Msg: fmt.Sprintf("%s: not a Sigstore trusted root: %v", c.trustedRoot.val, err)}
		}
		if len(tr.FulcioCertificateAuthorities()) == 0 {
			return nil, &Error{File: c.file, Line: c.trustedRoot.line, Key: "trusted_root", Msg: fmt.Sprintf("%s: lists no certificate authorities, so no keyless bundle could verify", c.trustedRoot.val)}
		}
		l.root, l.rootFile = tr, p
	}
	s, err := loadAuditShip(c.auditShip, dir)
	if err != nil {
		return nil, err
	}
	l.auditShip = s
	return l, nil
}

// loadPublicKey reads one PEM public key and makes a verifier for it.
func loadPublicKey(path string) (signature.Verifier, error) {
	data, err := statefile.ReadFile(path, 64<<10)
	if err != nil {
		return nil, err
	}
	pub, err := cryptoutils.UnmarshalPEMToPublicKey(data)
	if err != nil {
		return nil, fmt.Errorf("not a PEM public key: %w", err)
	}
	v, err := signature.LoadVerifier(pub, crypto.SHA256)
	if err != nil {
		return nil, fmt.Errorf("unsupported public key: %w", err)
	}
	return v, nil
}
