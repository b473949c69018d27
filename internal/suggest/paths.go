package suggest

import (
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/bouncer-mcp/bouncer/internal/audit"
	"github.com/bouncer-mcp/bouncer/internal/pathtree"
)

// pathUse is one written path and the line it came from.
type pathUse struct {
	path  string
	entry audit.Entry
}

// systemDirs are never suggested: writing there changes how the machine
// or its programs run.
var systemDirs = []string{"/etc", "/root", "/proc", "/sys", "/dev", "/boot", "/usr", "/bin", "/sbin", "/lib", "/lib64", "/var", "/opt", "/System", "/Library", "/private/etc"}

// sensitive says why a path is never suggested, or "".
func sensitive(p string) string {
	if p == "/" {
		return "the root directory, which as a prefix would admit every path"
	}
	if pathtree.WithinAny(p, systemDirs) {
		return "a system directory"
	}
	for _, c := range strings.Split(p, "/") {
		if strings.HasPrefix(c, ".") && c != "." && c != ".." {
			return "a hidden file or directory (~/.ssh, ~/.config, .git and dotfiles change how programs run)"
		}
	}
	return ""
}

// depth counts a clean absolute path's components: /a/b is 2.
func depth(p string) int {
	if p == "/" {
		return 0
	}
	return strings.Count(p, "/")
}

// homeRoot reports a user's home directory itself (/home/u, /Users/u,
// or one of homes, the home directories the caller knows of wherever they
// lie), or a directory that holds one of homes: as a prefix it would
// admit a whole home, dotfiles and all.
func homeRoot(p string, homes []string) bool {
	if depth(p) == 2 && (strings.HasPrefix(p, "/home/") || strings.HasPrefix(p, "/Users/")) {
		return true
	}
	for _, h := range homes {
		if filepath.IsAbs(h) && pathtree.Within(filepath.Clean(h), p) {
			return true
		}
	}
	return false
}

// groupPaths turns written paths into prefixes: each path's directory;
// directories below another one in the set fold into it; three or more
// sibling directories fold into their parent. Nothing shallower than two
// levels, and no home directory itself (nor one holding a home of homes),
// becomes a prefix: such a path is
// suggested as itself. Relative and sensitive paths are not suggested, nor
// a prefix that is or passes through a symlink (resolve places it
// elsewhere): what it admits would lie wherever the link points, and a
// link can be changed after the review.
//
// A prefix that is, holds or lies in one of own (Bouncer's own files: the
// policy, the client config init carved out of a project's prefix) is not
// suggested either: each path written below it is, as itself, but for
// those that are own files.
func groupPaths(uses []pathUse, resolve func(string) (string, error), homes, own []string) ([]Prefix, []string) {
	var unplaced []string
	dirs := map[string]bool{}
	for _, u := range uses {
		p := u.path
		if !filepath.IsAbs(p) {
			unplaced = append(unplaced, p+": relative, so where it lands depends on the server")
			continue
		}
		p = filepath.Clean(p)
		if why := sensitive(p); why != "" {
			unplaced = append(unplaced, p+": "+why)
			continue
		}
		d := filepath.Dir(p)
		if depth(d) < 2 || homeRoot(d, homes) {
			d = p // the file itself
		}
		dirs[d] = true
	}
	// Siblings fold into their parent, when it is deep enough.
	for changed := true; changed; {
		changed = false
		byParent := map[string][]string{}
		for d := range dirs {
			byParent[filepath.Dir(d)] = append(byParent[filepath.Dir(d)], d)
		}
		for parent, kids := range byParent {
			if len(kids) >= 3 && depth(parent) >= 2 && !homeRoot(parent, homes) && sensitive(parent) == "" {
				for _, k := range kids {
					delete(dirs, k)
				}
				dirs[parent] = true
				changed = true
			}
		}
	}
	// A directory below another in the set adds nothing.
	list := make([]string, 0, len(dirs))
	for d := range dirs {
		list = append(list, d)
	}
	sort.Strings(list)
	var prefixes []string
	for _, d := range list {
		if len(prefixes) > 0 && pathtree.Within(d, prefixes[len(prefixes)-1]) {
			continue
		}
		if !touchesOwn(d, own) {
			prefixes = append(prefixes, d)
			continue
		}
		// Around Bouncer's own files: each written path, as itself.
		for _, u := range uses {
			p := filepath.Clean(u.path)
			if !filepath.IsAbs(u.path) || sensitive(p) != "" || !pathtree.Within(p, d) {
				continue
			}
			if touchesOwn(p, own) {
				unplaced = append(unplaced, p+": Bouncer's own file (a policy, trust or state file, or a client config that launches Bouncer), which no server may write")
				continue
			}
			if !slices.Contains(prefixes, p) {
				prefixes = append(prefixes, p)
			}
		}
	}
	sort.Strings(prefixes)
	kept := prefixes[:0]
	for _, p := range prefixes {
		if !slices.ContainsFunc(kept, func(k string) bool { return pathtree.Within(p, k) }) {
			kept = append(kept, p)
		}
	}
	prefixes = kept
	out := make([]Prefix, 0, len(prefixes))
	for _, pre := range prefixes {
		if resolve != nil {
			real, err := resolve(pre)
			switch {
			case err != nil:
				unplaced = append(unplaced, pre+": can't be resolved here ("+err.Error()+"), so where it leads is unknown")
				continue
			case real != pre:
				unplaced = append(unplaced, pre+": passes through a symlink (it leads to "+real+")")
				continue
			}
		}
		px := Prefix{Prefix: pre}
		seen := map[string]bool{}
		for _, u := range uses {
			p := filepath.Clean(u.path)
			if filepath.IsAbs(u.path) && sensitive(p) == "" && pathtree.Within(p, pre) {
				px.Evidence.add(u.entry)
				if !seen[p] {
					seen[p] = true
					px.Paths = append(px.Paths, p)
				}
			}
		}
		sort.Strings(px.Paths)
		out = append(out, px)
	}
	sort.Strings(unplaced)
	return out, dedupe(unplaced)
}

// touchesOwn reports whether p is, holds or lies in one of own.
func touchesOwn(p string, own []string) bool {
	for _, o := range own {
		if o != "" && (pathtree.Within(p, o) || pathtree.Within(o, p)) {
			return true
		}
	}
	return false
}

func dedupe(in []string) []string {
	var out []string
	for i, s := range in {
		if i == 0 || s != in[i-1] {
			out = append(out, s)
		}
	}
	return out
}
