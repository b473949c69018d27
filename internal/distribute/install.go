package distribute

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/bouncer-mcp/bouncer/internal/statefile"
)

// The layout of an install directory DIR:
//
//	DIR/current              symlink to the set in use, e.g. "set-3f2a9c01b4de-7c1e0a55"
//	DIR/set-HEX12-RAND/      one directory per installed artifact, never changed once linked
//	    team.yaml            the policy files, in their own names
//	    set.sigstore.json    the set's bundle: the signed statement, as pulled
//	    installed.json       the record: reference, digests, version, files in load order, time
//	DIR/high-water.json      the newest version installed here, and its statement's digest
//	DIR/.lock                held while a pull installs
//
// A pull writes a new set directory under a temporary name, syncs it,
// renames it to its set name, and then replaces DIR/current by renaming a
// new symlink over it: rename(2) swaps the link in one step. A reader
// resolves DIR/current once and reads everything from the set directory it
// names, so it sees the whole old set or the whole new one. The set before
// the current one is kept (a reader that resolved it a moment ago can finish
// reading it); older ones are removed.
//
// The high-water mark lives outside every set directory, so pointing
// DIR/current back at an older set (the one kept, or a copy of one) does
// not bring its version along: a reader refuses a set older than the mark.
// A pull raises the mark after the swap, and a reader reads the mark before
// it resolves DIR/current, so a reader never sees a new mark with the old
// link. Whoever can write DIR can lower the mark as well, so DIR, the
// directories above it and the mark must be this user's or root's and
// closed to other users' writes (statefile.CheckShared): a reader and a
// pull refuse them otherwise.
const (
	currentLink   = "current"
	setPrefix     = "set-"
	stagePrefix   = ".staging-"
	linkPrefix    = ".current-"
	lockName      = ".lock"
	highWaterName = "high-water.json"
)

// maxRecordSize bounds what is read of installed.json and high-water.json.
const maxRecordSize = 1 << 20

// Record is installed.json: what a set is. Statement, Version, Repository
// and Files are checked against the signed statement whenever the set is
// verified (VerifyInstalled); Ref, Digest and Installed are what the pull
// saw, kept for people, and nothing depends on them.
type Record struct {
	// Ref is the reference the pull was given (a tag, usually).
	Ref string `json:"ref"`
	// Repository is the registry and repository.
	Repository string `json:"repository"`
	// Digest is the manifest digest that was installed.
	Digest string `json:"digest"`
	// Statement is the digest of the signed set statement (set.sigstore.json's payload).
	Statement string `json:"statement"`
	// Version is the set's version, from the statement.
	Version time.Time `json:"version"`
	// Files are the policy files in load order.
	Files []string `json:"files"`
	// Installed is when the set was installed.
	Installed time.Time `json:"installed"`
}

// highWater is high-water.json: the newest set installed in a directory.
type highWater struct {
	Version   time.Time `json:"version"`
	Statement string    `json:"statement"`
}

// Set is an installed policy set as a reader sees it.
type Set struct {
	Record
	// Dir is the set's own directory (DIR/current resolved).
	Dir string
	// Paths are the policy files' absolute paths in Dir, in load order.
	Paths []string
	// Statement is the verified set statement; nil from ReadInstalled,
	// which verifies nothing.
	Statement *Statement
}

// ErrNotInstalled is wrapped when a directory holds no installed set.
var ErrNotInstalled = errors.New("no policy set installed")

// ErrRollback is wrapped when a set is older than the newest one installed
// in a directory: a pull that would go back, or an installed set that
// did.
var ErrRollback = errors.New("older than the newest set installed")

// ErrFuture is wrapped when a set's version is more than MaxFuture past
// the machine's clock.
var ErrFuture = errors.New("a version from the future")

// MaxFuture is how far past this machine's clock a set's version may be.
// A version is the rollback floor once installed: a set from further on
// (a signer's typo, or a leaked key signing version 9999) would have every
// set the team signs afterwards, at its real time and with a new key,
// refused as older on every machine, until someone gave --allow-downgrade
// on each. A day leaves room for clocks that drift.
const MaxFuture = 24 * time.Hour

// CheckVersion refuses a version more than MaxFuture past now. Push
// applies it to the version it signs, and Install to the set it installs,
// whatever AllowDowngrade says.
func CheckVersion(version, now time.Time) error {
	if version.After(now.Add(MaxFuture)) {
		return fmt.Errorf("%w: the set's version %s is more than %v past this machine's clock (%s); once installed no later set could follow it. Check the clock, or sign the set again with its real time (bouncer policy push without --version)",
			ErrFuture, FormatVersion(version), MaxFuture, FormatVersion(now))
	}
	return nil
}

// ErrOpenToOthers is wrapped when an install directory, a directory above
// it, a set in it or its high-water mark could be changed by another
// user: they could point it at an older signed set and lower the mark,
// which no signature check sees.
var ErrOpenToOthers = errors.New("open to other users")

// checkShared refuses a path of an install directory (the directory, a
// set, the mark) that another user could change (statefile.CheckShared).
// A path that isn't there is left to the read that follows to report.
func checkShared(path string) error {
	err := statefile.CheckShared(path)
	switch {
	case err == nil || errors.Is(err, fs.ErrNotExist):
		return nil
	case errors.Is(err, statefile.ErrUntrusted):
		return fmt.Errorf("%w: %w", ErrOpenToOthers, err)
	}
	return err
}

// ErrNotAsPulled is wrapped when an installed set no longer matches its
// signed statement.
var ErrNotAsPulled = errors.New("the installed set does not match what was pulled")

// ReadInstalled resolves DIR/current once and returns the set it names, as
// its installed.json describes it. It verifies nothing; VerifyInstalled
// does.
func ReadInstalled(dir string) (*Set, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	target, err := os.Readlink(filepath.Join(dir, currentLink))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w in %s (bouncer policy pull installs one)", ErrNotInstalled, dir)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %v", filepath.Join(dir, currentLink), err)
	}
	if target != filepath.Base(target) || !strings.HasPrefix(target, setPrefix) {
		return nil, fmt.Errorf("%s points at %q, not at a set directory beside it", filepath.Join(dir, currentLink), target)
	}
	setDir := filepath.Join(dir, target)
	rec, err := readRecord(setDir)
	if err != nil {
		return nil, err
	}
	s := &Set{Record: *rec, Dir: setDir}
	for _, f := range rec.Files {
		s.Paths = append(s.Paths, filepath.Join(setDir, f))
	}
	return s, nil
}

// VerifyInstalled resolves DIR/current once and checks the set it names
// against what was pulled: the set's bundle verifies (verify, under the
// trust configuration, as at pull), its statement names exactly the files
// installed.json lists, in that order, with the digests of the files
// there now, and installed.json's statement digest, version and
// repository are the statement's; the set is not older than the newest
// set installed in DIR; and it is fresh (not past its expiry, or fresh's
// max_age: ErrExpired). The returned set's Statement holds each file's
// digest, for a reader to check the bytes it goes on to parse.
func VerifyInstalled(dir string, verify Verifier, fresh Freshness) (*Set, error) {
	if verify == nil {
		return nil, errors.New("no verifier: an installed set is never used unverified")
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if err := checkShared(dir); err != nil {
		return nil, err
	}
	// The mark first, then the link: see the layout's note.
	hw, hwErr := readHighWater(dir)
	set, err := ReadInstalled(dir)
	if err != nil {
		return nil, err
	}
	if err := checkShared(set.Dir); err != nil {
		return nil, err
	}
	if set.Record.Statement == "" {
		return nil, fmt.Errorf("%w: %s was installed by a bouncer from before sets were signed whole, and has no signed statement", ErrNotAsPulled, set.Dir)
	}
	bundlePath := filepath.Join(set.Dir, SetBundleName)
	bun, err := readCapped(bundlePath, MaxBundleSize)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotAsPulled, err)
	}
	hexes := make([]string, len(set.Paths))
	files := make([]File, len(set.Paths))
	for i, p := range set.Paths {
		data, err := readCapped(p, MaxFileSize)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrNotAsPulled, err)
		}
		files[i], hexes[i] = File{Name: set.Files[i], Data: data}, sha256Digest(data)
	}
	raw, err := verify(bun, files)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrNotAsPulled, bundlePath, err)
	}
	st, err := ParseStatement(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrNotAsPulled, bundlePath, err)
	}
	rec := filepath.Join(set.Dir, RecordName)
	switch {
	case st.Digest != set.Record.Statement:
		return nil, fmt.Errorf("%w: %s records statement %s, but %s signs %s", ErrNotAsPulled, rec, set.Record.Statement, SetBundleName, st.Digest)
	case !st.Version.Equal(set.Version):
		return nil, fmt.Errorf("%w: %s records version %s, but the signed set is version %s", ErrNotAsPulled, rec, FormatVersion(set.Version), FormatVersion(st.Version))
	case st.Repository != set.Repository:
		return nil, fmt.Errorf("%w: %s records repository %s, but the set was signed for %s", ErrNotAsPulled, rec, set.Repository, st.Repository)
	}
	if err := st.match(set.Files, hexes); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrNotAsPulled, set.Dir, err)
	}
	switch {
	case errors.Is(hwErr, ErrOpenToOthers):
		return nil, hwErr
	case errors.Is(hwErr, os.ErrNotExist):
		return nil, fmt.Errorf("%w: %s is missing, so whether this is the newest set pulled can't be told", ErrNotAsPulled, filepath.Join(dir, highWaterName))
	case hwErr != nil:
		return nil, fmt.Errorf("%w: %v", ErrNotAsPulled, hwErr)
	}
	if err := hw.admits(st); err != nil {
		return nil, fmt.Errorf("%w: %s is %v (%s was pointed at an older set)", ErrRollback, set.Dir, err, filepath.Join(dir, currentLink))
	}
	if err := fresh.Check(st); err != nil {
		return nil, fmt.Errorf("%w. Install a newer set: bouncer policy pull %s. If the registry still serves this one, it is not being updated (or serves an old set on purpose): ask the set's signers to push a new one", err, set.Ref)
	}
	set.Statement = st
	return set, nil
}

// admits reports why st is older than the mark: a lower version, or the
// same version with another statement.
func (hw *highWater) admits(st *Statement) error {
	switch {
	case st.Version.Before(hw.Version):
		return fmt.Errorf("version %s, older than version %s", FormatVersion(st.Version), FormatVersion(hw.Version))
	case st.Version.Equal(hw.Version) && st.Digest != hw.Statement:
		return fmt.Errorf("version %s, the same version as the newest set but another statement (%s, not %s)", FormatVersion(st.Version), st.Digest, hw.Statement)
	}
	return nil
}

func readHighWater(dir string) (*highWater, error) {
	p := filepath.Join(dir, highWaterName)
	data, err := readCapped(p, maxRecordSize)
	if err != nil {
		return nil, err
	}
	if err := checkShared(p); err != nil {
		return nil, err
	}
	var hw highWater
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&hw); err != nil {
		return nil, fmt.Errorf("%s: %v", p, err)
	}
	if hw.Version.IsZero() || !strings.HasPrefix(hw.Statement, "sha256:") {
		return nil, fmt.Errorf("%s: incomplete (no version or no statement digest)", p)
	}
	return &hw, nil
}

// readCapped reads a regular file of at most limit bytes
// (statefile.ReadCapped: no owner is checked, since a set in a shared
// directory is another user's, and the set's signature is its trust).
func readCapped(path string, limit int64) ([]byte, error) {
	data, err := statefile.ReadCapped(path, limit)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return data, nil
}

func readRecord(setDir string) (*Record, error) {
	p := filepath.Join(setDir, RecordName)
	data, err := readCapped(p, maxRecordSize)
	if err != nil {
		return nil, err
	}
	var rec Record
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rec); err != nil {
		return nil, fmt.Errorf("%s: %v", p, err)
	}
	if len(rec.Files) == 0 || !strings.HasPrefix(rec.Digest, "sha256:") {
		return nil, fmt.Errorf("%s: incomplete record (no files or no digest)", p)
	}
	seen := map[string]bool{}
	for _, n := range rec.Files {
		if err := CheckName(n); err != nil {
			return nil, fmt.Errorf("%s: %v", p, err)
		}
		if seen[strings.ToLower(n)] {
			return nil, fmt.Errorf("%s: %s listed twice", p, n)
		}
		seen[strings.ToLower(n)] = true
	}
	return &rec, nil
}

// Result says what Install did.
type Result struct {
	Set *Set
	// Unchanged is true when the set already installed had this digest and
	// these exact bytes, so no set was written.
	Unchanged bool
}

// InstallOptions say how Install writes.
type InstallOptions struct {
	// Private makes a missing directory 0700 (else 0755).
	Private bool
	// Now is the time recorded as the install time, and the clock a set's
	// version is checked against (CheckVersion); zero means time.Now().
	Now time.Time
	// AllowDowngrade installs a set older than the newest one installed
	// before, and lowers the high-water mark to it.
	AllowDowngrade bool
	// MaxAge and MaxAgeSource are the trust configuration's max_age, and
	// where it is set: a set older than that past its version is not
	// installed (see Freshness), nor one past its own expiry.
	MaxAge       time.Duration
	MaxAgeSource string
}

// Install makes a's files the current set in dir. dir is created if it is
// missing; files and set directories take their read permissions from dir,
// so a set in a private state directory is 0600 and one in a shared
// directory is readable by the users who run Bouncer. A set older than the
// newest one installed in dir (a lower version, or the same version with
// another statement) is refused with ErrRollback unless o.AllowDowngrade,
// one whose version is more than MaxFuture past o.Now with ErrFuture, and
// one already expired at o.Now with ErrExpired.
// On any error the current set is left as it was.
//
// a must come from Fetch, which verified its set; Install checks again
// that the files are the statement's, and the names and sizes.
func Install(dir string, a *Artifact, o InstallOptions) (*Result, error) {
	if a == nil || len(a.Files) == 0 || a.Statement == nil {
		return nil, errors.New("nothing to install")
	}
	if err := checkSetBundle(a.Files, a.SetBundle); err != nil {
		return nil, err
	}
	if err := a.Statement.Match(a.Repository, a.Files); err != nil {
		return nil, err
	}
	now := o.Now
	if now.IsZero() {
		now = time.Now()
	}
	if err := CheckVersion(a.Statement.Version, now); err != nil {
		return nil, err
	}
	if err := (Freshness{Now: now, MaxAge: o.MaxAge, Source: o.MaxAgeSource}).Check(a.Statement); err != nil {
		return nil, fmt.Errorf("%w: the registry serves a set that is no longer to be used; if it is the newest, it is not being updated (or serves an old set on purpose): ask the set's signers to push a new one", err)
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	mode := os.FileMode(0o755)
	if o.Private {
		mode = 0o700
	}
	if err := os.MkdirAll(dir, mode); err != nil {
		return nil, err
	}
	st, err := os.Stat(dir)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("%s is not a directory", dir)
	}
	if err := checkShared(dir); err != nil {
		return nil, err
	}
	fileMode := 0o600 | st.Mode().Perm()&0o044
	dirMode := 0o700 | st.Mode().Perm()&0o055

	unlock, err := lock(dir)
	if err != nil {
		return nil, err
	}
	defer unlock()

	link := filepath.Join(dir, currentLink)
	prev := ""
	switch fi, err := os.Lstat(link); {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return nil, err
	case fi.Mode()&os.ModeSymlink == 0:
		return nil, fmt.Errorf("%s exists and is not a symlink; move it away (Bouncer keeps the installed set behind that link)", link)
	default:
		prev, _ = os.Readlink(link)
	}

	// The floor: the high-water mark, or where there is none (a pull
	// killed between the swap and the mark), the current set's version.
	// With the lock held no other pull moves either.
	hw, err := readHighWater(dir)
	floor := hw
	switch {
	case errors.Is(err, os.ErrNotExist):
		if cur, cerr := ReadInstalled(dir); cerr == nil && !cur.Version.IsZero() {
			floor = &highWater{Version: cur.Version, Statement: cur.Record.Statement}
		}
	case err != nil && !o.AllowDowngrade:
		return nil, fmt.Errorf("%w: the newest version installed can't be read: %w", ErrRollback, err)
	}
	lower := false
	if floor != nil {
		if why := floor.admits(a.Statement); why != nil {
			if !o.AllowDowngrade {
				return nil, fmt.Errorf("%w in %s: the set is %v", ErrRollback, dir, why)
			}
			lower = true
		}
	}
	mark := &highWater{Version: a.Statement.Version, Statement: a.Statement.Digest}

	if prev != "" {
		if cur, err := ReadInstalled(dir); err == nil && sameSet(cur, a) {
			if hw == nil || !hw.Version.Equal(mark.Version) || hw.Statement != mark.Statement {
				if err := writeHighWater(dir, mark, fileMode); err != nil {
					return nil, err
				}
			}
			return &Result{Set: cur, Unchanged: true}, nil
		}
	}

	rec := Record{Ref: a.Ref, Repository: a.Repository, Digest: a.Digest, Statement: a.Statement.Digest,
		Version: a.Statement.Version.UTC(), Installed: o.Now.UTC()}
	for _, f := range a.Files {
		rec.Files = append(rec.Files, f.Name)
	}
	recJSON, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return nil, err
	}
	stage, err := os.MkdirTemp(dir, stagePrefix)
	if err != nil {
		return nil, err
	}
	cleanup := stage
	defer func() {
		if cleanup != "" {
			os.RemoveAll(cleanup)
		}
	}()
	for _, f := range a.Files {
		if err := writeNew(filepath.Join(stage, f.Name), f.Data, fileMode); err != nil {
			return nil, err
		}
	}
	if err := writeNew(filepath.Join(stage, SetBundleName), a.SetBundle, fileMode); err != nil {
		return nil, err
	}
	if err := writeNew(filepath.Join(stage, RecordName), append(recJSON, '\n'), fileMode); err != nil {
		return nil, err
	}
	if err := os.Chmod(stage, dirMode); err != nil {
		return nil, err
	}
	if err := statefile.SyncDir(stage); err != nil {
		return nil, err
	}
	hexDigest := strings.TrimPrefix(a.Digest, "sha256:")
	if len(hexDigest) > 12 {
		hexDigest = hexDigest[:12]
	}
	setName := setPrefix + hexDigest + "-" + randomHex(4)
	if err := os.Rename(stage, filepath.Join(dir, setName)); err != nil {
		return nil, err
	}
	cleanup = filepath.Join(dir, setName)

	// The mark moves on the side of the swap that keeps every reader
	// (mark first, then link) content: up after the swap, down before it.
	if lower {
		if err := writeHighWater(dir, mark, fileMode); err != nil {
			return nil, err
		}
	}
	// The swap: a new symlink under a temporary name, renamed over the
	// old one.
	tmpLink := filepath.Join(dir, linkPrefix+randomHex(4))
	if err := os.Symlink(setName, tmpLink); err != nil {
		return nil, err
	}
	if err := os.Rename(tmpLink, link); err != nil {
		os.Remove(tmpLink)
		return nil, err
	}
	cleanup = ""
	if err := statefile.SyncDir(dir); err != nil {
		return nil, fmt.Errorf("installed, but syncing %s failed: %v", dir, err)
	}
	if !lower {
		if err := writeHighWater(dir, mark, fileMode); err != nil {
			return nil, fmt.Errorf("installed, but recording its version failed: %v", err)
		}
	}
	prune(dir, setName, prev)

	s := &Set{Record: rec, Dir: filepath.Join(dir, setName), Statement: a.Statement}
	for _, f := range rec.Files {
		s.Paths = append(s.Paths, filepath.Join(s.Dir, f))
	}
	return &Result{Set: s}, nil
}

// writeHighWater replaces DIR/high-water.json (statefile.WriteMode: whole,
// on disk, readable where the set is).
func writeHighWater(dir string, hw *highWater, mode os.FileMode) error {
	data, err := json.MarshalIndent(hw, "", "  ")
	if err != nil {
		return err
	}
	p := filepath.Join(dir, highWaterName)
	if err := statefile.WriteMode(p, append(data, '\n'), mode); err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	return nil
}

// sameSet reports whether the installed set cur is a, byte for byte, with
// the record a pull of a writes: what VerifyInstalled checks of the record
// included, so that pulling again mends a set run refuses rather than
// saying it is up to date.
func sameSet(cur *Set, a *Artifact) bool {
	if cur.Digest != a.Digest || cur.Record.Statement != a.Statement.Digest || len(cur.Files) != len(a.Files) ||
		cur.Repository != a.Repository || !cur.Version.Equal(a.Statement.Version) {
		return false
	}
	holds := func(path string, want []byte) bool {
		got, err := readCapped(path, max(MaxFileSize, MaxBundleSize))
		return err == nil && bytes.Equal(got, want)
	}
	for i, f := range a.Files {
		if cur.Files[i] != f.Name || !holds(cur.Paths[i], f.Data) {
			return false
		}
	}
	return holds(filepath.Join(cur.Dir, SetBundleName), a.SetBundle)
}

// prune removes set directories other than keep and prev, and leftovers
// of interrupted pulls. The lock is held, so no other pull is writing.
func prune(dir, keep, prev string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		n := e.Name()
		switch {
		case n == keep || n == prev:
		case strings.HasPrefix(n, setPrefix), strings.HasPrefix(n, stagePrefix), strings.HasPrefix(n, linkPrefix):
			os.RemoveAll(filepath.Join(dir, n))
		}
	}
}

// lock takes DIR/.lock exclusively, or fails at once if another pull holds it.
func lock(dir string) (func(), error) {
	p := filepath.Join(dir, lockName)
	unlock, err := statefile.TryLock(p)
	if errors.Is(err, statefile.ErrLocked) {
		return nil, fmt.Errorf("another bouncer policy pull is installing into %s; try again when it is done", dir)
	}
	if err != nil {
		return nil, fmt.Errorf("lock %s: %v", p, err)
	}
	return unlock, nil
}

// writeNew creates path (it must not exist), writes data and syncs it. It
// is not statefile.Write: it fills a staging directory that no reader sees
// until the directory is flushed (statefile.SyncDir) and renamed into
// place, so there is nothing to replace and no temporary name to need.
func writeNew(path string, data []byte, mode os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(mode); err != nil { // the umask may have taken bits off
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
