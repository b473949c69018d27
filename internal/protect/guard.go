package protect

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"github.com/bouncer-mcp/bouncer/internal/pathtree"
	"github.com/bouncer-mcp/bouncer/internal/policy"
)

// Around returns the paths that together cover the directory dir except
// the guarded paths in it: what a filesystem server rooted at dir may be
// allowed to write without reaching Bouncer's own files (its policy, its
// state directory, its trust files, its audit log) or the files that make
// the client run Bouncer at all (the MCP configs and their hook files).
// A server that could write those could rewrite its own rules, forge an
// approval or a vouched destination, or unwrap itself at the next start.
//
// When no guarded path lies in dir, that is dir itself. Otherwise it is
// dir's entries, each one that holds a guarded path replaced by its own
// entries, and so on down, leaving out the guarded paths themselves and
// what lies in them; left lists what was left out (the guarded paths that
// exist in dir, and entries that could not be listed safely). An entry
// that is a symbolic link is judged by where it points, as the engine
// resolves a prefix: one that leads to or above a guarded path is left
// out, not followed. If dir itself is, or lies in, a guarded path, cover
// is empty.
//
// The list is of what exists now: an entry created later at a level that
// was listed is in no prefix, so writes there are refused until the
// policy names it. Guarded paths that don't exist are left out all the
// same, so a hook file init is about to create is never covered.
//
// dir and every guarded path must be absolute.
func Around(dir string, guarded []string) (cover, left []string) {
	g := make([]guard, 0, len(guarded))
	for _, p := range guarded {
		g = append(g, guard{filepath.Clean(p), resolve(p)})
	}
	return around(filepath.Clean(dir), g)
}

type guard struct{ path, real string }

func around(dir string, g []guard) (cover, left []string) {
	real := resolve(dir)
	for _, x := range g {
		if pathtree.Within(dir, x.path) || pathtree.Within(real, x.real) {
			return nil, []string{dir}
		}
	}
	holds := false
	for _, x := range g {
		holds = holds || pathtree.Within(x.path, dir) || pathtree.Within(x.real, real)
	}
	if !holds {
		return []string{dir}, nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		// It holds a guarded path and can't be listed: none of it is
		// covered.
		return nil, []string{dir}
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		if e.Type()&fs.ModeSymlink != 0 {
			if touches(resolve(p), g) {
				left = append(left, p)
			} else {
				cover = append(cover, p)
			}
			continue
		}
		c, l := around(p, g)
		cover, left = append(cover, c...), append(left, l...)
	}
	return cover, left
}

// touches reports whether the resolved path p is, lies in or holds a
// guarded path.
func touches(p string, g []guard) bool {
	for _, x := range g {
		if pathtree.Within(p, x.real) || pathtree.Within(x.real, p) || pathtree.Within(p, x.path) || pathtree.Within(x.path, p) {
			return true
		}
	}
	return false
}

// Covered returns the guarded paths that one of prefixes (absolute, as the
// policy stores them) covers, as written or once links are followed.
func Covered(prefixes, guarded []string) []string {
	var out []string
	for _, p := range guarded {
		for _, pre := range prefixes {
			if pathtree.Within(p, pre) || pathtree.Within(resolve(p), resolve(pre)) {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

// Reaches returns the paths among others that a write tool of pol may
// write: those one of its allowed_path_prefixes covers (Covered). A tool
// refused outright (max_calls: 0) reaches none; one with no prefixes is
// unconfined, which Describe says, and is not counted here.
func Reaches(pol *policy.Policy, others []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, name := range pol.Names() {
		t, ok := pol.Lookup(name)
		if !ok || len(t.WriteParams) == 0 || len(t.AllowedPathPrefixes) == 0 || t.MaxCalls != nil && *t.MaxCalls == 0 {
			continue
		}
		for _, p := range Covered(t.AllowedPathPrefixes, others) {
			if !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	return out
}

// resolve follows the symbolic links of the longest part of p that
// exists, and keeps the rest as written, so that a path and a link to it
// compare equal even when the path doesn't exist yet.
func resolve(p string) string {
	p = filepath.Clean(p)
	rest := ""
	for {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(r, rest)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return filepath.Join(p, rest)
		}
		parent := filepath.Dir(p)
		if parent == p {
			return filepath.Join(p, rest)
		}
		rest = filepath.Join(filepath.Base(p), rest)
		p = parent
	}
}
