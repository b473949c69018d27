package engine

import (
	"fmt"
	"net/url"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"

	"github.com/bouncer-mcp/bouncer/internal/pathtree"
	"github.com/bouncer-mcp/bouncer/internal/policy"
)

// Bouncer's own state (its state directory, the policy and trust files,
// the audit log) is never the target of a tool argument, whatever the
// policy says and whether or not the sandbox runs. A server that could
// write remembered.json would make the attacker "vouched by a human"; one
// that could write the policy would set the next session's rules; one
// that could replace the audit log would replace the record. Reading them
// is refused too: the session key and the audit log are in there.
//
// The rule over-matches on purpose, since a false deny is safe here:
//
//   - every string in the arguments that may be read as a path is judged:
//     the value of a path-shaped argument, and any value that starts like
//     a path (/, ~, ., file:), holds a separator, or is the name of one of
//     the protected entries;
//   - in an argument that holds a command line or code (command, script,
//     code, args: policy.IsCommandName), each word a shell or interpreter
//     may read as a path is judged too (commandWords);
//   - each is judged in every spelling a server may turn it into: as
//     written, percent-decoded (twice), cut at a NUL, NFKC-normalized,
//     with backslashes as separators, a file: URI as its path, ~, ~name,
//     $HOME and ${HOME} as the home directory, and what follows any other
//     $NAME as a relative path;
//   - an absolute path is refused when it lies in a protected path (by
//     component, ignoring case, as macOS does), before and after its
//     symlinks are resolved; a write argument is refused also when it is
//     an ancestor of one (moving or deleting it takes the state along);
//   - a relative path is refused when, against any directory, it could
//     reach a protected path: when it starts with the protected path's
//     last components ("bouncer.yaml", ".bouncer/remembered.json"), with
//     leading ".." dropped; and when it reaches one from the server's
//     working directory, the tool's relative_paths directory or its
//     allowed prefixes.

// maxOwnCandidate bounds the strings judged as paths: the kernel takes no
// longer path.
const maxOwnCandidate = maxPathLen + 1

// checkOwnState refuses a call whose arguments name Bouncer's own state.
func (e *Engine) checkOwnState(t *policy.Tool, args map[string]any) (Decision, bool) {
	if len(e.opts.Own) == 0 {
		return Decision{}, true
	}
	writes := map[string]bool{}
	for _, w := range t.WriteParams {
		writes[w] = true
	}
	names := make([]string, 0, len(args))
	for k := range args {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, name := range names {
		var found string
		var what string
		walkStrings(args[name], name, policy.IsPathName(name), policy.IsCommandName(name), func(where, s string, pathNamed, command bool) bool {
			if w, ok := e.ownTarget(t, s, pathNamed, writes[name]); ok {
				found, what = where+"="+quote(s), w
				return false
			}
			if !command {
				return true
			}
			for _, tok := range commandWords(s) {
				if w, ok := e.ownTarget(t, tok, false, false); ok {
					found, what = where+"="+quote(s), w
					return false
				}
			}
			return true
		})
		if found != "" {
			return Decision{Verdict: Deny, Rule: RulePath,
				Reason: fmt.Sprintf("%s reaches Bouncer's own state (%s), which no tool may read or write; "+
					"the policy, trust files, audit log and state directory are out of every server's reach", found, what)}, false
		}
	}
	return Decision{}, true
}

// walkStrings calls fn on each string in v (list elements and object
// values, at any depth) until fn returns false. pathNamed says the string
// sits under a path-shaped argument or key, command under one that holds
// a command line or code.
func walkStrings(v any, where string, pathNamed, command bool, fn func(where, s string, pathNamed, command bool) bool) bool {
	switch x := v.(type) {
	case string:
		return fn(where, x, pathNamed, command)
	case []any:
		for i, el := range x {
			if !walkStrings(el, where+"["+strconv.Itoa(i)+"]", pathNamed, command, fn) {
				return false
			}
		}
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if !walkStrings(x[k], where+"."+k, pathNamed || policy.IsPathName(k), command || policy.IsCommandName(k), fn) {
				return false
			}
		}
	}
	return true
}

// ownTarget reports whether s, read as a path, reaches a protected path,
// and which.
func (e *Engine) ownTarget(t *policy.Tool, s string, pathNamed, write bool) (string, bool) {
	if len(s) > maxOwnCandidate || !e.pathLike(s, pathNamed) {
		return "", false
	}
	for _, f := range pathSpellings(s, e.opts.Home) {
		if filepath.IsAbs(f) {
			if w, ok := e.ownAbs(f, write); ok {
				return w, true
			}
			continue
		}
		if w, ok := ownTail(f, e.opts.Own); ok {
			return w, true
		}
		for _, base := range e.relativeBases(t) {
			if w, ok := e.ownAbs(strings.TrimSuffix(base, "/")+"/"+f, write); ok {
				return w, true
			}
		}
	}
	return "", false
}

// commandWords returns the words of a command line or of code that a
// shell or an interpreter may read as paths: s split at white space,
// quotes, and shell and code punctuation ("cat ~/.bouncer/key",
// "open('/x/.bouncer/key')", "--output=/x"), and each word from its first
// "/" or "~" on ("-o/x/.bouncer/key"). Each is judged as a written path.
func commandWords(s string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(s, func(r rune) bool {
		return unicode.IsSpace(r) || strings.ContainsRune("'\"`;|&<>(),=[]{}", r)
	}) {
		out = append(out, w)
		if i := strings.IndexAny(w, "/~"); i > 0 {
			out = append(out, w[i:])
		}
	}
	return out
}

// pathLike reports whether s may be read as a path.
func (e *Engine) pathLike(s string, pathNamed bool) bool {
	t := strings.TrimSpace(s)
	switch {
	case t == "":
		return false
	case pathNamed:
		return true
	case strings.ContainsAny(t, "/\\"), strings.HasPrefix(t, "~"), strings.HasPrefix(t, "."),
		len(t) >= 5 && strings.EqualFold(t[:5], "file:"):
		return true
	}
	for _, o := range e.opts.Own {
		if strings.EqualFold(t, filepath.Base(o)) {
			return true
		}
	}
	return false
}

// pathSpellings returns s and what servers may turn it into: cut at a NUL
// (C reads no further), percent-decoded once and twice, NFKC-normalized,
// with backslashes as separators, a file: URI as its path, and a home
// directory written as ~, ~name, $HOME or ${HOME} expanded (a shell, or a
// server that expands them; another user's home is over-matched, which
// only denies). Any other $NAME or ${NAME} in front is some directory:
// what follows it is judged as a relative path.
func pathSpellings(s, home string) []string {
	var out []string
	seen := map[string]bool{}
	add := func(f string) {
		f = strings.TrimFunc(f, strippable)
		if f == "" || seen[f] {
			return
		}
		seen[f] = true
		out = append(out, f)
	}
	cur := []string{s}
	for c := s; len(cur) < 3; {
		u, err := url.PathUnescape(c)
		if err != nil || u == c {
			break
		}
		cur, c = append(cur, u), u
	}
	for _, c := range cur {
		if i := strings.IndexByte(c, 0); i >= 0 {
			cur = append(cur, c[:i])
		}
	}
	for _, c := range cur {
		n := norm.NFKC.String(c)
		for _, f := range []string{c, n, strings.ReplaceAll(c, `\`, "/"), strings.ReplaceAll(n, `\`, "/")} {
			f = strings.TrimFunc(f, strippable)
			add(f)
			if len(f) >= 5 && strings.EqualFold(f[:5], "file:") {
				if u, err := url.Parse(f); err == nil && u.Path != "" {
					add(u.Path)
				}
				add(strings.TrimLeft(f[5:], "/"))
				add("/" + strings.TrimLeft(f[5:], "/"))
			}
			if dir, rest, ok := homeLike(f); ok {
				if home != "" && dir == "HOME" {
					add(home + rest)
				}
				add(strings.TrimLeft(rest, "/"))
			}
		}
	}
	return out
}

// homeLike splits a path that starts with a directory a shell or a server
// expands: ~ and ~name (the name "HOME"), $HOME and ${HOME} ("HOME"), and
// $NAME or ${NAME} (NAME). rest is what follows it, "" or from a "/".
func homeLike(f string) (dir, rest string, ok bool) {
	split := func(p string) (string, string) {
		if i := strings.IndexByte(p, '/'); i >= 0 {
			return p[:i], p[i:]
		}
		return p, ""
	}
	switch {
	case strings.HasPrefix(f, "~"):
		_, rest = split(f)
		return "HOME", rest, true
	case strings.HasPrefix(f, "${"):
		end := strings.IndexByte(f, '}')
		if end < 0 || (end+1 < len(f) && f[end+1] != '/') {
			return "", "", false
		}
		return f[2:end], f[end+1:], true
	case strings.HasPrefix(f, "$"):
		dir, rest = split(f[1:])
		return dir, rest, dir != ""
	}
	return "", "", false
}

// ownAbs judges an absolute path against the protected paths, as written
// and resolved.
func (e *Engine) ownAbs(p string, write bool) (string, bool) {
	clean := filepath.Clean(p)
	if w, ok := ownContains(clean, e.opts.Own, write); ok {
		return w, true
	}
	if e.opts.Resolve == nil {
		return "", false
	}
	for _, q := range []string{p, clean} {
		if real, err := e.opts.Resolve(q); err == nil {
			if w, ok := ownContains(real, e.opts.Own, write); ok {
				return w, true
			}
		}
	}
	return "", false
}

// ownContains reports whether p lies in a protected path (or, for a write,
// is an ancestor of one), comparing components without regard to case.
func ownContains(p string, own []string, write bool) (string, bool) {
	for _, o := range own {
		if pathtree.WithinFold(p, o) {
			return o, true
		}
		if write && pathtree.WithinFold(o, p) {
			return o + ", which lies inside it", true
		}
	}
	return "", false
}

// ownTail reports whether a relative path could name a protected path from
// some directory: it starts with the protected path's last components.
func ownTail(rel string, own []string) (string, bool) {
	rc := components(strings.ToLower(filepath.Clean(rel)))
	for len(rc) > 0 && (rc[0] == ".." || rc[0] == ".") {
		rc = rc[1:]
	}
	if len(rc) == 0 {
		return "", false
	}
	for _, o := range own {
		oc := components(strings.ToLower(filepath.Clean(o)))
		for k := 0; k < len(oc); k++ {
			tail := oc[k:]
			if len(tail) <= len(rc) && equalParts(tail, rc[:len(tail)]) {
				return o, true
			}
		}
	}
	return "", false
}

func components(p string) []string {
	var out []string
	for _, c := range strings.Split(p, "/") {
		if c != "" {
			out = append(out, c)
		}
	}
	return out
}

func equalParts(a, b []string) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// relativeBases are the directories a relative path argument may be read
// against: the server's working directory, the tool's relative_paths
// directory and its allowed prefixes.
func (e *Engine) relativeBases(t *policy.Tool) []string {
	var out []string
	if filepath.IsAbs(e.opts.WorkDir) {
		out = append(out, e.opts.WorkDir)
	}
	if t.RelativePaths.Mode == policy.RelativeDir {
		out = append(out, t.RelativePaths.Dir)
	}
	return append(out, t.AllowedPathPrefixes...)
}
