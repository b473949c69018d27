package distribute

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// The set statement is what a signer signs for a policy set: one in-toto
// Statement v1 whose subjects are the policy files in load order, each
// with its SHA-256 digest, and whose predicate names the repository the
// set is for and the set's version:
//
//	{"_type": "https://in-toto.io/Statement/v1",
//	 "subject": [{"name": "base.yaml", "digest": {"sha256": "…"}}, …],
//	 "predicateType": "https://github.com/bouncer-mcp/bouncer/policy-set/v1",
//	 "predicate": {"repository": "registry.example.com/acme/mcp-policy",
//	               "version": "2026-05-01T12:00:00.123456789Z",
//	               "expires": "2026-06-01T12:00:00Z"}}
//
// The subjects' order is the load order (in-toto calls subjects a set;
// this predicate type gives their order a meaning, and the signature
// covers it). The version is an RFC 3339 time: a later pull may not
// install a lower one, so the registry cannot hand back a set the team
// has replaced. The repository is REGISTRY/REPOSITORY without a tag, so
// a set promoted from one tag to another still verifies, and a set signed
// for another repository does not. The expiry is optional: a set past it
// is neither installed nor used (see Freshness), so a registry that keeps
// serving a set after the team stopped signing new ones (a freeze) is
// found out, as TUF's timestamp role finds it. A Bouncer from before
// expiries refuses a statement that has one (ParseStatement knows no
// field it can't obey), rather than using the set for ever.
const (
	// StatementType is the in-toto statement's _type.
	StatementType = "https://in-toto.io/Statement/v1"
	// SetPredicateType names the predicate above.
	SetPredicateType = "https://github.com/bouncer-mcp/bouncer/policy-set/v1"
	// maxStatementSize bounds a statement: 64 subjects of a few hundred
	// bytes each.
	maxStatementSize = 256 << 10
)

// Statement is a set statement as read from the exact bytes a signer
// signed.
type Statement struct {
	// Repository is the REGISTRY/REPOSITORY the set is for.
	Repository string
	// Version is the set's version; later sets have later versions.
	Version time.Time
	// Expires is when the set stops being used; zero for never.
	Expires time.Time
	// Files are the subjects, in load order.
	Files []Subject
	// Digest is the SHA-256 digest of the statement's exact bytes
	// ("sha256:HEX"): what installed.json and the high-water mark record.
	Digest string
}

// Subject is one file a statement names.
type Subject struct {
	// Name is the file's name, as installed.
	Name string
	// Digest is "sha256:HEX" of its exact bytes.
	Digest string
}

type statementJSON struct {
	Type          string         `json:"_type"`
	Subject       []subjectJSON  `json:"subject"`
	PredicateType string         `json:"predicateType"`
	Predicate     *predicateJSON `json:"predicate"`
}

type subjectJSON struct {
	Name   string            `json:"name"`
	Digest map[string]string `json:"digest"`
}

type predicateJSON struct {
	Repository string `json:"repository"`
	Version    string `json:"version"`
	Expires    string `json:"expires,omitempty"`
}

// NewStatement returns the statement for files, pushed to repository
// (REGISTRY/REPOSITORY, as Repository names it), at version, expiring at
// expires (zero: never). The bytes are what gets signed.
func NewStatement(repository string, version, expires time.Time, files []File) ([]byte, error) {
	if err := checkFiles(files); err != nil {
		return nil, err
	}
	if repository == "" {
		return nil, errors.New("no repository to name in the set statement")
	}
	if version.IsZero() {
		return nil, errors.New("no version for the set statement")
	}
	if !expires.IsZero() && !expires.After(version) {
		return nil, fmt.Errorf("the set would expire (%s) before its version (%s)", FormatVersion(expires), FormatVersion(version))
	}
	st := statementJSON{
		Type:          StatementType,
		PredicateType: SetPredicateType,
		Predicate:     &predicateJSON{Repository: repository, Version: FormatVersion(version)},
	}
	if !expires.IsZero() {
		st.Predicate.Expires = FormatVersion(expires)
	}
	for _, f := range files {
		st.Subject = append(st.Subject, subjectJSON{Name: f.Name, Digest: map[string]string{"sha256": strings.TrimPrefix(sha256Digest(f.Data), "sha256:")}})
	}
	raw, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(raw, '\n'), nil
}

// FormatVersion writes a version as a statement holds it: RFC 3339 in UTC,
// to the nanosecond, so two pushes a moment apart differ.
func FormatVersion(v time.Time) string { return v.UTC().Format(time.RFC3339Nano) }

// ParseVersion reads a version given on the command line or in a
// statement: an RFC 3339 time such as 2026-05-01T12:00:00Z.
func ParseVersion(s string) (time.Time, error) {
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("version %q is not an RFC 3339 time (write it as 2026-05-01T12:00:00Z)", s)
	}
	return v, nil
}

// ParseStatement reads a set statement from its exact bytes. Anything it
// does not know (another _type or predicateType, a field it has no use
// for, a digest other than SHA-256) is refused: a field a newer Bouncer
// added might be one this one should have obeyed.
func ParseStatement(raw []byte) (*Statement, error) {
	if len(raw) > maxStatementSize {
		return nil, fmt.Errorf("set statement of %d bytes is too large (at most %d)", len(raw), maxStatementSize)
	}
	var st statementJSON
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&st); err != nil {
		return nil, fmt.Errorf("set statement: %v", err)
	}
	if dec.More() {
		return nil, errors.New("set statement: more than one JSON value")
	}
	switch {
	case st.Type != StatementType:
		return nil, fmt.Errorf("set statement: _type is %q, want %s", st.Type, StatementType)
	case st.PredicateType != SetPredicateType:
		return nil, fmt.Errorf("set statement: predicateType is %q, not a Bouncer policy set (%s)", st.PredicateType, SetPredicateType)
	case st.Predicate == nil:
		return nil, errors.New("set statement: no predicate")
	case st.Predicate.Repository == "":
		return nil, errors.New("set statement: the predicate names no repository")
	case len(st.Subject) == 0:
		return nil, errors.New("set statement: no subject (no policy file)")
	case len(st.Subject) > MaxFiles:
		return nil, fmt.Errorf("set statement: %d subjects (at most %d files)", len(st.Subject), MaxFiles)
	}
	v, err := ParseVersion(st.Predicate.Version)
	if err != nil {
		return nil, fmt.Errorf("set statement: %v", err)
	}
	out := &Statement{Repository: st.Predicate.Repository, Version: v, Digest: sha256Digest(raw)}
	if st.Predicate.Expires != "" {
		if out.Expires, err = ParseVersion(st.Predicate.Expires); err != nil {
			return nil, fmt.Errorf("set statement: expires: %v", err)
		}
		if !out.Expires.After(v) {
			return nil, fmt.Errorf("set statement: expires %s is not after the version %s", st.Predicate.Expires, st.Predicate.Version)
		}
	}
	seen := map[string]bool{}
	for i, s := range st.Subject {
		if err := CheckName(s.Name); err != nil {
			return nil, fmt.Errorf("set statement: subject %d: %v", i+1, err)
		}
		if seen[strings.ToLower(s.Name)] {
			return nil, fmt.Errorf("set statement: subject %d: a second file named %s", i+1, s.Name)
		}
		seen[strings.ToLower(s.Name)] = true
		h, ok := s.Digest["sha256"]
		if !ok || len(s.Digest) != 1 {
			return nil, fmt.Errorf("set statement: subject %d (%s): want exactly a sha256 digest", i+1, s.Name)
		}
		if b, err := hex.DecodeString(h); err != nil || len(b) != 32 || h != strings.ToLower(h) {
			return nil, fmt.Errorf("set statement: subject %d (%s): sha256 %q is not 64 lower-case hex digits", i+1, s.Name, h)
		}
		out.Files = append(out.Files, Subject{Name: s.Name, Digest: "sha256:" + h})
	}
	return out, nil
}

// ErrSetMismatch is wrapped when files are not exactly the set a
// statement names.
var ErrSetMismatch = errors.New("not the signed set")

// Match checks that files are exactly the statement's subjects (the same
// names, in the same order, each with its digest) and that the statement
// is for repository. A subset, a reorder, a file from another set and a
// set signed for another repository each fail, naming which.
func (s *Statement) Match(repository string, files []File) error {
	if s.Repository != repository {
		return fmt.Errorf("%w: it was signed for %s, not %s (a set signed for another artifact)", ErrSetMismatch, s.Repository, repository)
	}
	digests := make([]string, len(files))
	names := make([]string, len(files))
	for i, f := range files {
		names[i], digests[i] = f.Name, sha256Digest(f.Data)
	}
	return s.match(names, digests)
}

// match is Match on names and digests already computed.
func (s *Statement) match(names, digests []string) error {
	want := make([]string, len(s.Files))
	for i, f := range s.Files {
		want[i] = f.Name
	}
	if len(names) != len(want) {
		return fmt.Errorf("%w: it lists %d file(s) (%s), the artifact holds %d (%s)", ErrSetMismatch, len(want), strings.Join(want, ", "), len(names), strings.Join(names, ", "))
	}
	for i, n := range names {
		if n != want[i] {
			return fmt.Errorf("%w: file %d is %s, the signed set has %s there (%s)", ErrSetMismatch, i+1, n, want[i], strings.Join(want, ", "))
		}
		if digests[i] != s.Files[i].Digest {
			return fmt.Errorf("%w: %s is %s, the signed set's %s is %s", ErrSetMismatch, n, digests[i], n, s.Files[i].Digest)
		}
	}
	return nil
}

// ErrExpired is wrapped when a set is past its expiry, its own or the
// trust configuration's max_age.
var ErrExpired = errors.New("expired")

// Freshness is how old a set may be when it is installed or used: never
// past its statement's own expiry, and, when MaxAge is set (a trust
// file's max_age; Source says so in messages, "max_age 30d
// (trust.yaml:4)"), never more than MaxAge past its version. The version is the bound rather than the signature's time: it
// is in every set, signed, and can't be set more than MaxFuture ahead, so
// a signer can't make a set outlive max_age by more than that; a bundle
// signed with a key carries no trusted time of its own. Now is the clock
// (zero: time.Now()).
type Freshness struct {
	Now    time.Time
	MaxAge time.Duration
	Source string
}

// Expiry returns when st stops being fresh (zero: never), and why, in
// words that follow "expires" or "expired".
func (f Freshness) Expiry(st *Statement) (time.Time, string) {
	at, why := st.Expires, "as its signed statement says"
	if f.MaxAge > 0 {
		if byAge := st.Version.Add(f.MaxAge); at.IsZero() || byAge.Before(at) {
			at = byAge
			why = fmt.Sprintf("by %s, counted from its version", f.Source)
		}
	}
	if at.IsZero() {
		return at, ""
	}
	return at, why
}

// Check returns an error wrapping ErrExpired when st is past its expiry
// at f.Now, saying when and why.
func (f Freshness) Check(st *Statement) error {
	now := f.Now
	if now.IsZero() {
		now = time.Now()
	}
	at, why := f.Expiry(st)
	if at.IsZero() || now.Before(at) {
		return nil
	}
	return fmt.Errorf("%w: the set (version %s) expired on %s, %s", ErrExpired, FormatVersion(st.Version), FormatVersion(at), why)
}
