package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/bouncer-mcp/bouncer/internal/fsresolve"
	"github.com/bouncer-mcp/bouncer/internal/pathtree"
)

// OwnForm is how an upstream server is kept off Bouncer's own files (its
// state directory, policy and trust files, the client's config): by the
// kernel where it can, else by the engine's argument checks alone.
type OwnForm int

const (
	// OwnArguments leaves it to the engine's argument checks: a call
	// whose arguments reach an own file is refused, but a server that
	// builds a path the checks did not foresee (a shell, a join of two
	// arguments) reaches the file.
	OwnArguments OwnForm = iota
	// OwnLandlock confines the server to a Landlock domain that grants
	// everything around the own files: nothing in the state directory,
	// read-only on the other files, and nothing on the directories that
	// hold them beyond listing (so they can't be renamed or replaced).
	OwnLandlock
	// OwnNamespace starts the server in its own user, mount and PID
	// namespaces, with the state directory covered by an empty read-only
	// tmpfs and every other own file bind-mounted read-only over itself;
	// on macOS, a Seatbelt profile that denies the same.
	OwnNamespace
)

// ParseOwnForm reads a policy's own_files value: "namespace", "landlock"
// or "arguments".
func ParseOwnForm(s string) (OwnForm, error) {
	switch s {
	case "namespace":
		return OwnNamespace, nil
	case "landlock":
		return OwnLandlock, nil
	case "arguments":
		return OwnArguments, nil
	}
	return OwnArguments, fmt.Errorf("own_files %q: must be namespace, landlock or arguments", s)
}

// String is the policy's spelling of the form.
func (f OwnForm) String() string {
	switch f {
	case OwnNamespace:
		return "namespace"
	case OwnLandlock:
		return "landlock"
	case OwnArguments:
		return "arguments"
	}
	return fmt.Sprintf("OwnForm(%d)", int(f))
}

// OwnFiles are the paths an upstream server must not reach.
type OwnFiles struct {
	// Hidden are neither readable nor writable: the state directory, which
	// holds the audit log and its head, pending approvals, remembered
	// destinations and the session's history.
	Hidden []string
	// ReadOnly are readable but not writable: policy and trust files and
	// keys, an installed policy set's directory, the client's config and
	// hook files. A server may read its own rules; it must not change
	// the next session's.
	ReadOnly []string
}

// NewOwnFiles splits Bouncer's own paths (setup.Decider.Own: whatever it
// holds) into what is hidden (what lies in the state directory, and the
// directory itself) and what is read-only (everything else). Relative
// paths and duplicates are dropped; what lies in the state directory,
// as written or once links are followed, is covered by hiding it.
func NewOwnFiles(stateDir string, own []string) OwnFiles {
	var o OwnFiles
	var hidden []string
	if stateDir != "" && filepath.IsAbs(stateDir) {
		hidden = dedupe([]string{filepath.Clean(stateDir), resolveExisting(stateDir)})
		o.Hidden = []string{filepath.Clean(stateDir)}
	}
	seen := map[string]bool{}
	for _, p := range own {
		if !filepath.IsAbs(p) {
			continue
		}
		p = filepath.Clean(p)
		if seen[p] || pathtree.WithinAny(p, hidden) || pathtree.WithinAny(resolveExisting(p), hidden) {
			continue
		}
		seen[p] = true
		o.ReadOnly = append(o.ReadOnly, p)
	}
	return o
}

// Count is how many paths o protects.
func (o OwnFiles) Count() int { return len(o.Hidden) + len(o.ReadOnly) }

// resolveExisting follows the symbolic links in the part of p that exists.
func resolveExisting(p string) string {
	if r, err := fsresolve.Existing(p); err == nil {
		return r
	}
	return filepath.Clean(p)
}

// Missing lists the own paths that don't exist: nothing can be mounted
// over them, so only the argument checks keep a server from creating one
// (a policy file the config names but nobody wrote yet).
func (o OwnFiles) Missing() []string {
	_, missing, _ := pins(o, nil)
	return missing
}

// pinKind is what the launcher does at one path to keep an own file in
// place.
type pinKind int

const (
	// pinDir: a directory the path's resolution passes through, bound
	// onto itself (read-write, with what is mounted below it) so that it
	// is a mount point, which can be neither renamed nor removed: moving
	// ~/proj aside and making a new one would otherwise put a new
	// bouncer.yaml where the old one was.
	pinDir pinKind = iota
	// pinLink: a symbolic link the resolution passes through, bound onto
	// itself for the same reason.
	pinLink
	// pinReadOnly: an own file or directory, bound read-only over itself.
	pinReadOnly
	// pinHidden: the state directory, covered by an empty read-only tmpfs.
	pinHidden
)

func (k pinKind) String() string {
	return [...]string{"directory", "link", "read-only", "hidden"}[k]
}

// pin is one mount the launcher makes.
type pin struct {
	Path string
	Kind pinKind
}

// pins plans the mounts that keep o in place: for each own path that
// exists, every directory and symbolic link its resolution passes through
// (pinDir, pinLink), then the resolved path itself (pinHidden or
// pinReadOnly). Nothing is planned at or below a hidden path but the
// hidden path itself, nor below a read-only directory (which is read-only
// whole), nor at the root. The order is by depth, so every mount is made
// through the ones above it. missing lists own paths that don't exist.
//
// viewsOf, when not nil, gives the other places the mount table shows a
// path at (views); each entry pinned is pinned there too, where it is the
// same file, with the directories that lead there.
func pins(o OwnFiles, viewsOf func(string) []string) (out []pin, missing []string, err error) {
	kinds := map[string]pinKind{}
	add := func(p string, k pinKind) {
		if old, ok := kinds[p]; !ok || k > old {
			kinds[p] = k
		}
	}
	addSteps := func(steps []pin) {
		for _, s := range steps {
			add(s.Path, s.Kind)
		}
	}
	// pinAt pins p as k, and the views of p where they are p.
	pinAt := func(p string, k pinKind) {
		add(p, k)
		if viewsOf == nil {
			return
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return
		}
		for _, v := range viewsOf(p) {
			vi, err := os.Lstat(v)
			if err != nil || !os.SameFile(fi, vi) {
				continue
			}
			dir := filepath.Dir(v)
			if steps, final, err := walk(dir); err == nil {
				addSteps(steps)
				add(final, pinDir)
				add(v, k)
			}
		}
	}
	plan := func(paths []string, k pinKind) error {
		for _, p := range paths {
			steps, final, err := walk(p)
			if errors.Is(err, fs.ErrNotExist) {
				missing = append(missing, p)
				continue
			}
			if err != nil {
				return fmt.Errorf("own file %s: %w", p, err)
			}
			for _, s := range steps {
				pinAt(s.Path, s.Kind)
			}
			pinAt(final, k)
		}
		return nil
	}
	if err := plan(o.Hidden, pinHidden); err != nil {
		return nil, nil, err
	}
	if err := plan(o.ReadOnly, pinReadOnly); err != nil {
		return nil, nil, err
	}
	var hidden, readOnlyDirs []string
	for p, k := range kinds {
		switch k {
		case pinHidden:
			hidden = append(hidden, p)
		case pinReadOnly:
			if st, err := os.Lstat(p); err == nil && st.IsDir() {
				readOnlyDirs = append(readOnlyDirs, p)
			}
		}
	}
	for p, k := range kinds {
		switch {
		case p == "/":
		case k != pinHidden && pathtree.WithinAny(p, hidden):
		case k == pinHidden && strictlyWithinAny(p, hidden):
		case strictlyWithinAny(p, readOnlyDirs):
		default:
			out = append(out, pin{p, k})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		di, dj := strings.Count(out[i].Path, "/"), strings.Count(out[j].Path, "/")
		if di != dj {
			return di < dj
		}
		return out[i].Path < out[j].Path
	})
	return out, missing, nil
}

// strictlyWithinAny reports whether p lies below (not at) one of dirs.
func strictlyWithinAny(p string, dirs []string) bool {
	for _, d := range dirs {
		if p != d && pathtree.Within(p, d) {
			return true
		}
	}
	return false
}

// walk resolves the absolute path p as the kernel does, one component at a
// time, and returns every directory and symbolic link it passes through
// (each as a path with no link in it but, for a link, the last component)
// and where p leads. An error wraps fs.ErrNotExist when a component is
// missing.
func walk(p string) (steps []pin, final string, err error) {
	if !filepath.IsAbs(p) {
		return nil, "", fmt.Errorf("%q is not absolute", p)
	}
	rest := strings.Split(p, "/")
	cur := "/"
	links := 0
	for len(rest) > 0 {
		c := rest[0]
		rest = rest[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, c)
		st, err := os.Lstat(next)
		if err != nil {
			return steps, "", err
		}
		if st.Mode()&fs.ModeSymlink != 0 {
			if links++; links > 40 {
				return steps, "", &fs.PathError{Op: "resolve", Path: p, Err: syscall.ELOOP}
			}
			target, err := os.Readlink(next)
			if err != nil {
				return steps, "", err
			}
			steps = append(steps, pin{next, pinLink})
			if filepath.IsAbs(target) {
				cur = "/"
			}
			rest = append(strings.Split(target, "/"), rest...)
			continue
		}
		if hasMore(rest) {
			if !st.IsDir() {
				return steps, "", &fs.PathError{Op: "resolve", Path: next, Err: syscall.ENOTDIR}
			}
			steps = append(steps, pin{next, pinDir})
		}
		cur = next
	}
	return steps, cur, nil
}

// hasMore reports whether rest still names a component.
func hasMore(rest []string) bool {
	for _, c := range rest {
		if c != "" && c != "." {
			return true
		}
	}
	return false
}

// ownNote is the start line's part about own files, e.g. "own files:
// mount namespace (state directory hidden, 5 paths read-only)".
func ownNote(form OwnForm, o OwnFiles, why []string, missing []string, st ownStatus) string {
	var s string
	switch form {
	case OwnNamespace:
		s = fmt.Sprintf("own files: %s (%s)", namespaceName(), ownCounts(o))
		if st.Proc != "" {
			s += "; " + st.Proc
		}
	case OwnLandlock:
		s = fmt.Sprintf("own files: landlock around %s (%s)", pathCount(o.Count()), ownCounts(o))
	default:
		s = "own files: argument checks only"
	}
	if len(why) > 0 {
		s += ": " + strings.Join(why, "; ")
	}
	if len(missing) > 0 {
		s += fmt.Sprintf("; not mounted over, left to the argument checks as they don't exist: %s", strings.Join(missing, " "))
	}
	return s
}

func ownCounts(o OwnFiles) string {
	hidden := "no state directory"
	if len(o.Hidden) > 0 {
		hidden = "state directory hidden"
	}
	return fmt.Sprintf("%s, %s read-only", hidden, pathCount(len(o.ReadOnly)))
}

// pathCount is "1 path" or "N paths".
func pathCount(n int) string {
	if n == 1 {
		return "1 path"
	}
	return fmt.Sprintf("%d paths", n)
}

// ownStatus is what the launcher reports on its status pipe once it has
// set up the server's confinement, or why it could not.
type ownStatus struct {
	// Fail is why the form could not be set up; empty on success.
	Fail string `json:"fail,omitempty"`
	// Proc is said in the start line when the namespace form could not
	// mount a /proc of its own.
	Proc string `json:"proc,omitempty"`
}
