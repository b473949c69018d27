package engine

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// A pattern is a path as a shell (or a glob function) may expand it: its
// components, each a name or a glob over names. A path with no wildcard is
// a pattern too, whose components each match one name; so a literal path
// and a glob are judged by the same rules (ownSet.pattern).
//
// Patterns are built from an escaped text: '*', '?' and '[' are wildcards
// unless a backslash precedes them, and a backslash escapes the byte that
// follows it (escapeGlob makes a literal path into such a text).
type pattern struct {
	abs   bool
	comps []pcomp
}

// pcomp is one component of a pattern.
type pcomp struct {
	glob string // the component's escaped text, lower-cased
	lit  string // the name, lower-cased, when it holds no wildcard
	wild bool   // holds a wildcard
	any  bool   // "**": any number of components, as a shell's globstar reads it
	pure bool   // wildcards only ("*", "?*"): it says nothing of which name it matches
}

// escapeGlob returns s as a pattern text that matches s only.
func escapeGlob(s string) string {
	if !strings.ContainsAny(s, `*?[\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == '*' || c == '?' || c == '[' || c == '\\' {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// compilePattern reads an escaped pattern text. Components are cleaned as
// filepath.Clean cleans a path ("." and empty ones dropped, ".." taking
// the one before it away); ".." at the start of a relative pattern is kept.
// Letters are lower-cased: own state is compared without regard to case,
// as macOS does.
func compilePattern(text string) pattern {
	p := pattern{abs: strings.HasPrefix(text, "/")}
	for _, c := range strings.Split(text, "/") {
		pc := compileComp(strings.ToLower(c))
		switch {
		case !pc.wild && (pc.lit == "" || pc.lit == "."):
			continue
		case !pc.wild && pc.lit == "..":
			if n := len(p.comps); n > 0 && (p.comps[n-1].wild || p.comps[n-1].lit != "..") {
				p.comps = p.comps[:n-1]
				continue
			}
			if p.abs {
				continue // "/.." is "/"
			}
		case pc.any:
			if n := len(p.comps); n > 0 && p.comps[n-1].any {
				continue // "**/**" is "**"
			}
		}
		p.comps = append(p.comps, pc)
	}
	return p
}

// compileComp reads one component's escaped text.
func compileComp(c string) pcomp {
	pc := pcomp{glob: c, any: c == "**", pure: true}
	var lit strings.Builder
	for i := 0; i < len(c); {
		switch c[i] {
		case '*', '?':
			pc.wild = true
			i++
			continue
		case '[':
			if n, _, ok := matchClass(c[i:], 0); ok {
				pc.wild, pc.pure = true, false
				i += n
				continue
			}
		case '\\':
			if i+1 < len(c) {
				i++
			}
		}
		_, w := utf8.DecodeRuneInString(c[i:])
		lit.WriteString(c[i : i+w])
		pc.pure = false
		i += w
	}
	if !pc.wild {
		pc.lit, pc.pure = lit.String(), false
	}
	return pc
}

// matches reports whether the component matches name (lower-cased).
func (c pcomp) matches(name string) bool {
	if !c.wild {
		return c.lit == name
	}
	return c.any || globMatch(c.glob, name)
}

// literal returns the pattern as a path when it holds no wildcard.
func (p pattern) literal() (string, bool) {
	parts := make([]string, len(p.comps))
	for i, c := range p.comps {
		if c.wild {
			return "", false
		}
		parts[i] = c.lit
	}
	s := strings.Join(parts, "/")
	if p.abs {
		s = "/" + s
	}
	return s, true
}

// seqMatch reports whether the components p match the names t: all of p
// (prefix false; a trailing "**" may match nothing) or only a leading part
// of p (prefix true: what follows lies below t). With lit, the components
// that matched t must hold one that is not only wildcards: a pattern of
// wildcards only matches any name, so alone it can't be said to name a
// protected one.
func seqMatch(p []pcomp, t []string, prefix, lit bool) bool {
	hasAny := false
	for _, c := range p {
		hasAny = hasAny || c.any
	}
	if !hasAny {
		if len(p) < len(t) || (!prefix && len(p) != len(t)) {
			return false
		}
		named := !lit
		for i, name := range t {
			if !p[i].matches(name) {
				return false
			}
			named = named || !p[i].pure
		}
		return named
	}
	// With "**", which matches any number of names: memoised over the
	// position in p, the position in t and whether a name was matched.
	memo := make([]int8, (len(p)+1)*(len(t)+1)*2)
	var f func(i, j int, named bool) bool
	f = func(i, j int, named bool) bool {
		k := (i*(len(t)+1)+j)*2 + btoi(named)
		if memo[k] != 0 {
			return memo[k] > 0
		}
		var r bool
		switch {
		case j == len(t) && prefix:
			r = named
		case j == len(t):
			r = named
			for _, c := range p[i:] {
				r = r && c.any
			}
		case i == len(p):
			r = false
		case p[i].any:
			r = f(i+1, j, named) || f(i, j+1, named)
		default:
			r = p[i].matches(t[j]) && f(i+1, j+1, named || !p[i].pure)
		}
		memo[k] = 1
		if !r {
			memo[k] = -1
		}
		return r
	}
	return f(0, 0, !lit)
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// globMatch reports whether the escaped glob text p matches all of name:
// '*' matches any run of characters, '?' any one, "[...]" one of a set
// ("[!...]" or "[^...]" one not in it; a class such as [:alpha:] is taken
// to match any character), and '\' makes the next character plain. A '['
// with no closing ']' is a plain '['. A leading '.' is matched by
// wildcards like any other character: a shell with dotglob set matches it.
func globMatch(p, name string) bool {
	px, nx := 0, 0
	starP, starN := -1, 0
	for px < len(p) || nx < len(name) {
		if px < len(p) {
			if p[px] == '*' {
				starP, starN = px, nx
				px++
				continue
			}
			if nx < len(name) {
				r, w := utf8.DecodeRuneInString(name[nx:])
				if n, ok := matchOne(p[px:], r); ok {
					px += n
					nx += w
					continue
				}
			}
		}
		if starP >= 0 && starN < len(name) {
			_, w := utf8.DecodeRuneInString(name[starN:])
			starN += w
			px, nx = starP+1, starN
			continue
		}
		return false
	}
	return true
}

// matchOne matches the item at the start of p (anything but '*') against
// r: it returns the item's length in p and whether r matches it.
func matchOne(p string, r rune) (int, bool) {
	switch p[0] {
	case '?':
		return 1, true
	case '\\':
		if len(p) > 1 {
			c, w := utf8.DecodeRuneInString(p[1:])
			return 1 + w, c == r
		}
	case '[':
		if n, ok, valid := matchClass(p, r); valid {
			return n, ok
		}
	}
	c, w := utf8.DecodeRuneInString(p)
	return w, c == r
}

// matchClass reads the bracket expression at the start of p and reports
// its length, whether r is in it, and whether p holds a whole one. Both
// cases of a letter match, as the names compared are lower-cased.
func matchClass(p string, r rune) (n int, ok, valid bool) {
	i := 1
	negate := false
	if i < len(p) && (p[i] == '!' || p[i] == '^') {
		negate = true
		i++
	}
	in := false
	for first := true; i < len(p); first = false {
		if p[i] == ']' && !first {
			return i + 1, in != negate, true
		}
		if p[i] == '/' {
			return 0, false, false
		}
		if strings.HasPrefix(p[i:], "[:") || strings.HasPrefix(p[i:], "[=") || strings.HasPrefix(p[i:], "[.") {
			end := strings.Index(p[i+2:], string(p[i+1])+"]")
			if end < 0 {
				return 0, false, false
			}
			i += 2 + end + 2
			in = true // a named class or an equivalence: over-matched
			continue
		}
		lo, w := classChar(p[i:])
		if w == 0 {
			return 0, false, false
		}
		i += w
		hi := lo
		if i+1 < len(p) && p[i] == '-' && p[i+1] != ']' {
			h, w2 := classChar(p[i+1:])
			if w2 == 0 {
				return 0, false, false
			}
			hi = h
			i += 1 + w2
		}
		for _, c := range []rune{r, unicode.ToLower(r), unicode.ToUpper(r)} {
			if lo <= c && c <= hi {
				in = true
			}
		}
	}
	return 0, false, false
}

// classChar reads one character of a bracket expression, escaped or not.
func classChar(p string) (rune, int) {
	if p[0] == '\\' {
		if len(p) < 2 {
			return 0, 0
		}
		c, w := utf8.DecodeRuneInString(p[1:])
		return c, 1 + w
	}
	c, w := utf8.DecodeRuneInString(p)
	return c, w
}
