package taint

import "bytes"

// The destination side. A destination is folded exactly like output, then
// reduced to the forms the record side also keeps (see canon): itself
// trimmed of brackets, quotes and sentence punctuation, without +tag, @ or #,
// or trailing slashes. On top of that it is taken apart only where a part is
// itself a destination the call reaches: each entry of a list, the address
// in <...>, what follows mailto: (or any short "scheme:" or "label:"), a
// URL without its query and fragment (with and without scheme), and every
// value in a URL's query or fragment. It is NOT cut at '/' or into host and
// path: https://github.com/me/x is not seen because github.com was.

// destHashes queues the hashes of every form of dest to look up, for dest
// as given and for each decoding of it (up to maxDecode). It reports false
// when the folded dest is shorter than MinLen.
func (sc *scanner) destHashes(dest []byte) bool {
	cur := dest
	for level := 0; level <= maxDecode; level++ {
		f := trimSpace(collapse(sc.f.fold(cur, true)))
		if level == 0 && runeLen(f) < sc.min {
			return false
		}
		sc.destForms(f)
		if level == maxDecode {
			break
		}
		pre := sc.pf.fold(cur, false)
		d, changed := decode(sc.dec[level][:0], pre)
		sc.dec[level] = d
		if !changed {
			break
		}
		cur = d
	}
	return true
}

// allFlags makes canon try every variant: a destination is short, so its
// classes are not worth computing.
const allFlags = 0xffff

func trimSpace(b []byte) []byte { return bytes.Trim(b, " ") }

func (sc *scanner) destForms(f []byte) {
	t := trim(f)
	sc.canon(t, allFlags)
	if bytes.IndexByte(t, ' ') < 0 {
		sc.destWord(t, 0)
		return
	}
	eachField(t, ' ', func(w []byte) { sc.destWord(w, 0) })
	sc.destPairs(t)
}

// destPairs queues, in sc.all, the pairs of adjacent words of a
// destination whose words are all shorter than MinLen (see pairWord): it is
// seen when every pair is. A destination with a long word is seen through
// that word already.
func (sc *scanner) destPairs(t []byte) {
	if len(sc.all) > 0 {
		return // the first decoding level's pairs are the destination's
	}
	var prev []byte
	short := true
	eachField(t, ' ', func(w []byte) {
		w = trim(w)
		switch {
		case len(w) == 0:
			return
		case runeLen(w) >= sc.min:
			short = false
		case prev != nil:
			sc.pair = append(append(append(sc.pair[:0], prev...), ' '), w...)
			sc.all = append(sc.all, fixHash(sc.seed.sum(sc.pair)))
		}
		prev = w
	})
	if !short {
		sc.all = sc.all[:0]
	}
}

func (sc *scanner) destWord(w []byte, depth int) {
	if depth > maxDepth {
		return
	}
	t := trim(w)
	if len(t) == 0 {
		return
	}
	sc.canon(t, allFlags)
	if hasSep1(t) {
		splitFunc(t, isSep1At, func(p []byte) { sc.destWord(p, depth+1) })
		return
	}
	sc.destStructure(t, depth)
}

func (sc *scanner) destStructure(t []byte, depth int) {
	if i := bytes.Index(t, []byte("://")); i > 0 {
		rest := t[i+3:]
		q := indexIn(rest, &setQF)
		base := rest
		if q >= 0 {
			base = rest[:q]
			sc.canon(trim(t[:i+3+q]), allFlags)
		}
		sc.canon(trim(base), allFlags)
		if q >= 0 {
			sc.destParams(rest[q+1:], depth)
		}
		return
	}
	if i := labelEnd(t); i > 0 {
		sc.destWord(t[i+1:], depth+1)
		return
	}
	if q := indexIn(t, &setQF); q > 0 {
		sc.canon(trim(t[:q]), allFlags)
		sc.destParams(t[q+1:], depth)
	}
}

// labelEnd returns the index of the ':' ending a short scheme or label
// (mailto:, tel:, to:, email:), or -1.
func labelEnd(t []byte) int {
	for i := 0; i < len(t) && i <= 20; i++ {
		c := t[i]
		switch {
		case c == ':':
			if i == 0 {
				return -1
			}
			return i
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '+', c == '.', c == '-', c == '_':
		default:
			return -1
		}
	}
	return -1
}

func (sc *scanner) destParams(q []byte, depth int) {
	for len(q) > 0 {
		j := indexIn(q, &setParam)
		param := q
		if j >= 0 {
			param, q = q[:j], q[j+1:]
		} else {
			q = nil
		}
		if e := bytes.IndexByte(param, '='); e >= 0 {
			param = param[e+1:]
		}
		sc.destWord(param, depth+1)
	}
}
