package distribute

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	unix "github.com/bouncer-mcp/bouncer/internal/unixshim"
)

// The layout of an install directory DIR:
//
//	DIR/current              symlink to the set in use, e.g. "set-3f2a9c01b4de-7c1e0a55"
//	DIR/set-HEX12-RAND/      one directory per installed artifact, never changed once linked
//	    team.yaml            the policy files, in their own names
//	    team.yaml.sigstore.json
//	    installed.json       the record: reference, digest, files in load order, time
//	DIR/.lock                held while a pull installs
//
// A pull writes a new set directory under a temporary name, syncs it,
// renames it to its set name, and then replaces DIR/current by renaming a
// new symlink over it: rename(2) swaps the link in one step. A reader
// resolves DIR/current once and reads everything from the set directory it
// names, so it sees the whole old set or the whole new one. The set before
// the current one is kept (a reader that resolved it a moment ago can finish
// reading it, and it is there to go back to); older ones are removed.
const (
	currentLink = "current"
	setPrefix   = "set-"
	stagePrefix = ".staging-"
	linkPrefix  = ".current-"
	lockName    = ".lock"
)

// maxRecordSize bounds what is read of installed.json.
const maxRecordSize = 1 << 20

// Record is installed.json: what a set is.
type Record struct {
	// Ref is the reference the pull was given (a tag, usually).
	Ref string `json:"ref"`
	// Repository is the registry and repository.
	Repository string `json:"repository"`
	// Digest is the manifest digest that was installed.
	Digest string `json:"digest"`
	// Files are the policy files in load order (bundles are FILE.sigstore.json
	// beside each).
	Files []string `json:"files"`
	// Installed is when the set was installed.
	Installed time.Time `json:"installed"`
}

// Set is an installed policy set as a reader sees it.
type Set struct {
	Record
	// Dir is the set's own directory (DIR/current resolved).
	Dir string
	// Paths are the policy files' absolute paths in Dir, in load order.
	Paths []string
}

// ErrNotInstalled is wrapped when a directory holds no installed set.
var ErrNotInstalled = errors.New("no policy set installed")

// ReadInstalled resolves DIR/current once and returns the set it names.
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

func readRecord(setDir string) (*Record, error) {
	p := filepath.Join(setDir, RecordName)
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxRecordSize+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %v", p, err)
	}
	if len(data) > maxRecordSize {
		return nil, fmt.Errorf("%s: larger than %d bytes", p, maxRecordSize)
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
	// these exact bytes, so nothing was written.
	Unchanged bool
}

// Install makes a's files the current set in dir. dir is created if it is
// missing (0700 when private, else 0755); files and set directories take
// their read permissions from dir, so a set in a private state directory is
// 0600 and one in a shared directory is readable by the users who run
// Bouncer. On any error the current set is left as it was.
//
// a must come from Fetch, whose files have been verified; Install itself
// checks only names and that the set is complete.
func Install(dir string, a *Artifact, private bool, now time.Time) (*Result, error) {
	if a == nil || len(a.Files) == 0 {
		return nil, errors.New("nothing to install")
	}
	if err := checkFiles(a.Files); err != nil {
		return nil, err
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	mode := os.FileMode(0o755)
	if private {
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
	fileMode := 0o600 | st.Mode().Perm()&0o044
	dirMode := 0o700 | st.Mode().Perm()&0o055

	unlock, err := lock(dir, fileMode)
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
	if prev != "" {
		if cur, err := ReadInstalled(dir); err == nil && sameSet(cur, a) {
			return &Result{Set: cur, Unchanged: true}, nil
		}
	}

	rec := Record{Ref: a.Ref, Repository: a.Repository, Digest: a.Digest, Installed: now.UTC()}
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
		if err := writeNew(filepath.Join(stage, f.Name+BundleSuffix), f.Bundle, fileMode); err != nil {
			return nil, err
		}
	}
	if err := writeNew(filepath.Join(stage, RecordName), append(recJSON, '\n'), fileMode); err != nil {
		return nil, err
	}
	if err := os.Chmod(stage, dirMode); err != nil {
		return nil, err
	}
	if err := syncDir(stage); err != nil {
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
	if err := syncDir(dir); err != nil {
		return nil, fmt.Errorf("installed, but syncing %s failed: %v", dir, err)
	}
	prune(dir, setName, prev)

	s := &Set{Record: rec, Dir: filepath.Join(dir, setName)}
	for _, f := range rec.Files {
		s.Paths = append(s.Paths, filepath.Join(s.Dir, f))
	}
	return &Result{Set: s}, nil
}

// sameSet reports whether the installed set cur is a, byte for byte.
func sameSet(cur *Set, a *Artifact) bool {
	if cur.Digest != a.Digest || len(cur.Files) != len(a.Files) {
		return false
	}
	holds := func(path string, want []byte) bool {
		got, err := os.ReadFile(path)
		return err == nil && bytes.Equal(got, want)
	}
	for i, f := range a.Files {
		if cur.Files[i] != f.Name || !holds(cur.Paths[i], f.Data) || !holds(cur.Paths[i]+BundleSuffix, f.Bundle) {
			return false
		}
	}
	return true
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
func lock(dir string, mode os.FileMode) (func(), error) {
	p := filepath.Join(dir, lockName)
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, mode)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("another bouncer policy pull is installing into %s; try again when it is done", dir)
		}
		return nil, fmt.Errorf("lock %s: %v", p, err)
	}
	return func() {
		unix.Flock(int(f.Fd()), unix.LOCK_UN)
		f.Close()
	}, nil
}

// writeNew creates path (it must not exist), writes data and syncs it.
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

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
