package engine

import (
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/bouncer-mcp/bouncer/internal/pathtree"
	"github.com/bouncer-mcp/bouncer/internal/policy"
)

// A write path is judged the way every reader of it would place it, and
// refused when two readers would place it differently:
//
//   - spellings a server may rewrite before it opens anything are refused:
//     "~", a URI or drive letter, a backslash, percent-escapes, surrounding
//     whitespace or quotes, control characters, characters that Unicode
//     compatibility normalization turns into a separator or a dot
//     component, and paths longer than the kernel takes;
//   - a relative path is refused unless the policy's relative_paths says
//     what it is relative to;
//   - the kernel applies ".." to where a symlink points, a server that
//     cleans the path first (node's path.resolve) applies it to the text:
//     when the two land in different places the path is refused;
//   - a name that is missing on disk but equal under Unicode normalization
//     to an entry of its directory is refused (fsresolve.AmbiguousError).
//
// A path that passes is forwarded as the clean absolute path that was
// judged, so no server resolves anything Bouncer did not.

// pathKeys are the fields of an object argument that name a path (for
// example push_files' files: [{path, content}]).
var pathKeys = []string{"path", "file_path", "filepath", "filename", "file", "dest", "destination", "source", "target", "dir", "directory"}

// schemeLike matches values a server may read as a URI or a drive ("file:",
// "C:"), which a lexical path check can't place.
var schemeLike = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:`)

// percentEscape matches a %XX escape: a server that decodes it (one that
// builds a file: URL from the path, say) reads another name, "%2e%2e" a
// "..".
var percentEscape = regexp.MustCompile(`%[0-9A-Fa-f]{2}`)

// maxPathLen is the longest path the kernel takes (Linux PATH_MAX less the
// NUL); a longer one fails there and a server may shorten it.
const maxPathLen = 4095

// pathRef is one path string inside a write argument.
type pathRef struct {
	where string // "path", "files[1].path"
	value string
	set   func(string) // replaces it in the arguments
}

func (e *Engine) checkPaths(t *policy.Tool, args map[string]any) (Decision, bool) {
	if len(t.AllowedPathPrefixes) == 0 {
		return Decision{}, true
	}
	var fixes []func()
	for _, param := range t.WriteParams {
		v, present := args[param]
		if !present {
			continue
		}
		refs, why := collectPaths(v, param, func(s string) { args[param] = s })
		if why != "" {
			return Decision{Verdict: Deny, Rule: RulePath,
				Reason: fmt.Sprintf("%s %s, so where it writes can't be checked", param, why)}, false
		}
		for _, r := range refs {
			canon, d, ok := e.checkPath(t, r.where, r.value)
			if !ok {
				return d, false
			}
			if canon != r.value {
				set := r.set
				fixes = append(fixes, func() { set(canon) })
			}
		}
	}
	// Only a call that passes is rewritten: a denied one is audited as sent.
	for _, fix := range fixes {
		fix()
	}
	return Decision{}, true
}

// collectPaths returns the path strings in a write argument, or why it
// holds something that isn't one. set replaces v itself.
func collectPaths(v any, where string, set func(string)) ([]pathRef, string) {
	switch x := v.(type) {
	case string:
		return []pathRef{{where: where, value: x, set: set}}, ""
	case []any:
		var out []pathRef
		for i, el := range x {
			refs, why := collectPaths(el, where+"["+strconv.Itoa(i)+"]", func(s string) { x[i] = s })
			if why != "" {
				return nil, why
			}
			out = append(out, refs...)
		}
		return out, ""
	case map[string]any:
		// A key that is not a path key but that a Go server reads as one
		// ("Path", "fiLe", "file-path") would carry a path past the check.
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if isPathKey(k) {
				continue
			}
			for _, pk := range pathKeys {
				if aliasKey(k) == aliasKey(pk) {
					return nil, fmt.Sprintf("holds an object with the key %s, which a Go server may read as %s (send it as %s)", quote(k), quote(pk), quote(pk))
				}
			}
		}
		var out []pathRef
		for _, k := range pathKeys {
			if el, ok := x[k]; ok {
				refs, why := collectPaths(el, where+"."+k, func(s string) { x[k] = s })
				if why != "" {
					return nil, why
				}
				out = append(out, refs...)
			}
		}
		if len(out) == 0 {
			return nil, "holds an object with no path field"
		}
		return out, ""
	}
	return nil, "is " + jsonKind(v) + ", not a path"
}

func isPathKey(k string) bool {
	for _, pk := range pathKeys {
		if k == pk {
			return true
		}
	}
	return false
}

// ambiguous is an error from Options.Resolve saying a name may be read as
// another entry, the one on disk (fsresolve.AmbiguousError).
type ambiguous interface {
	error
	OnDisk() string
}

// checkPath judges one path and returns the clean absolute path to forward
// in its place.
func (e *Engine) checkPath(t *policy.Tool, where, value string) (string, Decision, bool) {
	deny := func(format string, a ...any) (string, Decision, bool) {
		return "", Decision{Verdict: Deny, Rule: RulePath, Reason: fmt.Sprintf(format, a...)}, false
	}
	prefixes := quoteList(t.AllowedPathPrefixes)
	if why := spelling(value); why != "" {
		return deny("%s=%s %s (allowed prefixes %s)", where, quote(value), why, prefixes)
	}
	abs := value
	if !filepath.IsAbs(value) {
		var base string
		switch t.RelativePaths.Mode {
		case policy.RelativeWorkDir:
			base = e.opts.WorkDir
			if !filepath.IsAbs(base) {
				return deny("%s=%s is a relative path and the server's working directory is unknown; give an absolute path under %s", where, quote(value), prefixes)
			}
		case policy.RelativeDir:
			base = t.RelativePaths.Dir
		default:
			return deny("%s=%s is a relative path, which servers resolve against different directories; give an absolute path under %s (or set relative_paths for %s in the policy)", where, quote(value), prefixes, quote(t.Name))
		}
		// Not filepath.Join: that would apply ".." before the links are
		// known.
		abs = strings.TrimSuffix(base, "/") + "/" + value
	}
	clean := filepath.Clean(abs)
	shown := quote(value)
	if clean != value {
		shown += " (" + quote(clean) + ")"
	}
	if !pathtree.WithinAny(clean, t.AllowedPathPrefixes) {
		return deny("%s=%s outside allowed prefixes %s", where, shown, prefixes)
	}
	if e.opts.Resolve == nil {
		return clean, Decision{}, true
	}
	resolveErr := func(err error) (string, Decision, bool) {
		var amb ambiguous
		if errors.As(err, &amb) {
			return deny("%s=%s is ambiguous: %v; give the name exactly as it is on disk (%+q)", where, shown, err, amb.OnDisk())
		}
		return deny("%s=%s can't be resolved (%v), so it is not known to stay under %s", where, shown, err, prefixes)
	}
	real, err := e.opts.Resolve(abs)
	if err != nil {
		return resolveErr(err)
	}
	if clean != abs {
		// A server that cleans the text first reads clean; the kernel (and
		// a server that hands the path to it as it is) reads abs.
		lexical, err := e.opts.Resolve(clean)
		if err != nil {
			return resolveErr(err)
		}
		if lexical != real {
			return deny("%s=%s is ambiguous: the kernel applies \"..\" after following a symlink and reaches %s, a server that cleans the path first reaches %s; give the path without \"..\"", where, quote(value), quote(real), quote(lexical))
		}
	}
	var realPrefixes []string
	for _, p := range t.AllowedPathPrefixes {
		rp, err := e.opts.Resolve(p)
		if err != nil {
			continue
		}
		realPrefixes = append(realPrefixes, rp)
	}
	if !pathtree.WithinAny(real, realPrefixes) {
		return deny("%s=%s resolves through a symlink to %s, outside allowed prefixes %s", where, shown, quote(real), prefixes)
	}
	return clean, Decision{}, true
}

// spelling returns why a path is spelled in a way some server reads
// differently from the kernel, or "".
func spelling(p string) string {
	switch {
	case p == "":
		return "is empty"
	case strings.ContainsRune(p, 0):
		return "contains a NUL byte"
	case len(p) > maxPathLen:
		return fmt.Sprintf("is longer than the %d bytes a path may have", maxPathLen)
	case strings.HasPrefix(p, "~"):
		return "is home-relative; the server may expand it anywhere; give an absolute path"
	case schemeLike.MatchString(p):
		return "looks like a URI or drive, not a path; give an absolute path"
	case strings.ContainsRune(p, '\\'):
		return "contains a backslash, which a server that takes Windows paths reads as a separator; use /"
	case percentEscape.MatchString(p):
		return "contains a percent-escape, which a server that decodes it reads as another name; write the characters themselves"
	}
	for _, r := range p {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) {
			return "contains a control character"
		}
	}
	first, _ := utf8.DecodeRuneInString(p)
	last, _ := utf8.DecodeLastRuneInString(p)
	if strippable(first) || strippable(last) {
		return "begins or ends with whitespace or a quote, which some servers strip before they open the path; remove it"
	}
	if n := norm.NFKC.String(p); n != p && !sameShape(p, n) {
		return fmt.Sprintf("contains characters that Unicode normalization (NFKC) turns into a separator, a dot component or an escape (%s); write them plainly", quote(n))
	}
	return ""
}

// strippable is what servers trim from the ends of a path: whitespace
// (JavaScript's trim and Python's strip also take U+FEFF and the other
// Unicode spaces) and the quotes the reference filesystem server removes.
func strippable(r rune) bool {
	return unicode.IsSpace(r) || r == '\uFEFF' || r == '"' || r == '\''
}

// sameShape reports whether n, the NFKC form of p, has the same separators
// and dot components as p and nothing new that spelling would refuse.
func sameShape(p, n string) bool {
	if spelling(n) != "" {
		return false
	}
	pc, nc := strings.Split(p, "/"), strings.Split(n, "/")
	if len(pc) != len(nc) {
		return false
	}
	for i := range pc {
		if pc[i] != nc[i] && (nc[i] == "." || nc[i] == ".." || nc[i] == "") {
			return false
		}
	}
	return true
}
