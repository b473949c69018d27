// Package fsresolve resolves the symbolic links in the part of a path that
// exists, so a path check sees where a write would really land.
//
// A path argument may name a file that does not exist yet (a write creates
// it), so filepath.EvalSymlinks, which fails on a missing file, is not
// enough: Existing walks the path one component at a time, follows every
// link it meets in the existing part, and keeps the missing rest as written.
// ".." is applied to the resolved directory, the way the kernel applies it,
// not to the text: /a/link/.. is the parent of the link's target.
package fsresolve

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// maxLinks bounds how many symbolic links one resolution follows, as the
// kernel's ELOOP does.
const maxLinks = 255

// Existing returns the absolute path that path names, with every symbolic
// link in its existing part resolved and "." and ".." applied. path must be
// absolute. An error means the path could not be resolved (a link loop, a
// component that can't be examined); callers checking a write must then
// refuse it.
func Existing(path string) (string, error) {
	if !filepath.IsAbs(path) {
		return "", fmt.Errorf("resolve %q: not an absolute path", path)
	}
	return resolve(path, os.Lstat, os.Readlink)
}

func resolve(path string, lstat func(string) (fs.FileInfo, error), readlink func(string) (string, error)) (string, error) {
	todo := split(path)
	cur := "/"           // resolved, existing directory
	var missing []string // components below cur that do not exist
	links := 0
	for len(todo) > 0 {
		comp := todo[0]
		todo = todo[1:]
		switch comp {
		case ".":
			continue
		case "..":
			if len(missing) > 0 {
				missing = missing[:len(missing)-1]
			} else {
				cur = filepath.Dir(cur)
			}
			continue
		}
		if len(missing) > 0 {
			// Below something missing nothing exists, so nothing is a link.
			missing = append(missing, comp)
			continue
		}
		next := filepath.Join(cur, comp)
		fi, err := lstat(next)
		switch {
		case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
			missing = append(missing, comp)
			continue
		case err != nil:
			return "", fmt.Errorf("resolve %q: %w", path, err)
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			cur = next
			continue
		}
		links++
		if links > maxLinks {
			return "", fmt.Errorf("resolve %q: too many levels of symbolic links", path)
		}
		target, err := readlink(next)
		if err != nil {
			return "", fmt.Errorf("resolve %q: %w", path, err)
		}
		if filepath.IsAbs(target) {
			cur = "/"
		}
		todo = append(split(target), todo...)
	}
	return filepath.Join(append([]string{cur}, missing...)...), nil
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
