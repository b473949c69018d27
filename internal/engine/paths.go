package engine

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/bouncer-mcp/bouncer/internal/policy"
)

// pathKeys are the fields of an object argument that name a path (for
// example push_files' files: [{path, content}]).
var pathKeys = []string{"path", "file_path", "filepath", "filename", "file", "dest", "destination", "source", "target", "dir", "directory"}

// schemeLike matches values a server may read as a URI or a drive ("file:",
// "C:"), which a lexical path check can't place.
var schemeLike = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:`)

func (e *Engine) checkPaths(t *policy.Tool, args map[string]any) (Decision, bool) {
	if len(t.AllowedPathPrefixes) == 0 {
		return Decision{}, true
	}
	for _, param := range t.WriteParams {
		v, present := args[param]
		if !present {
			continue
		}
		paths, why := collectPaths(v)
		if why != "" {
			return Decision{Verdict: Deny, Rule: RulePath,
				Reason: fmt.Sprintf("%s %s, so where it writes can't be checked", param, why)}, false
		}
		for _, p := range paths {
			if d, ok := e.checkPath(t, param, p); !ok {
				return d, false
			}
		}
	}
	return Decision{}, true
}

// collectPaths returns the path strings in a write argument, or why it
// holds something that isn't one.
func collectPaths(v any) ([]string, string) {
	switch x := v.(type) {
	case string:
		return []string{x}, ""
	case []any:
		var out []string
		for _, el := range x {
			ps, why := collectPaths(el)
			if why != "" {
				return nil, why
			}
			out = append(out, ps...)
		}
		return out, ""
	case map[string]any:
		var out []string
		for _, k := range pathKeys {
			if el, ok := x[k]; ok {
				ps, why := collectPaths(el)
				if why != "" {
					return nil, why
				}
				out = append(out, ps...)
			}
		}
		if len(out) == 0 {
			return nil, "holds an object with no path field"
		}
		return out, ""
	}
	return nil, "is " + jsonKind(v) + ", not a path"
}

func (e *Engine) checkPath(t *policy.Tool, param, value string) (Decision, bool) {
	deny := func(format string, a ...any) (Decision, bool) {
		return Decision{Verdict: Deny, Rule: RulePath, Reason: fmt.Sprintf(format, a...)}, false
	}
	prefixes := quoteList(t.AllowedPathPrefixes)
	switch {
	case value == "":
		return deny("%s is empty, outside allowed prefixes %s", param, prefixes)
	case strings.ContainsRune(value, 0):
		return deny("%s=%s contains a NUL byte", param, quote(value))
	case strings.HasPrefix(value, "~"):
		return deny("%s=%s is home-relative; the server may expand it anywhere (allowed prefixes %s)", param, quote(value), prefixes)
	case schemeLike.MatchString(value):
		return deny("%s=%s looks like a URI or drive, not a path under allowed prefixes %s", param, quote(value), prefixes)
	}
	abs := value
	if !filepath.IsAbs(abs) {
		if e.opts.WorkDir == "" {
			return deny("%s=%s is relative and the server's working directory is unknown (allowed prefixes %s)", param, quote(value), prefixes)
		}
		abs = filepath.Join(e.opts.WorkDir, abs)
	}
	abs = filepath.Clean(abs)
	if !underAny(abs, t.AllowedPathPrefixes) {
		return deny("%s=%s outside allowed prefixes %s", param, quote(value), prefixes)
	}
	if e.opts.Resolve == nil {
		return Decision{}, true
	}
	real, err := e.opts.Resolve(abs)
	if err != nil {
		return deny("%s=%s can't be resolved (%v), so it is not known to stay under %s", param, quote(value), err, prefixes)
	}
	var realPrefixes []string
	for _, p := range t.AllowedPathPrefixes {
		rp, err := e.opts.Resolve(p)
		if err != nil {
			continue
		}
		realPrefixes = append(realPrefixes, rp)
	}
	if !underAny(real, realPrefixes) {
		return deny("%s=%s resolves through a symlink to %s, outside allowed prefixes %s", param, quote(value), quote(real), prefixes)
	}
	return Decision{}, true
}

// underAny reports whether path is one of prefixes or lies below one, by
// whole path components: /out admits /out/a, not /outx.
func underAny(path string, prefixes []string) bool {
	for _, p := range prefixes {
		p = filepath.Clean(p)
		if path == p {
			return true
		}
		if p == "/" || strings.HasPrefix(path, strings.TrimSuffix(p, "/")+"/") {
			return true
		}
	}
	return false
}
