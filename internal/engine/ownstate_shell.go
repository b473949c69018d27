package engine

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// The words a shell reads in a command line, and the strings code builds
// from literals: what the own-state guard judges in an argument that holds
// a command line or code (see ownstate.go). Both readers take untrusted
// text and never fail: what they can't make sense of is read as plain
// words, so nothing in the text goes unjudged.

// maxShellDepth bounds nested command lines ($(...), `...`, a quoted word
// that holds a command line itself, as for sh -c): below it, text is read
// as plain words.
const maxShellDepth = 4

// maxBraceWords bounds the words one brace expansion makes; a word that
// makes more can't be judged (shellToken.tooMany).
const maxBraceWords = 256

// shellWord is one word after the shell's quote removal: each byte, and
// whether it was quoted (so a '*' or a '{' there is plain).
type shellWord struct {
	b []byte
	q []bool
}

func (w *shellWord) add(c byte, quoted bool) {
	w.b = append(w.b, c)
	w.q = append(w.q, quoted)
}

func (w *shellWord) addString(s string, quoted bool) {
	for i := 0; i < len(s); i++ {
		w.add(s[i], quoted)
	}
}

// shellToken is a word, or an operator (';', '&', '|', '<', '>', '(',
// ')' or a newline) that ends one.
type shellToken struct {
	word shellWord
	op   bool
}

// substitution stands in a word for what a command substitution or a
// parameter expansion yields: some text Bouncer does not know, read like a
// variable in front of a path ("${}/x" is x below some directory).
const substitution = "${}"

// shellLexer reads a command line the way a POSIX shell (dash, bash)
// splits it into words before expansion: quotes ('...', "...", $'...',
// $"..."), backslashes, parameter expansions and command substitutions.
// Comments are not recognised: a '#' is read as part of a word, so text a
// shell would skip is judged too.
type shellLexer struct {
	s     string
	i     int
	depth int
	arith bool // inside $((...)): no globs
	out   []shellToken
	// sub are the tokens of the command substitutions met in this line,
	// each after an operator token; nested are command lines met inside
	// it that are yet to be read (`...` and ${...} operands).
	sub    []shellToken
	nested []string
}

// shellTokens returns the tokens of command line s and of every command
// line nested in it (each after an operator token, so that no word of one
// joins a word of another).
func shellTokens(s string) []shellToken {
	return lexShell(s, 0, false)
}

func lexShell(s string, depth int, arith bool) []shellToken {
	l := &shellLexer{s: s, depth: depth, arith: arith}
	l.run(false)
	// A word that holds a command line itself (sh -c '...', eval "...")
	// is read as one too.
	for _, t := range l.out {
		if !t.op && strings.ContainsAny(string(t.word.b), " \t\n;&|'\"`") {
			l.nested = append(l.nested, string(t.word.b))
		}
	}
	out := append(l.out, l.sub...)
	for _, n := range l.nested {
		out = append(out, shellToken{op: true})
		if depth+1 < maxShellDepth {
			out = append(out, lexShell(n, depth+1, false)...)
		} else {
			out = append(out, plainTokens(n)...)
		}
	}
	return out
}

// plainTokens splits s at white space only, every byte quoted.
func plainTokens(s string) []shellToken {
	var out []shellToken
	for _, f := range strings.Fields(s) {
		var w shellWord
		w.addString(f, true)
		out = append(out, shellToken{word: w})
	}
	return out
}

// run reads tokens until the end of s, or, with close, until an unquoted
// ')' that closes what the caller opened (a command substitution), and
// leaves l.i after it.
func (l *shellLexer) run(close bool) {
	var cur shellWord
	have := false
	end := func() {
		if have {
			if l.arith {
				for i := range cur.q {
					cur.q[i] = true
				}
			}
			l.out = append(l.out, shellToken{word: cur})
		}
		cur, have = shellWord{}, false
	}
	parens := 0
	for l.i < len(l.s) {
		c := l.s[l.i]
		switch {
		case c == ' ' || c == '\t' || c == '\r':
			end()
			l.i++
		case c == '\n' || c == ';' || c == '&' || c == '|' || c == '<' || c == '>' || c == '(' || c == ')':
			end()
			l.i++
			if c == '(' {
				parens++
			}
			if c == ')' {
				if close && parens == 0 {
					return
				}
				parens--
			}
			l.out = append(l.out, shellToken{op: true})
		case c == '\\':
			have = true
			if l.i+1 < len(l.s) {
				if l.s[l.i+1] != '\n' {
					cur.add(l.s[l.i+1], true)
				}
				l.i += 2
			} else {
				cur.add('\\', true)
				l.i++
			}
		case c == '\'':
			have = true
			n := strings.IndexByte(l.s[l.i+1:], '\'')
			if n < 0 {
				n = len(l.s) - l.i - 1
			}
			cur.addString(l.s[l.i+1:l.i+1+n], true)
			l.i = min(l.i+n+2, len(l.s))
		case c == '"':
			have = true
			l.i++
			l.double(&cur)
		case c == '`':
			have = true
			l.backtick(&cur)
		case c == '$':
			have = true
			l.dollar(&cur, false)
		default:
			have = true
			cur.add(c, false)
			l.i++
		}
	}
	end()
}

// double reads the inside of "...", from after the opening quote.
func (l *shellLexer) double(cur *shellWord) {
	for l.i < len(l.s) {
		c := l.s[l.i]
		switch c {
		case '"':
			l.i++
			return
		case '\\':
			if l.i+1 < len(l.s) && strings.IndexByte("$`\"\\\n", l.s[l.i+1]) >= 0 {
				if l.s[l.i+1] != '\n' {
					cur.add(l.s[l.i+1], true)
				}
				l.i += 2
				continue
			}
			cur.add('\\', true)
			l.i++
		case '`':
			l.backtick(cur)
		case '$':
			l.dollar(cur, true)
		default:
			cur.add(c, true)
			l.i++
		}
	}
}

// backtick reads `...` (the old command substitution) at l.i.
func (l *shellLexer) backtick(cur *shellWord) {
	var inner strings.Builder
	i := l.i + 1
	for i < len(l.s) && l.s[i] != '`' {
		if l.s[i] == '\\' && i+1 < len(l.s) && strings.IndexByte("$`\\", l.s[i+1]) >= 0 {
			i++
		}
		inner.WriteByte(l.s[i])
		i++
	}
	l.nested = append(l.nested, inner.String())
	cur.addString(substitution, true)
	l.i = min(i+1, len(l.s))
}

// dollar reads what starts with '$' at l.i: $'...', $"...", $((...)),
// $(...), ${...}, $NAME, or a plain '$'.
func (l *shellLexer) dollar(cur *shellWord, inDouble bool) {
	rest := l.s[l.i+1:]
	switch {
	case !inDouble && strings.HasPrefix(rest, "'"):
		l.i += 2
		l.ansiC(cur)
	case !inDouble && strings.HasPrefix(rest, `"`):
		l.i += 2
		l.double(cur)
	case strings.HasPrefix(rest, "(("):
		sub := &shellLexer{s: l.s, i: l.i + 3, depth: l.depth, arith: true}
		sub.run(true)
		l.takeNested(sub)
		l.i = sub.i
		if l.i < len(l.s) && l.s[l.i] == ')' {
			l.i++
		}
		cur.addString(substitution, true)
	case strings.HasPrefix(rest, "("):
		if l.depth+1 >= maxShellDepth {
			cur.addString(substitution, true)
			l.i += 2
			return
		}
		sub := &shellLexer{s: l.s, i: l.i + 2, depth: l.depth + 1}
		sub.run(true)
		l.takeNested(sub)
		l.i = sub.i
		cur.addString(substitution, true)
	case strings.HasPrefix(rest, "{"):
		end := l.braceEnd(l.i + 2)
		body := l.s[l.i+2 : end]
		name := body
		if k := strings.IndexFunc(body, func(r rune) bool { return !isNameRune(r) }); k >= 0 {
			name = body[:k]
			// The operand of ${X:-word}, ${X#word} and the like is
			// expanded as a word: it is read too.
			l.nested = append(l.nested, strings.TrimLeft(body[k:], ":-=+?#%/^,!@*"))
		}
		if name == "" {
			cur.addString(substitution, true)
		} else {
			cur.addString("${"+name+"}", true)
		}
		l.i = min(end+1, len(l.s))
	default:
		n := 0
		for n < len(rest) && isNameRune(rune(rest[n])) {
			n++
		}
		if n == 0 && len(rest) > 0 && strings.IndexByte("@*#?$!-0123456789", rest[0]) >= 0 {
			n = 1
		}
		if n == 0 {
			cur.add('$', inDouble)
			l.i++
			return
		}
		cur.addString("$"+rest[:n], true)
		l.i += 1 + n
	}
}

// takeNested keeps what a command substitution read: its words are
// judged as a command line of their own.
func (l *shellLexer) takeNested(sub *shellLexer) {
	l.sub = append(l.sub, shellToken{op: true})
	l.sub = append(l.sub, sub.out...)
	l.sub = append(l.sub, sub.sub...)
	l.nested = append(l.nested, sub.nested...)
}

// braceEnd returns the index of the '}' that closes the ${ before i, or
// len(s).
func (l *shellLexer) braceEnd(i int) int {
	depth := 0
	for ; i < len(l.s); i++ {
		switch l.s[i] {
		case '\\':
			i++
		case '{':
			depth++
		case '}':
			if depth == 0 {
				return i
			}
			depth--
		}
	}
	return len(l.s)
}

// ansiC reads the inside of $'...' (bash, zsh, ksh), decoding its escapes.
func (l *shellLexer) ansiC(cur *shellWord) {
	for l.i < len(l.s) {
		c := l.s[l.i]
		if c == '\'' {
			l.i++
			return
		}
		if c != '\\' || l.i+1 >= len(l.s) {
			cur.add(c, true)
			l.i++
			continue
		}
		r, n := decodeEscape(l.s[l.i+1:], true)
		cur.addString(r, true)
		l.i += 1 + n
	}
}

// decodeEscape decodes the escape after a backslash at the start of s (as
// C, $'...', Python and JavaScript read it) and returns what it stands for
// and how many bytes of s it took. An escape it does not know stands for
// the character itself.
func decodeEscape(s string, octal bool) (string, int) {
	simple := map[byte]string{'n': "\n", 't': "\t", 'r': "\r", 'a': "\a", 'b': "\b", 'f': "\f", 'v': "\v", 'e': "\x1b", 'E': "\x1b", '0': "\x00"}
	hexRun := func(start, max int) (string, int) {
		n := 0
		for n < max && start+n < len(s) && isHex(s[start+n]) {
			n++
		}
		if n == 0 {
			return s[:1], 1
		}
		v, _ := strconv.ParseUint(s[start:start+n], 16, 32)
		if s[0] == 'x' {
			return string([]byte{byte(v)}), start + n
		}
		return string(rune(v)), start + n
	}
	switch c := s[0]; {
	case c == 'x':
		return hexRun(1, 2)
	case c == 'u' && strings.HasPrefix(s, "u{"):
		if end := strings.IndexByte(s, '}'); end > 2 {
			v, err := strconv.ParseUint(s[2:end], 16, 32)
			if err == nil {
				return string(rune(v)), end + 1
			}
		}
		return "u", 1
	case c == 'u':
		return hexRun(1, 4)
	case c == 'U':
		return hexRun(1, 8)
	case octal && c >= '0' && c <= '7':
		n := 1
		for n < 4 && n < len(s) && s[n] >= '0' && s[n] <= '7' {
			n++
		}
		v, _ := strconv.ParseUint(s[:n], 8, 32)
		return string([]byte{byte(v)}), n
	case c == 'c' && len(s) > 1:
		return string([]byte{s[1] & 0x1f}), 2
	default:
		if r, ok := simple[c]; ok {
			return r, 1
		}
		_, w := utf8.DecodeRuneInString(s)
		return s[:w], w
	}
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func isNameRune(r rune) bool {
	return r == '_' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9'
}

// braceExpand expands the unquoted brace expressions of w as bash does
// ({a,b} and {1..3}, nested, left to right). ok is false when w makes
// more than maxBraceWords words.
func braceExpand(w shellWord) (out []shellWord, ok bool) {
	open, close, alts := findBrace(w)
	if open < 0 {
		return []shellWord{w}, true
	}
	prefix := shellWord{b: w.b[:open], q: w.q[:open]}
	suffix := shellWord{b: w.b[close+1:], q: w.q[close+1:]}
	tails, ok := braceExpand(suffix)
	if !ok {
		return nil, false
	}
	for _, a := range alts {
		heads, ok := braceExpand(a)
		if !ok {
			return nil, false
		}
		for _, h := range heads {
			for _, t := range tails {
				var n shellWord
				n.b = append(append(append(n.b, prefix.b...), h.b...), t.b...)
				n.q = append(append(append(n.q, prefix.q...), h.q...), t.q...)
				out = append(out, n)
				if len(out) > maxBraceWords {
					return nil, false
				}
			}
		}
	}
	return out, true
}

// findBrace finds the first unquoted brace expression of w that expands:
// one with an unquoted ',' at its top level, or a sequence {x..y}. It
// returns the positions of its braces and its alternatives.
func findBrace(w shellWord) (open, close int, alts []shellWord) {
	for o := 0; o < len(w.b); o++ {
		if w.b[o] != '{' || w.q[o] {
			continue
		}
		depth, last := 0, o+1
		var parts []shellWord
		for i := o + 1; i < len(w.b); i++ {
			if w.q[i] {
				continue
			}
			switch w.b[i] {
			case '{':
				depth++
			case '}':
				if depth > 0 {
					depth--
					continue
				}
				if parts != nil {
					parts = append(parts, shellWord{b: w.b[last:i], q: w.q[last:i]})
					return o, i, parts
				}
				if seq, ok := braceSequence(w, o+1, i); ok {
					return o, i, seq
				}
				i = len(w.b) // no expansion here; try the next '{'
			case ',':
				if depth == 0 {
					parts = append(parts, shellWord{b: w.b[last:i], q: w.q[last:i]})
					last = i + 1
				}
			}
		}
	}
	return -1, -1, nil
}

// braceSequence expands {x..y} and {x..y..step}, of integers or of single
// letters.
func braceSequence(w shellWord, from, to int) ([]shellWord, bool) {
	for i := from; i < to; i++ {
		if w.q[i] {
			return nil, false
		}
	}
	parts := strings.Split(string(w.b[from:to]), "..")
	if len(parts) != 2 && len(parts) != 3 {
		return nil, false
	}
	step := 1
	if len(parts) == 3 {
		s, err := strconv.Atoi(parts[2])
		if err != nil {
			return nil, false
		}
		if step = s; step < 0 {
			step = -step
		}
		if step == 0 {
			step = 1
		}
	}
	word := func(s string) shellWord {
		var n shellWord
		n.addString(s, true)
		return n
	}
	var out []shellWord
	a, errA := strconv.Atoi(parts[0])
	b, errB := strconv.Atoi(parts[1])
	switch {
	case errA == nil && errB == nil:
		for v, k := a, 0; (a <= b && v <= b) || (a > b && v >= b); k++ {
			if k > maxBraceWords {
				return make([]shellWord, maxBraceWords+1), true
			}
			out = append(out, word(strconv.Itoa(v)))
			if a <= b {
				v += step
			} else {
				v -= step
			}
		}
	case len(parts[0]) == 1 && len(parts[1]) == 1:
		x, y := int(parts[0][0]), int(parts[1][0])
		for v := x; (x <= y && v <= y) || (x > y && v >= y); {
			out = append(out, word(string(rune(v))))
			if x <= y {
				v += step
			} else {
				v -= step
			}
		}
	default:
		return nil, false
	}
	return out, true
}

// codeStrings returns the strings that code builds from its literals: each
// string literal ('...', "...", `...`, and Python's triple-quoted ones),
// with its escapes decoded, and literals that follow one another with only
// a '+' or white space between them joined into one ('ho'+'me',
// "~/.boun" "cer"). A JavaScript template's ${...} reads as an unknown
// directory (substitution). Consecutive strings are also returned joined
// with '/', as os.path.join or path.join would join them.
func codeStrings(s string) []string {
	var groups []string
	var cur strings.Builder
	inGroup := false
	flush := func() {
		if inGroup {
			groups = append(groups, cur.String())
		}
		cur.Reset()
		inGroup = false
	}
	for i := 0; i < len(s); {
		c := s[i]
		if c != '\'' && c != '"' && c != '`' {
			if inGroup && (c == '+' || c == ' ' || c == '\t' || c == '\n' || c == '\r') {
				i++
				continue
			}
			flush()
			i++
			continue
		}
		lit, n := codeLiteral(s[i:])
		cur.WriteString(lit)
		inGroup = true
		i += n
	}
	flush()
	out := groups
	for k := 1; k < len(groups); k++ {
		out = append(out, groups[k-1]+"/"+groups[k])
	}
	return out
}

// codeLiteral reads the string literal at the start of s and returns its
// value and its length in s. An unterminated literal runs to the end.
func codeLiteral(s string) (string, int) {
	q := s[:1]
	if len(s) >= 3 && (q == "'" || q == `"`) && s[1] == s[0] && s[2] == s[0] {
		q = s[:3]
	}
	var b strings.Builder
	i := len(q)
	for i < len(s) {
		if strings.HasPrefix(s[i:], q) {
			return b.String(), i + len(q)
		}
		switch {
		case s[i] == '\\' && i+1 < len(s):
			r, n := decodeEscape(s[i+1:], true)
			b.WriteString(r)
			i += 1 + n
		case q == "`" && strings.HasPrefix(s[i:], "${"):
			end := strings.IndexByte(s[i:], '}')
			if end < 0 {
				end = len(s) - i - 1
			}
			b.WriteString(substitution)
			i += end + 1
		default:
			b.WriteByte(s[i])
			i++
		}
	}
	return b.String(), len(s)
}
