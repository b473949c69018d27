// Package pathtree is Bouncer's one test of whether a path lies inside a
// directory. The engine's allowed_path_prefixes and its own-state guard,
// the sandbox's plan, `bouncer suggest` and `policy pull` all ask that
// question, and `bouncer init` when it names a path relative to the
// project; if two of them answered it differently, a prefix a person
// reviewed in one place would admit something else in another. So they
// all call Within (WithinFold where case must not matter, Below where the
// relative rest is wanted too), and its tests are the rule's only
// statement.
//
// The comparison is lexical, by whole path components: /out contains
// /out and /out/a, never /outx. Both sides are cleaned first
// (filepath.Clean), so a trailing separator, a doubled one, "." and an
// inner ".." change nothing: /out/ is /out, /out/a/../b is /out/b. The
// root contains every absolute path. Symbolic links are not followed:
// a caller that must judge where a path really leads resolves it first
// and asks again.
//
// Within agrees with filepath.Rel on every pair of non-empty paths (on
// the systems Bouncer runs on, Linux and macOS, where "/" separates): it
// is true exactly when Rel(dir, path) succeeds and does not start with
// "..". That makes the cases Rel has an answer for explicit:
//
//   - Two relative paths compare as if both were read against the same
//     directory: "a/b" is within "a", "../x" is not within ".", "." holds
//     every relative path that does not climb out of it.
//   - A relative path and an absolute one never contain each other: there
//     is no answer without a working directory, and guessing one would
//     make the answer depend on where Bouncer runs. Callers read relative
//     paths against their directory (filepath.Join, filepath.Abs) first.
//   - An empty path or directory is no path: nothing contains it and it
//     contains nothing (Rel would read it as ".").
package pathtree

import (
	"path/filepath"
	"strings"
)

// Within reports whether path is dir or lies below it, comparing bytes:
// the case of a letter matters, as it does on Linux file systems.
func Within(path, dir string) bool {
	_, ok := Below(path, dir)
	return ok
}

// Below is Within that also says how: rest is path relative to dir ("."
// for dir itself, "a/b" for dir/a/b), cleaned, as filepath.Rel gives it.
// It is for callers that show or write a path relative to a directory
// when it lies inside one, so that "inside" there is the rule here.
func Below(path, dir string) (rest string, ok bool) {
	if path == "" || dir == "" {
		return "", false
	}
	p, d := filepath.Clean(path), filepath.Clean(dir)
	if filepath.IsAbs(p) != filepath.IsAbs(d) {
		return "", false
	}
	switch {
	case p == d:
		return ".", true
	case d == string(filepath.Separator): // the root; p is absolute
		rest = p[1:]
	case d == ".":
		rest = p
	default:
		r, ok := strings.CutPrefix(p, d+string(filepath.Separator))
		if !ok {
			return "", false
		}
		rest = r
	}
	// Clean leaves ".." only at the start of a relative path, so a rest
	// that starts with it climbs out of dir ("../.." below "..").
	if rest == ".." || strings.HasPrefix(rest, ".."+string(filepath.Separator)) {
		return "", false
	}
	return rest, true
}

// WithinFold is Within with both paths lower-cased first (strings.ToLower),
// so /Users/A/.Bouncer is within /users/a/.bouncer. It is for deny lists
// on a case-insensitive file system (macOS by default), where any spelling
// reaches the same file: there it over-matches, which is the safe side
// for a list of things to refuse. Never use it to admit a path.
func WithinFold(path, dir string) bool {
	return Within(strings.ToLower(path), strings.ToLower(dir))
}

// WithinAny reports whether path is within (as Within) one of dirs.
func WithinAny(path string, dirs []string) bool {
	for _, d := range dirs {
		if Within(path, d) {
			return true
		}
	}
	return false
}
