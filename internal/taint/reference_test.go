package taint

import (
	"bytes"
	"testing"
	"unicode/utf8"

	"github.com/bouncer-mcp/bouncer/internal/dest"
)

// refScanner is the record side's scanner as of commit 8ce87bd, kept whole
// as the reference that a faster scanner is held to
// (TestScanMatchesReference, FuzzScanMatchesReference): what is recorded
// must not change, and a hash the reference records that the scanner
// misses is a destination never seen. (The scanner is still the same code:
// a fast path for plain words was tried against it and backed out as no
// faster; docs/performance.md. One fix is applied to both: numberWord read
// the shift of a run of more than maxNumberWords words after overwriting
// it, so "000 0 00 00 00 00 0 0 0" panicked; the fuzz target found it.)
// Only its methods are copied; the helpers they call (trim, fold, decode,
// the hash) are shared, so a change to one of those needs a copy here
// first.
type refScanner scanner

// emit hashes one form (already folded and trimmed) and queues it.
func (sc *refScanner) emit(t []byte) {
	sc.hashes = append(sc.hashes, fixHash(sc.seed.sum(t)))
}

// canon emits t and its canonical variants (see the package comment), if t
// is at least MinLen runes long. The destination side emits the same
// variants of each form it checks, so the two meet.
func (sc *refScanner) canon(t []byte, flags uint16) {
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
func (sc *refScanner) long(b []byte, flags uint16) bool {
	return len(b) >= sc.min && (flags&cUni == 0 || runeLen(b) >= sc.min)
}

// untag returns local@domain for local+tag@domain, or nil. The result is in
// sc.cat, valid until the next call.
func (sc *refScanner) untag(t []byte) []byte {
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
func (sc *refScanner) pairWord(raw []byte, flags uint16) {
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

// numberWord takes the next word of a piece for numbers written in groups
// ("+1 415-555-0199", "(415) 555.0199", "DE89 3704 ..." is an IBAN and the
// word pairs hold it): a number is read by its digits wherever it is sent
// (an SMS or a bank API takes "+14155550199"), so the forms dest.NumberForms
// gives for each run of words of digits and "+()-." are recorded, and a
// destination's digits meet them (dest.Variants). A word with anything
// else, or one that ends a clause ("0199,"), ends the run.
func (sc *refScanner) numberWord(raw []byte, flags uint16) {
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
func (sc *refScanner) flushNumber() {
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
func (sc *refScanner) record(b []byte, depth int) {
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
func (sc *refScanner) unicodeChunk(raw []byte) {
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
func (sc *refScanner) decodeChunk(raw []byte, depth int) {
	pre := sc.pf.fold(raw, false)
	d, changed := decode(sc.dec[depth][:0], pre)
	sc.dec[depth] = d
	if changed {
		sc.record(d, depth+1)
	}
}

// word records the forms of one folded word.
func (sc *refScanner) word(w []byte, flags uint16) {
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
func (sc *refScanner) forms(w []byte, flags uint16) {
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
func (sc *refScanner) apos(p []byte, flags uint16) {
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
func (sc *refScanner) structure(p []byte, depth int, flags uint16) {
	if flags&cSep2 == 0 || len(p) == 0 || depth > maxDepth || indexIn(p, &setSep2) < 0 {
		return
	}
	if i := bytes.Index(p, []byte("://")); i > 0 {
		sc.url(p, i, depth, flags)
		return
	}
	if i := bytes.IndexByte(p, ':'); i >= 0 {
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
func (sc *refScanner) url(p []byte, i, depth int, flags uint16) {
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

// params takes apart a query or fragment: each & separated parameter, and
// the value of each key=value, recursively.
func (sc *refScanner) params(q []byte, depth int, flags uint16) {
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
func (sc *refScanner) plusSpaced(v []byte, flags uint16) {
	sc.plus = append(sc.plus[:0], v...)
	for i, c := range sc.plus {
		if c == '+' {
			sc.plus[i] = ' '
		}
	}
	flags &^= cPlus
	eachField(sc.plus, ' ', func(w []byte) { sc.forms(w, flags) })
}

// path records the segments of a /-separated path and each adjacent pair.
func (sc *refScanner) path(p []byte, flags uint16) {
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

// piece records one piece of text: its tokens, and the piece as a whole when
// it is short enough to be a multi-word destination ("Alice Smith"). A
// long piece the store recorded before is not read again.
func (sc *refScanner) piece(b []byte) {
	sc.record(b, 0)
	if len(b) > maxPhraseBytes || !mayHaveSpace(b) {
		return
	}
	f := trim(collapse(sc.phr.fold(b, true)))
	if bytes.IndexByte(f, ' ') >= 0 {
		if n := runeLen(f); n >= sc.min && n <= maxPhraseRunes {
			sc.emit(f)
		}
	}
}

// json records the strings (values and keys) and numbers of a JSON
// document, each string as its own piece. It does not validate first (that
// would cost a third of the time): it scans strings and the runs between
// them, and if anything is not JSON (an unterminated string, a bad escape, a
// bare word that is not a number or literal) it also records the whole
// document as plain text, so nothing in invalid JSON is lost.
func (sc *refScanner) json(doc []byte) {
	valid := true
	for i := 0; i < len(doc); {
		c := doc[i]
		switch c {
		case '"':
			end, s, ok := (*scanner)(sc).jsonString(doc, i+1)
			if !ok {
				valid = false
			}
			sc.piece(s)
			i = end
		case '{', '}', '[', ']', ',', ':', ' ', '\t', '\n', '\r':
			i++
		default:
			j := i + 1
			for j < len(doc) && !jsonDelim(doc[j]) {
				j++
			}
			run := doc[i:j]
			if !jsonScalar(run) {
				valid = false
			}
			sc.record(run, 0)
			i = j
		}
	}
	if !valid {
		sc.piece(doc)
	}
}

// scanBoth records text (as a piece of plain text, or as a JSON document)
// with the scanner and with the reference, under one key, and returns the
// hashes each made.
func scanBoth(text []byte, asJSON bool, min int) (got, want []uint64, forms []string) {
	seed := newKeyed()
	sc := &scanner{seed: seed, min: min}
	ref := &refScanner{seed: seed, min: min}
	if asJSON {
		sc.json(text)
		ref.json(text)
	} else {
		sc.piece(text)
		ref.piece(text)
	}
	// The forms, to say which were missed (the reference's collect is
	// not used: its emit keeps hashes only).
	rf := &scanner{seed: seed, min: min, collect: &forms}
	if asJSON {
		rf.json(text)
	} else {
		rf.piece(text)
	}
	return sc.hashes, ref.hashes, forms
}

// checkSameHashes fails when the scanner records a different set of hashes
// for text than the reference: a hash missed is a destination never seen
// (a call allowed that should be denied), and one added is a change to
// what is recorded that docs/taint.md would have to describe.
func checkSameHashes(t *testing.T, text []byte, asJSON bool, min int) {
	t.Helper()
	got, want, forms := scanBoth(text, asJSON, min)
	gs := make(map[uint64]bool, len(got))
	for _, h := range got {
		gs[h] = true
	}
	ws := make(map[uint64]bool, len(want))
	for _, h := range want {
		ws[h] = true
		if !gs[h] {
			t.Fatalf("scanner misses a hash the reference records for %q (json %v, min %d)\nthe scanner's forms: %q", text, asJSON, min, forms)
		}
	}
	for _, h := range got {
		if !ws[h] {
			t.Fatalf("scanner records a hash the reference does not for %q (json %v, min %d)\nthe scanner's forms: %q", text, asJSON, min, forms)
		}
	}
}

// referenceSeeds are inputs for the differential test and the fuzz
// target's corpus: every kind of word the fast path may take or must
// leave to the general one.
var referenceSeeds = []string{
	"plain lowercase words and someverylongwordsinarow here",
	"Capitalized Words Like Alice Smith and ALLCAPS WORDS",
	"mail attacker@evil.com, or Bob.Smith+tag@Example.COM.",
	"see https://evil.example/hook?to=a%40b.com&next=https://x.example/y#to=c@d.ef now",
	"<Mallory@Evil.example>, (by @octocat in #general). 'o'brien@x.com'",
	"%26%2364%3B &#64; &commat; &#x40 \\u0040 \\x40 \\u{40} attacker%40evil.com",
	"ａｔｔａｃｋｅｒ＠ｅｖｉｌ．ｃｏｍ att\u200backer@evil.com 请发送到a@b.com。 contact—a@b.com",
	"123 Maine st, Troy, MI 48083 and Amy Lee wrote; main st troy",
	"+1 415-555-0199, (415) 555-0199 or 415.555.0199; 01 42 68 53 00 DE89 3704 0044 0532 0130 00",
	"word. word, word; word: word! word? (word) [word] {word} \"word\" `word` *word* ~word~",
	"github.com/acme/widgets /usr/local/bin key=value&other=thing mailto:a+x@b.com?subject=x Email:a@b.com",
	"tab\tseparated\nlines\r\nand\x00controls\x7fdel",
	"a b c d e f g hh ii jj kk ll mm nn oo pp",
	"short ab Cd EF 12 3x x3 ab-cd ab_cd ab.cd",
	"exactly six sevenn eightttt ninenine tenletters elevenchars twelvecharss thirteenchars",
	"\xff\xfe invalid utf8 \xc3 here",
	"",
	" ",
	"Straße ſ ǅ e\u0301 ﬁle İı",
	"a@b.c 1234567890 12345 +12345 (12) 3-4",
	"Alice). bobbyyy.\" Carolina;' Dee?! elevenchars)), twelvecharss.. Ab. ab: AB. don't",
	"Amy Lee, Main St. Troy; MI 48083. Jonathan, Smithers! maine st.",
}

// TestScanMatchesReference: on the seeds and on generated text, the
// scanner records exactly the hashes the reference does.
func TestScanMatchesReference(t *testing.T) {
	for _, s := range referenceSeeds {
		for _, min := range []int{1, 3, MinLen} {
			checkSameHashes(t, []byte(s), false, min)
		}
	}
	for _, uni := range []bool{false, true} {
		text := newGen(7, uni).fill(nil, 64<<10)
		checkSameHashes(t, text, false, MinLen)
		checkSameHashes(t, text, false, 2)
	}
	doc := []byte(`{"content":[{"type":"text","text":"Reply to <Mallory@Evil.example>, see https://evil.example/hook?to=a%40b.com"}],"id":4155550199,"x":"Alice Smith","n":[1e5,true,null]}`)
	checkSameHashes(t, doc, true, MinLen)
	checkSameHashes(t, []byte(`{"unterminated": "a@b.com`), true, MinLen)
}

// FuzzScanMatchesReference: on any input, as text or as a JSON document,
// the scanner records exactly the hashes the reference does.
func FuzzScanMatchesReference(f *testing.F) {
	for _, s := range referenceSeeds {
		f.Add(s, false, uint8(0))
		f.Add(s, true, uint8(2))
	}
	f.Add(`{"a":"b@c.de","k":[1,2,"Amy Lee"]}`, true, uint8(0))
	f.Fuzz(func(t *testing.T, text string, asJSON bool, min uint8) {
		m := MinLen
		if min%4 != 0 {
			m = 1 + int(min%7)
		}
		checkSameHashes(t, []byte(text), asJSON, m)
	})
}
