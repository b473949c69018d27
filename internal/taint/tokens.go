package taint

import (
	"bytes"
	"unicode/utf8"

	"github.com/bouncer-mcp/bouncer/internal/dest"
)

// How output is cut into tokens (the record side). Every form a reader could
// take as a destination on its own is recorded, as a hash; Seen reduces a
// destination to the same canonical forms (see dest.go). The forms of a
// folded word w (w has no whitespace):
//
//   - trim(w): brackets, quotes and sentence punctuation stripped from both
//     ends, so "<a@b.com>." is a@b.com;
//   - the parts of trim(w) split at brackets, quotes, '|', ',', ';', '*', '`',
//     '\', non-ASCII punctuation and symbols, and letters of scripts written
//     without spaces (Name<a@b.com>, a@b.com,c@d.com, 邮件a@b.com);
//     then each part split again at apostrophes (whole o'brien@x.com
//     is kept too);
//   - in each part, its structure: a URL gives its host, itself without
//     query and fragment (with and without scheme), its path segments and
//     adjacent segment pairs (github.com/acme/widgets gives acme/widgets), and
//     the value of each query or fragment parameter, itself taken apart the
//     same way (?next=https://x/y, ?to=a@b.com), also read with '+' as a
//     space (?q=mail+a@b.com+now); the whole authority of https://a@b.com;
//     a "label:value" or "mailto:addr" gives both sides; a path gives its
//     segments and pairs;
//   - canonical variants of each form: an address without its +tag
//     (a+x@b.com is also a@b.com), a handle or channel without its @ or #
//     (@octocat, #general), a URL without trailing slashes.
//
// Forms shorter than MinLen runes are not recorded: Seen never reports such
// a destination. A word that might hold an encoded form (it has %, & or \) is
// decoded, up to maxDecode times, and the decoded text is tokenized again; the
// raw form is kept too, since decoding can change where tokens end.
//
// Text is never split inside a run of letters, digits and the address
// punctuation . - _ @ + ~, so ana@x.com is not a token of dana@x.com.

// maxDepth bounds the recursion into URL parameters and label:value pairs.
const maxDepth = 4

// batchSize is how many hashes a scanner gathers before it takes the store's
// lock to insert them.
const batchSize = 512

// scanner cuts text into tokens and hashes them. It is not safe for
// concurrent use; Store hands one out per call from a pool.
type scanner struct {
	store   *Store
	seed    keyed
	min     int // the shortest form recorded or looked up, in runes
	hashes  []uint64
	texts   []digest  // long pieces and documents read whole (recordedText)
	dsum    digest    // the digest being made
	nonce   [12]byte  // its domain
	collect *[]string // when set, forms are also kept as text (Tokens)

	lower []byte // lower-cased copy of an ASCII word
	f     folder // Unicode folding
	cat   []byte // concatenations (+tag removal)
	dec   [maxDecode + 1][]byte
	pf    folder // case-preserving folding before decoding
	phr   folder // whole-piece phrase folding

	jbuf []byte // unescaped JSON strings
	plus []byte // a query value with '+' read as space

	// The run of short words (see pairWord): the last one as the text
	// being recorded has it (trimmed, not folded), whether it has a capital
	// or a digit, and whether there is one.
	prev       []byte
	prevMarked bool
	hasPrev    bool
	pair       []byte
	all        []uint64 // a destination's word pairs, all of which must be seen

	// The run of words that may write a number in groups (see numberWord):
	// their text, joined by spaces, and where each starts.
	num       []byte
	numStarts []int

	chunkFlags uint16
}

// emit hashes one form (already folded and trimmed) and queues it.
func (sc *scanner) emit(t []byte) {
	if sc.collect != nil {
		*sc.collect = append(*sc.collect, string(t))
	}
	sc.hashes = append(sc.hashes, fixHash(sc.seed.sum(t)))
	if len(sc.hashes) >= batchSize && sc.store != nil {
		sc.store.recorded(sc.hashes, nil)
		sc.hashes = sc.hashes[:0]
	}
}

// trim strips leading and trailing edge punctuation.
func trim(b []byte) []byte {
	i, j := 0, len(b)
	for i < j && leadEdge[b[i]] {
		i++
	}
	for j > i && trailEdge[b[j-1]] {
		j--
	}
	return b[i:j]
}

// canon emits t and its canonical variants (see the package comment), if t
// is at least MinLen runes long. The destination side emits the same
// variants of each form it checks, so the two meet.
func (sc *scanner) canon(t []byte, flags uint16) {
	if !sc.long(t, flags) {
		return
	}
	sc.emit(t)
	if t[len(t)-1] == '/' {
		u := bytes.TrimRight(t, "/")
		if sc.long(u, flags) {
			sc.emit(u)
		}
	}
	if t[0] == '@' || t[0] == '#' {
		u := trim(t[1:])
		if sc.long(u, flags) {
			sc.emit(u)
		}
		t = u
	}
	if flags&cPlus == 0 {
		return
	}
	if u := sc.untag(t); u != nil && sc.long(u, flags) {
		sc.emit(u)
	}
}

// long reports whether b has at least sc.min runes (MinLen for taint);
// flags (the classes of b's bytes, or more) saves counting runes in ASCII.
func (sc *scanner) long(b []byte, flags uint16) bool {
	return len(b) >= sc.min && (flags&cUni == 0 || runeLen(b) >= sc.min)
}

// untag returns local@domain for local+tag@domain, or nil. The result is in
// sc.cat, valid until the next call.
func (sc *scanner) untag(t []byte) []byte {
	at := bytes.LastIndexByte(t, '@')
	if at <= 0 {
		return nil
	}
	plus := bytes.IndexByte(t[:at], '+')
	if plus <= 0 {
		return nil
	}
	sc.cat = append(append(sc.cat[:0], t[:plus]...), t[at:]...)
	return sc.cat
}

// pairWord takes the next word of a piece for runs of short words: a
// street address or a name of several words, each shorter than MinLen
// ("123 Maine st, Troy, MI 48083"), is no token of its own, so a pair of
// adjacent short ASCII words is recorded as "w1 w2" when either has a
// capital or a digit, as a name or an address in output has (two
// lower-case words of prose are no destination, and their pairs would
// cost as much as the rest of the record). A destination whose words are
// all short is seen when all its pairs are (destPairs). A long word or a
// non-ASCII one ends the run.
func (sc *scanner) pairWord(raw []byte, flags uint16) {
	t := trim(raw)
	switch {
	case len(t) == 0:
		return // a dash or a quote between the words
	case len(t) >= sc.min:
		sc.hasPrev = false
		return
	}
	marked := flags&(cUpper|cDigit) != 0
	if sc.hasPrev && (marked || sc.prevMarked) {
		sc.pair = sc.pair[:0]
		for _, c := range sc.prev {
			sc.pair = append(sc.pair, asciiLower[c])
		}
		sc.pair = append(sc.pair, ' ')
		for _, c := range t {
			sc.pair = append(sc.pair, asciiLower[c])
		}
		sc.emit(sc.pair)
	}
	sc.prev, sc.prevMarked, sc.hasPrev = t, marked, true
}

// maxNumberWords bounds the words of a run that numberWord keeps: a phone
// or account number has no more groups than this.
const maxNumberWords = 8

// numberWord takes the next word of a piece for numbers written in groups
// ("+1 415-555-0199", "(415) 555.0199", "DE89 3704 ..." is an IBAN and the
// word pairs hold it): a number is read by its digits wherever it is sent
// (an SMS or a bank API takes "+14155550199"), so the forms dest.NumberForms
// gives for each run of words of digits and "+()-." are recorded, and a
// destination's digits meet them (dest.Variants). A word with anything
// else, or one that ends a clause ("0199,"), ends the run.
func (sc *scanner) numberWord(raw []byte, flags uint16) {
	if flags&cDigit == 0 || flags&(cUpper|cUni) != 0 {
		sc.flushNumber()
		return
	}
	end := len(raw)
	for end > 0 && (raw[end-1] == ',' || raw[end-1] == ';' || raw[end-1] == ':' || raw[end-1] == '.') {
		end--
	}
	for _, c := range raw[:end] {
		if !(c >= '0' && c <= '9' || c == '+' || c == '(' || c == ')' || c == '-' || c == '.') {
			sc.flushNumber()
			return
		}
	}
	if len(sc.numStarts) == maxNumberWords {
		// Drop the first word. (The shift is read once: the loop below
		// writes over numStarts[1].)
		shift := sc.numStarts[1]
		sc.num = append(sc.num[:0], sc.num[shift:]...)
		for i := range sc.numStarts[1:] {
			sc.numStarts[i] = sc.numStarts[i+1] - shift
		}
		sc.numStarts = sc.numStarts[:maxNumberWords-1]
	}
	if len(sc.numStarts) > 0 {
		sc.num = append(sc.num, ' ')
	}
	sc.numStarts = append(sc.numStarts, len(sc.num))
	sc.num = append(sc.num, raw[:end]...)
	if end < len(raw) {
		sc.flushNumber()
	}
}

// flushNumber records the number forms of the run numberWord kept: for
// each word it starts at, the longest run from there that is a number. A
// run of one word with no '+', '-', '.' or '(' is a bare run of digits (an
// id, an amount), which is no number to dest.NumberForms anyway.
func (sc *scanner) flushNumber() {
	n := len(sc.numStarts)
	if n == 0 || n == 1 && !bytes.ContainsAny(sc.num, "+-.(") {
		sc.num, sc.numStarts = sc.num[:0], sc.numStarts[:0]
		return
	}
	for i := 0; i < n; i++ {
		for j := n - 1; j >= i; j-- {
			end := len(sc.num)
			if j+1 < n {
				end = sc.numStarts[j+1] - 1
			}
			forms := dest.NumberForms(string(sc.num[sc.numStarts[i]:end]))
			for _, f := range forms {
				if len(f) >= sc.min {
					sc.emit([]byte(f))
				}
			}
			if forms != nil {
				break
			}
		}
	}
	sc.num, sc.numStarts = sc.num[:0], sc.numStarts[:0]
}

// record processes raw text (not yet folded) at a decoding depth.
func (sc *scanner) record(b []byte, depth int) {
	if depth == 0 {
		sc.hasPrev = false
		defer sc.flushNumber()
	}
	for i := 0; i < len(b); {
		c := b[i]
		if asciiClass[c]&cSpace != 0 {
			i++
			continue
		}
		start := i
		var flags uint16
		for i < len(b) {
			k := asciiClass[b[i]]
			if k&cSpace != 0 {
				break
			}
			flags |= k
			i++
		}
		raw := b[start:i]
		if depth == 0 {
			sc.numberWord(raw, flags)
			switch {
			case flags&cUni != 0 || len(raw) >= 2*sc.min:
				sc.hasPrev = false // a long or non-ASCII word ends a run
			case flags&(cUpper|cDigit|cSpecial) == 0 && !sc.prevMarked && !leadEdge[raw[0]] && !trailEdge[raw[len(raw)-1]]:
				// A plain lower-case word after another: no pair to
				// record, only the run to keep (pairWord's fast path).
				sc.prev, sc.hasPrev = raw, len(raw) < sc.min
			default:
				sc.pairWord(raw, flags)
			}
		}
		if len(raw) < sc.min && flags&cSpecial == 0 {
			continue // a short plain word has no form to record
		}
		if flags&cUni == 0 {
			w := raw
			if flags&cUpper != 0 {
				sc.lower = sc.lower[:0]
				for _, c := range raw {
					sc.lower = append(sc.lower, asciiLower[c])
				}
				w = sc.lower
			}
			if flags&cSpecial == 0 && !leadEdge[w[0]] && !trailEdge[w[len(w)-1]] {
				sc.emit(w) // the common case, kept out of word's call
			} else {
				sc.word(w, flags)
			}
		} else {
			sc.unicodeChunk(raw)
			flags |= sc.chunkFlags
		}
		if flags&cEsc != 0 && depth < maxDecode {
			sc.decodeChunk(raw, depth)
		}
	}
}

// unicodeChunk folds a chunk with non-ASCII runes (which may fold to
// spaces) and processes its words. It leaves the OR of the word classes in
// sc.chunkFlags, so that a full-width ％ still triggers decoding.
func (sc *scanner) unicodeChunk(raw []byte) {
	folded := sc.f.fold(raw, true)
	sc.chunkFlags = 0
	for i := 0; i < len(folded); {
		if folded[i] == ' ' {
			i++
			continue
		}
		start := i
		var flags uint16
		for i < len(folded) && folded[i] != ' ' {
			c := folded[i]
			if c < utf8.RuneSelf {
				flags |= asciiClass[c]
				i++
				continue
			}
			r, n := decodeRune(folded[i:])
			i += n
			flags |= cUni
			if isApos(r) {
				flags |= cApos
			} else if isSep1Rune(r) {
				flags |= cSep1
			}
		}
		sc.chunkFlags |= flags
		sc.word(folded[start:i], flags)
	}
}

// decodeChunk decodes a raw chunk once (after folding everything but case,
// which entity names need) and records the result one level deeper.
func (sc *scanner) decodeChunk(raw []byte, depth int) {
	pre := sc.pf.fold(raw, false)
	d, changed := decode(sc.dec[depth][:0], pre)
	sc.dec[depth] = d
	if changed {
		sc.record(d, depth+1)
	}
}

// word records the forms of one folded word.
func (sc *scanner) word(w []byte, flags uint16) {
	if len(w) == 0 {
		return
	}
	if flags&cSpecial == 0 {
		if leadEdge[w[0]] || trailEdge[w[len(w)-1]] {
			// Sentence punctuation only: "word," "(word)".
			w = trim(w)
			if len(w) == 0 {
				return
			}
		}
		if len(w) >= sc.min {
			sc.emit(w)
		}
		return
	}
	if trailEdge[w[len(w)-1]] && flags&cUni == 0 {
		// "word," and "word." are common: if the trimmed word is plain,
		// it has one form.
		t := trim(w)
		var f uint16
		for _, c := range t {
			f |= asciiClass[c]
		}
		if f&cSpecial == 0 {
			if len(t) >= sc.min {
				sc.emit(t)
			}
			return
		}
		w, flags = t, f
	}
	sc.forms(w, flags)
}

// forms emits the forms of a folded word that is not a plain one. flags is
// the OR of the classes of its bytes; a part of it has no more than those.
func (sc *scanner) forms(w []byte, flags uint16) {
	t := trim(w)
	if len(t) == 0 {
		return
	}
	sc.canon(t, flags)
	if flags&cSep1 != 0 && hasSep1(t) {
		splitFunc(t, isSep1At, func(p []byte) {
			p = trim(p)
			sc.canon(p, flags)
			sc.apos(p, flags)
			sc.structure(p, 0, flags)
		})
		return
	}
	sc.apos(t, flags)
	sc.structure(t, 0, flags)
}

// apos splits a part at apostrophes.
func (sc *scanner) apos(p []byte, flags uint16) {
	if flags&cApos == 0 || !hasApos(p) {
		return
	}
	splitFunc(p, isAposAt, func(q []byte) {
		q = trim(q)
		sc.canon(q, flags)
		sc.structure(q, 0, flags)
	})
}

// structure takes a part apart along URL, label:value, query and path
// punctuation.
func (sc *scanner) structure(p []byte, depth int, flags uint16) {
	if flags&cSep2 == 0 || len(p) == 0 || depth > maxDepth || indexIn(p, &setSep2) < 0 {
		return
	}
	if i := bytes.Index(p, []byte("://")); i > 0 {
		sc.url(p, i, depth, flags)
		return
	}
	if i := bytes.IndexByte(p, ':'); i >= 0 {
		sc.scp(p, i, flags)
		eachField(p, ':', func(q []byte) {
			q = trim(q)
			sc.canon(q, flags)
			sc.structure(q, depth+1, flags)
		})
		return
	}
	if i := indexIn(p, &setQuery); i >= 0 {
		if i > 0 {
			base := trim(p[:i])
			sc.canon(base, flags)
			sc.structure(base, depth+1, flags)
		}
		sc.params(p[i+1:], depth, flags)
		return
	}
	sc.path(p, flags)
}

// url handles scheme://authority/path?query#fragment; i is the index of
// "://".
func (sc *scanner) url(p []byte, i, depth int, flags uint16) {
	rest := p[i+3:]
	end := indexIn(rest, &setAuthEnd)
	if end < 0 {
		end = len(rest)
	}
	auth := rest[:end]
	if at := bytes.LastIndexByte(auth, '@'); at >= 0 {
		// https://attacker@evil.com: the whole authority reads as an
		// address, and the host is the host.
		sc.canon(trim(auth), flags)
		sc.canon(trim(auth[:at]), flags)
		auth = auth[at+1:]
	}
	sc.canon(trim(auth), flags)
	sc.parents(trim(auth), flags)
	q := indexIn(rest, &setQF)
	base := rest
	if q >= 0 {
		base = rest[:q]
	}
	if q >= 0 {
		sc.canon(trim(p[:i+3+q]), flags)
	}
	// Without the scheme: evil.example/hook.
	sc.canon(trim(base), flags)
	sc.path(base[end:], flags)
	if q >= 0 {
		sc.params(rest[q+1:], depth, flags)
	}
}

// parents records every name a URL's host is under, down to two labels
// (evil.example.com and example.com for collect.evil.example.com:8443):
// whoever named a host owns the names under its registrable part, so
// https://<data>.evil.example.com/ goes to whoever printed the link, and
// the engine looks a URL up by its host's registrable part (dest.Hosts).
// A parent that is a public suffix (co.uk) is recorded too, harmlessly:
// no destination is looked up by one. An IP address has no parents.
func (sc *scanner) parents(host []byte, flags uint16) {
	if j := bytes.LastIndexByte(host, ':'); j >= 0 {
		host = host[:j]
	}
	host = bytes.TrimSuffix(host, []byte("."))
	if len(host) == 0 || bytes.IndexByte(host, '[') >= 0 || host[len(host)-1] >= '0' && host[len(host)-1] <= '9' {
		return
	}
	for {
		i := bytes.IndexByte(host, '.')
		if i < 0 {
			return
		}
		host = host[i+1:]
		if bytes.IndexByte(host, '.') < 0 {
			return
		}
		sc.canon(host, flags)
	}
}

// scp records what git, scp and rsync read in an scp-like address
// "[user@]host:path" (i is the index of its first ':', with no '/' before
// it and a dotted host): the URL ssh://[user@]host/path, so its host, the
// names above it, and host/path, the form a URL of any scheme on that host
// and path is also recorded under.
func (sc *scanner) scp(p []byte, i int, flags uint16) {
	head, path := p[:i], bytes.TrimLeft(trim(p[i+1:]), "/")
	if bytes.IndexByte(head, '/') >= 0 || len(path) == 0 {
		return
	}
	host := trim(head[bytes.LastIndexByte(head, '@')+1:])
	if d := bytes.IndexByte(host, '.'); d <= 0 || d == len(host)-1 {
		return
	}
	sc.canon(host, flags)
	sc.parents(host, flags)
	sc.cat = append(append(append(sc.cat[:0], host...), '/'), path...)
	sc.canon(sc.cat, flags)
}

// params takes apart a query or fragment: each & separated parameter, and
// the value of each key=value, recursively.
func (sc *scanner) params(q []byte, depth int, flags uint16) {
	for len(q) > 0 {
		j := indexIn(q, &setParam)
		param := q
		if j >= 0 {
			param, q = q[:j], q[j+1:]
		} else {
			q = nil
		}
		v := param
		if e := bytes.IndexByte(param, '='); e >= 0 {
			v = param[e+1:]
		}
		v = trim(v)
		sc.canon(v, flags)
		sc.structure(v, depth+1, flags)
		if flags&cPlus != 0 && bytes.IndexByte(v, '+') >= 0 {
			sc.plusSpaced(v, flags)
		}
	}
}

// plusSpaced records a query value read as form encoding, where '+' is a
// space: to=Mallory+attacker@evil.com+now names attacker@evil.com. (The value
// read literally, keeping a+tag@b.com whole, is recorded too.)
func (sc *scanner) plusSpaced(v []byte, flags uint16) {
	sc.plus = append(sc.plus[:0], v...)
	for i, c := range sc.plus {
		if c == '+' {
			sc.plus[i] = ' '
		}
	}
	flags &^= cPlus
	eachField(sc.plus, ' ', func(w []byte) { sc.forms(w, flags) })
}

// eachField calls fn for each non-empty field of b between sep bytes.
func eachField(b []byte, sep byte, fn func([]byte)) {
	for len(b) > 0 {
		i := bytes.IndexByte(b, sep)
		if i < 0 {
			fn(b)
			return
		}
		if i > 0 {
			fn(b[:i])
		}
		b = b[i+1:]
	}
}

// path records the segments of a /-separated path and each adjacent pair.
func (sc *scanner) path(p []byte, flags uint16) {
	if bytes.IndexByte(p, '/') < 0 {
		return
	}
	var prev []byte
	for len(p) > 0 {
		j := bytes.IndexByte(p, '/')
		seg := p
		if j >= 0 {
			seg, p = p[:j], p[j+1:]
		} else {
			p = nil
		}
		seg = trim(seg)
		if len(seg) == 0 {
			continue
		}
		sc.canon(seg, flags)
		if prev != nil {
			sc.cat = append(append(append(sc.cat[:0], prev...), '/'), seg...)
			pair := sc.cat
			if sc.long(pair, flags) {
				sc.emit(pair)
			}
		}
		prev = seg
	}
}

// isSep1At reports whether a level-one separator starts at b[i], and its
// width.
func isSep1At(b []byte, i int) (bool, int) {
	c := b[i]
	if c < utf8.RuneSelf {
		return asciiClass[c]&cSep1 != 0, 1
	}
	r, n := decodeRune(b[i:])
	return isSep1Rune(r), n
}

func isAposAt(b []byte, i int) (bool, int) {
	c := b[i]
	if c < utf8.RuneSelf {
		return c == '\'', 1
	}
	r, n := utf8.DecodeRune(b[i:])
	return isApos(r), n
}

func hasSep1(b []byte) bool {
	for i := 0; i < len(b); {
		ok, n := isSep1At(b, i)
		if ok {
			return true
		}
		i += n
	}
	return false
}

func hasApos(b []byte) bool {
	for i := 0; i < len(b); {
		ok, n := isAposAt(b, i)
		if ok {
			return true
		}
		i += n
	}
	return false
}

// splitFunc calls fn for each non-empty run of b between separators.
func splitFunc(b []byte, sep func([]byte, int) (bool, int), fn func([]byte)) {
	start := 0
	for i := 0; i < len(b); {
		ok, n := sep(b, i)
		if ok {
			if i > start {
				fn(b[start:i])
			}
			start = i + n
		}
		i += n
	}
	if start < len(b) {
		fn(b[start:])
	}
}
