package engine

import (
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"

	"github.com/bouncer-mcp/bouncer/internal/pathtree"
	"github.com/bouncer-mcp/bouncer/internal/policy"
)

// Bouncer's own state (its state directory, the policy and trust files,
// the audit log, the client's config and hook files) is never the target
// of a tool argument, whatever the policy says and whether or not the
// sandbox runs. A server that could write remembered.json would make the
// attacker "vouched by a human"; one that could write a policy or the
// client's config would set the next session's rules or unwrap a server;
// one that could replace the audit log would replace the record. Reading
// them is refused too: the session key and the audit log are in there.
// Where the kernel allows, the upstream can't reach them anyway; this
// guard is what holds everywhere else, and it judges what a server
// builds from the arguments, not only the strings as written.
//
// The rule over-matches on purpose, since a false deny is safe here:
//
//   - every string in the arguments that may be read as a path is judged:
//     the value of a path-shaped argument, and any value that starts like
//     a path (/, ~, ., file:), holds a separator, or is the name of one of
//     the protected entries;
//   - each is judged joined onto every other such string of the call, as
//     a server's path.join(savePath, filename) joins them (".." applied,
//     a second part that starts with "/" kept below the first): the
//     strings beside it in its object, those of the objects around it,
//     and the one before it in a list;
//   - in an argument that holds a command line or code (command, script,
//     code, args: policy.IsCommandName) it is read three ways, each word
//     judged: as a shell reads it (shellTokens: quotes removed, $'...'
//     decoded, brace expansions made, command substitutions read as
//     command lines, a word after cd or pushd taken as the directory the
//     words after it are read in), as code builds strings from literals
//     (codeStrings: 'ho'+'me' is home), and split at punctuation
//     (commandWords);
//   - an unquoted glob in a shell word (*, ?, [...]) is matched against
//     the protected paths, never expanded: it is refused when it could
//     match one, by the same rules as a name (ownSet.pattern). A pattern
//     of wildcards only (*, */*) names no entry, so it is matched against
//     the directories it may be read in (the server's working directory,
//     the tool's relative_paths and prefixes, the cd before it) rather
//     than against every directory; in code (an argument named code,
//     program, statement or expression) such a word is an operator
//     (a * b), not a glob;
//   - each is judged in every spelling a server may turn it into: as
//     written, percent-decoded (twice), cut at a NUL, NFKC-normalized,
//     with backslashes as separators, a file: URI as its path, ~, ~name,
//     $HOME and ${HOME} as the home directory, and what follows any other
//     $NAME (or a command substitution) as a relative path;
//   - an absolute path is refused when it lies in a protected path (by
//     component, ignoring case, as macOS does), before and after its
//     symlinks are resolved; a write argument is refused also when it is
//     an ancestor of one (moving or deleting it takes the state along);
//   - a relative path is refused when, against any directory, it could
//     reach a protected path: when it starts with the protected path's
//     last components ("bouncer.yaml", ".bouncer/remembered.json"), with
//     leading ".." dropped; and when it reaches one from the server's
//     working directory, the tool's relative_paths directory or its
//     allowed prefixes;
//   - a path through /proc or /dev is judged also as each of its tails,
//     absolute and relative: /proc/PID/root leads to /, /proc/self/cwd to
//     the server's directory and /dev/fd/N to any open one.

// maxOwnCandidate bounds the strings judged as paths: the kernel takes no
// longer path.
const maxOwnCandidate = maxPathLen + 1

// maxOwnJoins bounds the strings of one call joined onto one another. A
// call that would make more is refused: it can't be judged whole.
const maxOwnJoins = 4096

// maxCdDirs bounds the directories a command line's cd words lead to that
// are judged; beyond it, the directory of what follows is unknown.
const maxCdDirs = 8

// OwnPath is one of Bouncer's own paths.
type OwnPath struct {
	// Path is absolute.
	Path string
	// Dir says it is a directory: what lies in it is protected too.
	Dir bool
}

// OwnState answers which paths are Bouncer's own state. The engine asks
// on every call, so it must answer from memory unless they changed.
type OwnState interface {
	// OwnPaths returns the protected paths and a version that differs
	// whenever the paths do.
	OwnPaths() (paths []OwnPath, version uint64)
}

// OwnList is an OwnState that never changes.
type OwnList []OwnPath

// OwnPaths returns the list, always at version 0.
func (l OwnList) OwnPaths() ([]OwnPath, uint64) { return l, 0 }

// ownSet is the own paths as the guard compares them, made once for each
// version of Options.Own.
type ownSet struct {
	version uint64
	paths   []OwnPath       // cleaned
	comps   [][]string      // each path's components, lower-cased
	names   map[string]bool // each path's last component, lower-cased
}

// ownSet returns the own paths in force, compiling them when they changed;
// nil when there are none.
func (e *Engine) ownSet() *ownSet {
	if e.opts.Own == nil {
		return nil
	}
	paths, v := e.opts.Own.OwnPaths()
	if s := e.own.Load(); s != nil && s.version == v {
		return s
	}
	s := &ownSet{version: v, names: map[string]bool{}}
	for _, o := range paths {
		if !filepath.IsAbs(o.Path) {
			continue
		}
		o.Path = filepath.Clean(o.Path)
		s.paths = append(s.paths, o)
		s.comps = append(s.comps, components(strings.ToLower(o.Path)))
		s.names[strings.ToLower(filepath.Base(o.Path))] = true
	}
	if len(s.paths) == 0 {
		s = &ownSet{version: v}
	}
	e.own.Store(s)
	if len(s.paths) == 0 {
		return nil
	}
	return s
}

// checkOwnState refuses a call whose arguments name Bouncer's own state.
func (e *Engine) checkOwnState(t *policy.Tool, args map[string]any) (Decision, bool) {
	own := e.ownSet()
	if own == nil {
		return Decision{}, true
	}
	j := &ownJudge{e: e, t: t, own: own}
	j.object(args, "", false, false, false, nil)
	switch {
	case j.tooMany != "":
		return Decision{Verdict: Deny, Rule: RulePath,
			Reason: fmt.Sprintf("%s can't be judged whole: %s; Bouncer refuses what it can't judge (split the call)", quote(t.Name), j.tooMany)}, false
	case j.found != "":
		return Decision{Verdict: Deny, Rule: RulePath,
			Reason: fmt.Sprintf("%s reaches Bouncer's own state (%s), which no tool may read or write; "+
				"the policy, trust files, audit log, state directory and the client's config are out of every server's reach", j.found, j.what)}, false
	}
	return Decision{}, true
}

// ownJudge is one call's own-state check.
type ownJudge struct {
	e     *Engine
	t     *policy.Tool
	own   *ownSet
	joins int
	// found says what reached own state (for the reason) and what it
	// reached; tooMany why the call can't be judged.
	found, what, tooMany string
}

// ownValue is a string of the call that a server may read as a path: an
// argument's value, a word of a command line in one, or two of them
// joined.
type ownValue struct {
	where string // the argument: "savePath", "files[1].path"
	shown string // the argument's value, for the reason
	read  string // what was judged, quoted, when it is not shown itself
	text  string // the string; with glob, an escaped glob text
	glob  bool
	// joined says it is two values joined (read names both).
	joined bool
	// pathNamed says it sits under a path-shaped name (or is a join):
	// judged as a path whatever it looks like.
	pathNamed bool
	// shaped says it is joined onto the call's other path-shaped values:
	// its name is path-shaped or a write parameter, it is one word that
	// looks like a path, or it is a word of a command line. Prose that
	// holds a "/" is judged alone.
	shaped bool
	write  bool
	// anyDir says a command line may have changed to a directory the
	// guard can't tell before this word: a pattern of wildcards only is
	// then matched against every directory.
	anyDir bool
	src    int // which string of its object or list it came from
}

// judged is how the reason names v.
func (v ownValue) judged() string {
	s := v.where + "=" + quote(v.shown)
	switch {
	case v.joined:
		s = v.where + "=" + v.read
	case v.read != "" && v.read != quote(v.shown):
		s += " (read as " + v.read + ")"
	}
	return s
}

// object judges the strings of an object: each alone, each joined with
// the other strings beside it, and with those of the objects around it
// (up); then the objects and lists inside it.
func (j *ownJudge) object(x map[string]any, where string, pathNamed, command, write bool, up []ownValue) bool {
	keys := make([]string, 0, len(x))
	for k := range x {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var here []ownValue
	type kid struct {
		v                                 any
		where                             string
		pathNamed, shaped, command, write bool
	}
	var kids []kid
	for i, k := range keys {
		w := k
		wr := write
		if where == "" {
			wr = slices.Contains(j.t.WriteParams, k) // a handful at most
		} else {
			w = where + "." + k
		}
		// A write parameter is a path the policy names as one.
		shaped := policy.IsPathName(k) || (where == "" && wr)
		pn, cmd := pathNamed || shaped, command || policy.IsCommandName(k)
		if s, ok := x[k].(string); ok {
			for _, v := range j.values(w, k, s, pn, shaped, cmd, wr) {
				v.src = i
				here = append(here, v)
			}
			continue
		}
		kids = append(kids, kid{x[k], w, pn, shaped, cmd, wr})
	}
	if !j.container(here, up, false) {
		return false
	}
	up = append(up[:len(up):len(up)], here...)
	for _, k := range kids {
		if !j.nested(k.v, k.where, k.pathNamed, k.shaped, k.command, k.write, up) {
			return false
		}
	}
	return true
}

// list judges the strings of a list as object does, joining each with the
// one before it rather than with all of them.
func (j *ownJudge) list(x []any, where, name string, pathNamed, shaped, command, write bool, up []ownValue) bool {
	var here []ownValue
	for i, el := range x {
		if s, ok := el.(string); ok {
			for _, v := range j.values(where+"["+strconv.Itoa(i)+"]", name, s, pathNamed, shaped, command, write) {
				v.src = i
				here = append(here, v)
			}
		}
	}
	if !j.container(here, up, true) {
		return false
	}
	for i, el := range x {
		if _, ok := el.(string); !ok {
			if !j.nested(el, where+"["+strconv.Itoa(i)+"]", pathNamed, shaped, command, write, up) {
				return false
			}
		}
	}
	return true
}

func (j *ownJudge) nested(v any, where string, pathNamed, shaped, command, write bool, up []ownValue) bool {
	switch x := v.(type) {
	case map[string]any:
		return j.object(x, where, pathNamed, command, write, up)
	case []any:
		name := where
		if i := strings.LastIndexAny(where, ".]"); i >= 0 {
			name = where[i+1:]
		}
		return j.list(x, where, name, pathNamed, shaped, command, write, up)
	}
	return true
}

// container judges the values of one object or list: each alone, then
// joined onto one another (consecutive: only a list element onto the one
// before it) and onto the values around them.
func (j *ownJudge) container(here, up []ownValue, consecutive bool) bool {
	if j.tooMany != "" {
		return false
	}
	for _, v := range here {
		if !j.judge(v) {
			return false
		}
	}
	var pairs [][2]ownValue
	for _, a := range here {
		if !a.shaped {
			continue
		}
		for _, b := range here {
			if !b.shaped || a.src == b.src || (consecutive && a.src+1 != b.src && b.src+1 != a.src) {
				continue
			}
			pairs = append(pairs, [2]ownValue{a, b})
		}
		for _, u := range up {
			if u.shaped {
				pairs = append(pairs, [2]ownValue{a, u}, [2]ownValue{u, a})
			}
		}
		if j.joins+len(pairs) > maxOwnJoins {
			j.tooMany = fmt.Sprintf("its path-shaped values, each joined onto the others, make more than %d paths", maxOwnJoins)
			return false
		}
	}
	j.joins += len(pairs)
	for _, p := range pairs {
		if !j.judge(joinValues(p[0], p[1])) {
			return false
		}
	}
	return true
}

// joinValues is b joined onto a, as path.join(a, b) makes it.
func joinValues(a, b ownValue) ownValue {
	v := ownValue{
		where:     a.where,
		shown:     a.shown,
		read:      a.readText() + " joined with " + b.where + "=" + quote(b.readText()),
		glob:      a.glob || b.glob,
		joined:    true,
		pathNamed: true,
		shaped:    true,
		write:     a.write || b.write,
		anyDir:    a.anyDir || b.anyDir,
	}
	at, bt := a.text, b.text
	if v.glob {
		if !a.glob {
			at = escapeGlob(at)
		}
		if !b.glob {
			bt = escapeGlob(bt)
		}
	}
	v.text = strings.TrimSuffix(at, "/") + "/" + bt
	return v
}

// readText is the string v stands for, as the reason shows it.
func (v ownValue) readText() string {
	if v.read != "" {
		return v.read
	}
	return quote(v.shown)
}

// judge judges one value, and keeps what it reached.
func (j *ownJudge) judge(v ownValue) bool {
	var w string
	var ok bool
	if v.glob {
		w, ok = j.e.ownGlob(j.own, j.t, v.text, v.write, v.anyDir)
	} else {
		w, ok = j.e.ownTarget(j.own, j.t, v.text, v.pathNamed, v.write)
	}
	if ok {
		j.found, j.what = v.judged(), w
	}
	return !ok
}

// values returns what of one string of the call may be read as a path:
// the string itself, and in a command line or code, its words. shaped
// says its own name is path-shaped (not only a name around it).
func (j *ownJudge) values(where, name, s string, pathNamed, shaped, command, write bool) []ownValue {
	var out []ownValue
	type key struct {
		text         string
		glob, anyDir bool
	}
	seen := map[key]bool{}
	add := func(v ownValue) {
		k := key{v.text, v.glob, v.anyDir}
		if !seen[k] {
			seen[k] = true
			out = append(out, v)
		}
	}
	shaped = shaped || (j.own.pathLike(s, false) && !strings.ContainsFunc(s, unicode.IsSpace))
	base := ownValue{where: where, shown: s, pathNamed: pathNamed, shaped: shaped, write: write}
	if len(s) <= maxOwnCandidate && j.own.pathLike(s, pathNamed) {
		v := base
		v.text = s
		add(v)
		if hasGlob(s) {
			v.text, v.glob = strings.ReplaceAll(s, `\`, "/"), true
			add(v)
		}
	}
	if !command {
		return out
	}
	var word func(text string, glob, anyDir bool)
	word = func(text string, glob, anyDir bool) {
		if len(text) > maxOwnCandidate || (!glob && !j.own.pathLike(text, false)) {
			return
		}
		v := base
		v.pathNamed, v.write, v.shaped = false, false, true
		v.text, v.glob, v.anyDir = text, glob, anyDir
		v.read = quote(text)
		if glob {
			v.read = quote(unescapeGlob(text))
		}
		add(v)
		if g, ok := varGlob(text, glob); ok {
			word(g, true, anyDir)
		}
	}
	j.shellValues(s, isCodeName(name), word)
	for _, c := range codeStrings(s) {
		word(c, false, false)
	}
	for _, w := range commandWords(s) {
		word(w, false, false)
	}
	return out
}

// isCodeName reports whether an argument holds code rather than a command
// line: there a bare '*' multiplies.
func isCodeName(name string) bool {
	w := policy.Words(name)
	if len(w) == 0 {
		return false
	}
	switch w[len(w)-1] {
	case "code", "program", "statement", "expression":
		return true
	}
	return false
}

// shellValues calls word for each word of command line s as a shell reads
// it (and the parts a program may read as a path: what follows its first
// '=', and what follows its first '/' or '~'), and for each word that
// follows a cd or pushd joined onto the directories it led to. With code,
// a word of wildcards only is plain.
func (j *ownJudge) shellValues(s string, code bool, word func(text string, glob, anyDir bool)) {
	var dirs []string // cd targets, as glob texts
	anyDir := false
	toks := shellTokens(s)
	for i := 0; i < len(toks); i++ {
		if toks[i].op {
			continue
		}
		forms := wordForms(toks[i].word)
		if forms == nil {
			j.tooMany = "a brace expansion makes more than " + strconv.Itoa(maxBraceWords) + " words"
			return
		}
		for _, f := range forms {
			text, glob := globText(f)
			if glob && code && pureGlob(text) {
				text, glob = string(f.b), false
			}
			word(text, glob, anyDir)
			if (!glob && !j.own.pathLike(text, false)) || startsAtDir(text) {
				continue
			}
			if !glob {
				text = escapeGlob(text)
			}
			for _, d := range dirs {
				word(d+"/"+text, true, anyDir)
			}
		}
		if name := string(toks[i].word.b); name != "cd" && name != "pushd" {
			continue
		}
		// The directory the words after it are read in: the next word
		// that is not an option; home for none; for "-", one listed.
		targets := []shellWord{{b: []byte("~"), q: []bool{false}}}
	args:
		for k := i + 1; k < len(toks) && !toks[k].op; k++ {
			switch w := string(toks[k].word.b); {
			case w == "-":
				targets = nil
				break args
			case strings.HasPrefix(w, "-"):
				continue
			}
			var ok bool
			if targets, ok = braceExpand(toks[k].word); !ok {
				j.tooMany = "a brace expansion makes more than " + strconv.Itoa(maxBraceWords) + " words"
				return
			}
			break
		}
		for _, tw := range targets {
			t, glob := globText(tw)
			if !glob {
				t = escapeGlob(t)
			}
			if strings.HasPrefix(t, "$") {
				anyDir = true // a directory Bouncer can't know
			}
			next := []string{t}
			if !startsAtDir(t) {
				for _, d := range dirs {
					next = append(next, d+"/"+t)
				}
			}
			for _, n := range next {
				if len(dirs) == maxCdDirs {
					anyDir = true
					break
				}
				dirs = append(dirs, n)
			}
		}
	}
}

// startsAtDir reports whether a path starts at a directory of its own
// (/, ~, a variable): joined onto another, it does not lie below it.
func startsAtDir(p string) bool {
	return strings.HasPrefix(p, "/") || strings.HasPrefix(p, "~") || strings.HasPrefix(p, "$")
}

// wordForms returns a shell word after brace expansion, and for each
// result the parts of it a program may read as a path: what follows its
// first '=' (--output=FILE, NAME=FILE) and what follows its first '/' or
// '~' (-o/x). It returns nil when brace expansion makes too many words. A
// word longer than any path is not expanded.
func wordForms(w shellWord) []shellWord {
	ws := []shellWord{w}
	if len(w.b) <= maxOwnCandidate {
		var ok bool
		if ws, ok = braceExpand(w); !ok {
			return nil
		}
	}
	var out []shellWord
	for _, x := range ws {
		out = append(out, x)
		if i := indexByte(x.b, '='); i > 0 {
			out = append(out, shellWord{b: x.b[i+1:], q: x.q[i+1:]})
		}
		for k, c := range x.b {
			if c == '/' || c == '~' {
				if k > 0 {
					out = append(out, shellWord{b: x.b[k:], q: x.q[k:]})
				}
				break
			}
		}
	}
	return out
}

func indexByte(b []byte, c byte) int {
	for i, x := range b {
		if x == c {
			return i
		}
	}
	return -1
}

// globText returns a shell word as a glob text: its unquoted '*', '?' and
// '[' are wildcards, its quoted ones escaped. glob is false when it holds
// no wildcard; the text is then the word itself.
func globText(w shellWord) (string, bool) {
	glob := false
	for i, c := range w.b {
		if !w.q[i] && (c == '*' || c == '?' || c == '[') {
			glob = true
			break
		}
	}
	if !glob {
		return string(w.b), false
	}
	var b strings.Builder
	for i, c := range w.b {
		if (c == '*' || c == '?' || c == '[' || c == '\\') && (w.q[i] || c == '\\') {
			b.WriteByte('\\')
		}
		b.WriteByte(c)
	}
	return b.String(), true
}

// varGlob returns text (a glob text with glob) as a glob in which each
// variable or substitution that shares its component with other text
// (".b${X}ouncer", ".b$(echo)ouncer") is a '*': it may expand to anything,
// nothing included. ok is false when there is none. A variable that is a
// whole component is read as a directory instead (dirSpellings).
func varGlob(text string, glob bool) (string, bool) {
	if !strings.Contains(text, "$") {
		return "", false
	}
	var b strings.Builder
	found := false
	for i := 0; i < len(text); {
		if n := varLen(text[i:]); n > 0 {
			if (i > 0 && text[i-1] != '/') || (i+n < len(text) && text[i+n] != '/') {
				b.WriteByte('*')
				found = true
				i += n
				continue
			}
		}
		c := text[i]
		if glob && c == '\\' && i+1 < len(text) {
			b.WriteString(text[i : i+2])
			i += 2
			continue
		}
		if !glob && (c == '*' || c == '?' || c == '[' || c == '\\') {
			b.WriteByte('\\')
		}
		b.WriteByte(c)
		i++
	}
	return b.String(), found
}

// varLen is the length of the variable ($NAME, ${...}, $1, $@) at the
// start of s, or 0.
func varLen(s string) int {
	if len(s) < 2 || s[0] != '$' {
		return 0
	}
	if s[1] == '{' {
		if end := strings.IndexByte(s, '}'); end > 0 {
			return end + 1
		}
		return 0
	}
	n := 1
	for n < len(s) && isNameRune(rune(s[n])) {
		n++
	}
	if n == 1 && strings.IndexByte("@*#?$!-", s[1]) >= 0 {
		n = 2
	}
	if n == 1 {
		return 0
	}
	return n
}

// pureGlob reports whether a glob text is wildcards only, in one
// component: "*", "?", "**".
func pureGlob(text string) bool {
	return strings.Trim(text, "*?") == ""
}

// hasGlob reports whether s holds a wildcard a glob function reads.
func hasGlob(s string) bool { return strings.ContainsAny(s, "*?[") }

// unescapeGlob returns the string a glob text spells, wildcards as written.
func unescapeGlob(text string) string {
	if !strings.Contains(text, `\`) {
		return text
	}
	var b strings.Builder
	for i := 0; i < len(text); i++ {
		if text[i] == '\\' && i+1 < len(text) {
			i++
		}
		b.WriteByte(text[i])
	}
	return b.String()
}

// ownTarget reports whether s, read as a path, reaches a protected path,
// and which.
func (e *Engine) ownTarget(own *ownSet, t *policy.Tool, s string, pathNamed, write bool) (string, bool) {
	if len(s) > maxOwnCandidate || !own.pathLike(s, pathNamed) {
		return "", false
	}
	for _, f := range pathSpellings(s, e.opts.Home) {
		if w, ok := e.ownLiteral(own, t, f, write); ok {
			return w, true
		}
	}
	return "", false
}

// ownLiteral judges one spelling of a path.
func (e *Engine) ownLiteral(own *ownSet, t *policy.Tool, f string, write bool) (string, bool) {
	if filepath.IsAbs(f) {
		if w, ok := e.ownAbs(own, f, write); ok {
			return w, true
		}
		if c := strings.ToLower(filepath.Clean(f)); !strings.HasPrefix(c, "/proc/") && !strings.HasPrefix(c, "/dev/") {
			return "", false
		}
		return own.through(compilePattern(escapeGlob(f)))
	}
	p := compilePattern(escapeGlob(f))
	if w, ok := own.tail(p); ok {
		return w, true
	}
	for _, base := range e.relativeBases(t) {
		if w, ok := e.ownAbs(own, strings.TrimSuffix(base, "/")+"/"+f, write); ok {
			return w, true
		}
	}
	return own.through(p)
}

// ownGlob reports whether the glob text g could match a protected path,
// and which. anyDir says a pattern of wildcards only may be read in any
// directory.
func (e *Engine) ownGlob(own *ownSet, t *policy.Tool, g string, write, anyDir bool) (string, bool) {
	if len(g) > 2*maxOwnCandidate {
		return "", false
	}
	for _, f := range globSpellings(g, e.opts.Home) {
		p := compilePattern(f)
		if lit, ok := p.literal(); ok {
			if w, ok := e.ownTarget(own, t, lit, true, write); ok {
				return w, true
			}
			continue
		}
		if p.abs {
			if w, ok := e.ownAbsGlob(own, f, write); ok {
				return w, true
			}
		} else {
			if w, ok := own.tailGlob(p, !anyDir); ok {
				return w, true
			}
			for _, base := range e.relativeBases(t) {
				if w, ok := e.ownAbsGlob(own, escapeGlob(strings.TrimSuffix(base, "/"))+"/"+f, write); ok {
					return w, true
				}
			}
		}
		if w, ok := own.through(p); ok {
			return w, true
		}
	}
	return "", false
}

// ownAbsGlob judges an absolute glob text, as written and with the
// directories before its first wildcard resolved.
func (e *Engine) ownAbsGlob(own *ownSet, g string, write bool) (string, bool) {
	if w, ok := own.within(compilePattern(g), write); ok {
		return w, true
	}
	if e.opts.Resolve == nil {
		return "", false
	}
	dir, rest := literalDir(g)
	if dir == "" {
		return "", false
	}
	real, err := e.opts.Resolve(unescapeGlob(dir))
	if err != nil || real == unescapeGlob(dir) {
		return "", false
	}
	return own.within(compilePattern(escapeGlob(real)+"/"+rest), write)
}

// literalDir splits an absolute glob text before its first component
// that holds a wildcard: the directories a shell does not expand.
func literalDir(g string) (dir, rest string) {
	parts := strings.Split(g, "/")
	for i, c := range parts {
		if compileComp(c).wild {
			if i <= 1 {
				return "", ""
			}
			return strings.Join(parts[:i], "/"), strings.Join(parts[i:], "/")
		}
	}
	return "", ""
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
func (own *ownSet) pathLike(s string, pathNamed bool) bool {
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
	return own.names[strings.ToLower(t)]
}

// pathSpellings returns s and what servers may turn it into: cut at a NUL
// (C reads no further), percent-decoded once and twice, NFKC-normalized,
// with backslashes as separators, a file: URI as its path, and the
// directories a shell or a server expands (dirSpellings).
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
			dirSpellings(f, home, add)
		}
	}
	return out
}

// globSpellings returns a glob text as written and with the directories a
// shell expands (dirSpellings).
func globSpellings(g, home string) []string {
	out := []string{g}
	dirSpellings(g, escapeGlob(home), func(f string) {
		if f != "" && f != g {
			out = append(out, f)
		}
	})
	return out
}

// dirSpellings adds what f names once a shell or a server expands the
// directory it starts with: ~ and $HOME (${HOME}) as home, and what
// follows any other ~name, $NAME or ${NAME} (anywhere in f: a variable
// may hold a whole path) as a relative path. Another user's home is
// over-matched, which only denies.
func dirSpellings(f, home string, add func(string)) {
	if dir, rest, ok := homeLike(f); ok {
		if home != "" && dir == "HOME" {
			add(home + rest)
		}
		add(strings.TrimLeft(rest, "/"))
	}
	if i := strings.LastIndexByte(f, '$'); i > 0 {
		if _, rest, ok := homeLike(f[i:]); ok {
			add(strings.TrimLeft(rest, "/"))
		}
	}
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
func (e *Engine) ownAbs(own *ownSet, p string, write bool) (string, bool) {
	clean := filepath.Clean(p)
	if w, ok := own.contains(clean, write); ok {
		return w, true
	}
	if e.opts.Resolve == nil {
		return "", false
	}
	for _, q := range []string{p, clean} {
		if real, err := e.opts.Resolve(q); err == nil {
			if w, ok := own.contains(real, write); ok {
				return w, true
			}
		}
	}
	return "", false
}

// contains reports whether the absolute path p lies in a protected path
// (or, for a write, is an ancestor of one), comparing components without
// regard to case.
func (own *ownSet) contains(p string, write bool) (string, bool) {
	for _, o := range own.paths {
		if pathtree.WithinFold(p, o.Path) {
			return o.Path, true
		}
		if write && pathtree.WithinFold(o.Path, p) {
			return o.Path + ", which lies inside it", true
		}
	}
	return "", false
}

// within reports whether an absolute pattern could match a protected path
// or, in a protected directory, what lies in it (or, for a write, an
// ancestor of one).
func (own *ownSet) within(p pattern, write bool) (string, bool) {
	if lit, ok := p.literal(); ok {
		return own.contains(lit, write)
	}
	for i, o := range own.paths {
		// A glob is expanded against what exists: a file has no entries.
		if seqMatch(p.comps, own.comps[i], o.Dir, false) {
			return o.Path, true
		}
		for k := 0; write && k < len(own.comps[i]); k++ {
			if seqMatch(p.comps, own.comps[i][:k], false, false) {
				return o.Path + ", which lies inside what it matches", true
			}
		}
	}
	return "", false
}

// tail reports whether a relative path (a pattern with no wildcard) could
// name a protected path from some directory: it starts with the protected
// path's last components, after any leading "..".
func (own *ownSet) tail(p pattern) (string, bool) { return own.tailGlob(p, true) }

// tailGlob is tail for a relative pattern. With named, the components
// that match must hold one that is not only wildcards: "*" could be any
// protected name in some directory, which says nothing.
func (own *ownSet) tailGlob(p pattern, named bool) (string, bool) {
	rc := p.comps
	for len(rc) > 0 && !rc[0].wild && rc[0].lit == ".." {
		rc = rc[1:]
	}
	if len(rc) == 0 {
		return "", false
	}
	// A name says what it names even below a file; a glob is expanded
	// against what exists, and a file has no entries.
	literal := !hasWild(rc)
	for i, o := range own.paths {
		oc := own.comps[i]
		for k := 0; k < len(oc); k++ {
			if seqMatch(rc, oc[k:], o.Dir || literal, named) {
				return o.Path, true
			}
		}
	}
	return "", false
}

func hasWild(p []pcomp) bool {
	for _, c := range p {
		if c.wild {
			return true
		}
	}
	return false
}

// through judges a path through /proc or /dev also as each of its tails:
// the magic links there (/proc/PID/root, /proc/PID/cwd, /dev/fd/N) lead
// to /, to a working directory or to any open directory.
func (own *ownSet) through(p pattern) (string, bool) {
	rc := p.comps
	for !p.abs && len(rc) > 0 && !rc[0].wild && rc[0].lit == ".." {
		rc = rc[1:]
	}
	if len(rc) < 2 || !(rc[0].matches("proc") || rc[0].matches("dev")) {
		return "", false
	}
	for k := 1; k < len(rc); k++ {
		rest := pattern{abs: true, comps: rc[k:]}
		if w, ok := own.within(rest, false); ok {
			return w, true
		}
		rest.abs = false
		if w, ok := own.tailGlob(rest, true); ok {
			return w, true
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
