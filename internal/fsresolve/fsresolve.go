// Package fsresolve resolves the symbolic links in the part of a path that
// exists, so a path check sees where a write would really land.
//
// A path argument may name a file that does not exist yet (a write creates
// it), so filepath.EvalSymlinks, which fails on a missing file, is not
// enough: Existing walks the path one component at a time, follows every
// link it meets in the existing part, and keeps the missing rest as written.
// ".." is applied to the resolved directory, the way the kernel applies it,
// not to the text: /a/link/.. is the parent of the link's target. A ".."
// after a component that is missing or not a directory is an error: the
// kernel fails there, mkdir -p would create the missing one, and a server
// that cleans the path first skips both.
//
// It also refuses names that a server could match to a different entry: a
// component that does not exist byte for byte while its directory holds an
// entry equal to it under Unicode normalization (the reference filesystem
// server then uses that entry, link and all), or an existing component
// whose directory holds another entry equal to it under normalization.
package fsresolve

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/text/unicode/norm"
)

// maxLinks bounds how many symbolic links one resolution follows, as the
// kernel's ELOOP does.
const maxLinks = 255

// AmbiguousError is a path component that names one entry for the kernel
// and may name another for a server that matches names under Unicode
// normalization (or for a file system that normalizes them).
type AmbiguousError struct {
	Dir   string // the resolved directory holding both names
	Name  string // the component as written
	Entry string // the other entry, equal to Name under normalization
	// Missing is true when Name itself does not exist.
	Missing bool
}

// OnDisk returns the entry the directory holds.
func (e *AmbiguousError) OnDisk() string { return e.Entry }

func (e *AmbiguousError) Error() string {
	if e.Missing {
		return fmt.Sprintf("%+q does not exist in %s, but %+q, the same name under Unicode normalization, does; a server or file system that matches names by normalization would use it", e.Name, e.Dir, e.Entry)
	}
	return fmt.Sprintf("%s holds both %+q and %+q, the same name under Unicode normalization; a server or file system that normalizes names may use either", e.Dir, e.Name, e.Entry)
}

// FS is the file system a resolution reads: Lstat and Readlink as in
// package os, and ReadDirNames listing the names in a directory.
type FS struct {
	Lstat        func(string) (fs.FileInfo, error)
	Readlink     func(string) (string, error)
	ReadDirNames func(string) ([]string, error)
}

// OS is the machine's own file system.
var OS = FS{Lstat: os.Lstat, Readlink: os.Readlink, ReadDirNames: readDirNames}

func readDirNames(dir string) ([]string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Readdirnames(-1)
}

// Existing returns the absolute path that path names, with every symbolic
// link in its existing part resolved and "." and ".." applied the way the
// kernel applies them. path must be absolute. An error means the path could
// not be resolved (a link loop, a component that can't be examined, an
// *AmbiguousError); callers checking a write must then refuse it.
func Existing(path string) (string, error) { return OS.Existing(path) }

// Existing is the package's Existing over fsys.
func (fsys FS) Existing(path string) (string, error) {
	if !filepath.IsAbs(path) {
		return "", fmt.Errorf("resolve %q: not an absolute path", path)
	}
	return fsys.resolve(path)
}

func (fsys FS) resolve(path string) (string, error) {
	todo := split(path)
	cur := "/"           // resolved, existing
	curDir := true       // cur is a directory
	var missing []string // components below cur that do not exist
	links := 0
	for len(todo) > 0 {
		comp := todo[0]
		todo = todo[1:]
		switch comp {
		case ".":
			continue
		case "..":
			// The kernel can't go up from what is not a directory, while
			// mkdir -p would create a missing one and a server that cleans
			// the path first drops it: no reading is safe to pick.
			if len(missing) > 0 || !curDir {
				last := filepath.Base(cur)
				if len(missing) > 0 {
					last = missing[len(missing)-1]
				}
				return "", fmt.Errorf("resolve %q: \"..\" follows %q, which is not an existing directory; give the path without \"..\"", path, last)
			}
			cur = filepath.Dir(cur)
			continue
		}
		if len(missing) > 0 {
			// Below something missing nothing exists, so nothing is a link.
			missing = append(missing, comp)
			continue
		}
		next := filepath.Join(cur, comp)
		fi, err := fsys.Lstat(next)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if err := fsys.unique(cur, comp, nil); err != nil {
				return "", err
			}
			missing = append(missing, comp)
			continue
		case errors.Is(err, syscall.ENOTDIR):
			// cur is not a directory: nothing below it exists.
			missing = append(missing, comp)
			continue
		case err != nil:
			return "", fmt.Errorf("resolve %q: %w", path, err)
		}
		if !invariant(comp) {
			if err := fsys.unique(cur, comp, fi); err != nil {
				return "", err
			}
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			cur, curDir = next, fi.IsDir()
			continue
		}
		links++
		if links > maxLinks {
			return "", fmt.Errorf("resolve %q: too many levels of symbolic links", path)
		}
		target, err := fsys.Readlink(next)
		if err != nil {
			return "", fmt.Errorf("resolve %q: %w", path, err)
		}
		if filepath.IsAbs(target) {
			cur, curDir = "/", true
		}
		todo = append(split(target), todo...)
	}
	return filepath.Join(append([]string{cur}, missing...)...), nil
}

// unique returns an *AmbiguousError when dir holds an entry other than name
// that is equal to it under Unicode normalization.
//
// Equal means equal after NFKC, which also makes NFC and NFD spellings of
// one name equal: the reference filesystem server matches a missing name
// by NFC, macOS file systems match names by canonical equivalence, and ZFS
// can be set to match them by compatibility equivalence. Case is not
// folded: a case-insensitive file system finds the entry with Lstat itself,
// so the resolution already follows it, and no server we know of matches
// case-insensitively on its own; refusing "readme.md" beside "README.md"
// would refuse ordinary files.
//
// fi is what Lstat found for name, nil when it found nothing. A twin that is
// the same file (a file system that normalizes names lists it under one
// spelling and finds it under both) is no ambiguity.
func (fsys FS) unique(dir, name string, fi fs.FileInfo) error {
	names, err := fsys.ReadDirNames(dir)
	if err != nil && fi != nil && errors.Is(err, fs.ErrPermission) {
		// An existing name is what the kernel and the reference server
		// open; a twin matters only to a server that normalizes what it is
		// given. A directory the proxy may not list (its sandbox lists only
		// the allowed prefixes) is left unchecked for that.
		return nil
	}
	if err != nil {
		return fmt.Errorf("listing %s to rule out a Unicode look-alike of %q: %w", dir, name, err)
	}
	key := norm.NFKC.String(name)
	for _, n := range names {
		if n == name || norm.NFKC.String(n) != key {
			continue
		}
		if fi != nil {
			if tfi, err := fsys.Lstat(filepath.Join(dir, n)); err == nil && os.SameFile(fi, tfi) {
				continue
			}
		}
		return &AmbiguousError{Dir: dir, Name: name, Entry: n, Missing: fi == nil}
	}
	return nil
}

// invariant reports whether every normalization form leaves name as it is
// (every ASCII name does): then a server that normalizes the name it is
// given still asks for this entry.
func invariant(name string) bool {
	return norm.NFC.IsNormalString(name) && norm.NFD.IsNormalString(name) &&
		norm.NFKC.IsNormalString(name) && norm.NFKD.IsNormalString(name)
}

// split cuts a path into its components, dropping empty ones.
func split(p string) []string {
	var out []string
	for _, c := range strings.Split(p, "/") {
		if c != "" {
			out = append(out, c)
		}
	}
	return out
}
