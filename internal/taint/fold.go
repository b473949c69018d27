package taint

import (
	"sync"
	"sync/atomic"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Classes of ASCII bytes, as seen by the folder and the tokenizer. A word
// whose bytes carry none of the "special" classes (and no edge punctuation)
// is recorded with one hash and no further work: that is the fast path.
const (
	cSpace = 1 << iota // whitespace and control: ends a word
	cUpper             // A-Z: needs lowercasing
	cEsc               // % & \: the word may hold an encoded form
	cSep1              // brackets, quotes, list punctuation: split the word
	cApos              // ': split too, but only after the cSep1 split
	cSep2              // : / ? & = #: URL, path and query structure
	cAt                // @: address, or a handle
	cPlus              // +: maybe a +tag
	cUni               // a non-ASCII rune (not in the table; set by code)
	cDigit             // 0-9: a word of a run of short words that may name an address (pairWord)
)

const cSpecial = cEsc | cSep1 | cApos | cSep2 | cAt | cPlus | cUni

var (
	asciiClass [256]uint16
	asciiLower [256]byte
	// leadEdge and trailEdge are what trim strips from the two ends of a
	// token: brackets and quotes around it, and sentence punctuation after
	// it (or stuck before it, as in "...attacker@evil.com").
	leadEdge  [256]bool
	trailEdge [256]bool
)

// Byte sets for the structure of URLs and queries (bytes.IndexAny builds
// such a set on every call).
var setSep2, setQuery, setAuthEnd, setQF, setParam = byteSet(":/?&=#"), byteSet("?&=#"), byteSet("/?#"), byteSet("?#"), byteSet("&#")

func byteSet(chars string) (t [256]bool) {
	for i := 0; i < len(chars); i++ {
		t[chars[i]] = true
	}
	return t
}

// indexIn returns the index of the first byte of b in set, or -1.
func indexIn(b []byte, set *[256]bool) int {
	for i, c := range b {
		if set[c] {
			return i
		}
	}
	return -1
}

func init() {
	for c := range 256 {
		asciiLower[c] = byte(c)
		if c <= ' ' || c == 0x7f {
			asciiClass[c] |= cSpace
		}
		if c >= 0x80 {
			asciiClass[c] |= cUni
		}
	}
	for c := '0'; c <= '9'; c++ {
		asciiClass[c] |= cDigit
	}
	for c := 'A'; c <= 'Z'; c++ {
		asciiClass[c] |= cUpper
		asciiLower[c] = byte(c) + 'a' - 'A'
	}
	set := func(chars string, class uint16) {
		for i := 0; i < len(chars); i++ {
			asciiClass[chars[i]] |= class
		}
	}
	set(`%&\`, cEsc)
	set("<>()[]{}\"|,;*`\\", cSep1)
	set(`'`, cApos)
	set(`:/?&=#`, cSep2)
	set(`@`, cAt)
	set(`+`, cPlus)
	for _, c := range []byte("([{<\"'`*~.,;:!?") {
		leadEdge[c] = true
	}
	for _, c := range []byte(".,;:!?)]}>\"'`*~") {
		trailEdge[c] = true
	}
}

// ignorable reports the characters that render as nothing (zero-width
// spaces and joiners, soft hyphen, bidi controls, variation selectors, tags):
// Unicode's Default_Ignorable_Code_Point set. They are dropped on both sides,
// so "att\u200backer" is "attacker".
func ignorable(r rune) bool {
	switch {
	case r < 0xad:
		return false
	case r == 0xad, r == 0x34f, r == 0x61c, r == 0x115f, r == 0x1160,
		r == 0x17b4, r == 0x17b5, r >= 0x180b && r <= 0x180f,
		r >= 0x200b && r <= 0x200f, r >= 0x202a && r <= 0x202e,
		r >= 0x2060 && r <= 0x206f, r == 0x3164, r >= 0xfe00 && r <= 0xfe0f,
		r == 0xfeff, r == 0xffa0, r >= 0xfff0 && r <= 0xfff8,
		r >= 0x1bca0 && r <= 0x1bca3, r >= 0x1d173 && r <= 0x1d17a,
		r >= 0xe0000 && r <= 0xe0fff:
		return true
	}
	return false
}

// isSpace is Unicode whitespace plus every control character (the reference
// tool also counted U+001C..U+001F as whitespace): all of them end a token.
func isSpace(r rune) bool {
	switch {
	case r < 0x80:
		return asciiClass[r]&cSpace != 0
	case r <= 0xa0:
		return r <= 0x9f || r == 0xa0 // C1 controls (U+0085 among them), NBSP
	case r < 0x1680:
		return false
	}
	// The rest of unicode.IsSpace (White_Space), spelled out: this runs for
	// every non-ASCII rune.
	return r == 0x1680 || r >= 0x2000 && r <= 0x200a || r == 0x2028 || r == 0x2029 ||
		r == 0x202f || r == 0x205f || r == 0x3000
}

// decodeRune is utf8.DecodeRune with the two-byte case (Latin, Greek,
// Cyrillic, ...) inline.
func decodeRune(b []byte) (rune, int) {
	if len(b) >= 2 && b[0] >= 0xc2 && b[0] < 0xe0 && b[1]&0xc0 == 0x80 {
		return rune(b[0]&0x1f)<<6 | rune(b[1]&0x3f), 2
	}
	return utf8.DecodeRune(b)
}

// isSep1Rune reports non-ASCII runes a reader takes as the edge of a
// destination: punctuation and symbols (typographic quotes, dashes, arrows,
// emoji, CJK punctuation), and letters of scripts written without spaces,
// so "请发送到attacker@evil.com。" yields attacker@evil.com.
func isSep1Rune(r rune) bool {
	if r < 0x10000 {
		t := bmp()
		return t.sep1[r>>6]&(1<<(r&63)) != 0
	}
	return isSep1Slow(r)
}

func isSep1Slow(r rune) bool {
	if isApos(r) {
		return false
	}
	return unicode.IsPunct(r) || unicode.IsSymbol(r) ||
		unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul,
			unicode.Thai, unicode.Lao, unicode.Khmer, unicode.Myanmar)
}

// isApos reports apostrophes, which appear inside real addresses
// (o'brien@example.com): a word is split at them only as a second step.
func isApos(r rune) bool {
	return r == '\'' || r == 0x2018 || r == 0x2019 || r == 0x2bc
}

// caseFold is simple case folding: lower(upper(r)) also folds the odd forms
// that have no lower-case mapping of their own (long s, final sigma, ...).
func caseFold(r rune) rune {
	if r < 0x80 {
		return rune(asciiLower[r])
	}
	if r < foldTableLen {
		return rune(bmp().fold[r])
	}
	if r >= 0x3000 && r < 0xa640 {
		return r // CJK, kana, Hangul syllables...: no case
	}
	return caseFoldSlow(r)
}

func caseFoldSlow(r rune) rune { return unicode.ToLower(unicode.ToUpper(r)) }

// foldTableLen covers the alphabets with case (Latin, Greek, Cyrillic,
// Armenian, Georgian, ...) with a direct table.
const foldTableLen = 0x3000

// bmpTables are lookup tables for the Basic Multilingual Plane, built on
// first use (40 KiB) so that ASCII-only sessions never pay for them.
type bmpTables struct {
	sep1 [0x10000 / 64]uint64
	// stable marks runes that need no NFKC work in any context: already
	// normal, a starter (combining class 0), and never combining with what
	// precedes them. A string of such runes (and ASCII) is NFKC-normal.
	stable [0x10000 / 64]uint64
	fold   [foldTableLen]uint16
}

var (
	bmpOnce sync.Once
	bmpTab  atomic.Pointer[bmpTables]
)

func bmp() *bmpTables {
	if t := bmpTab.Load(); t != nil {
		return t
	}
	return buildBMP()
}

func buildBMP() *bmpTables {
	bmpOnce.Do(func() {
		t := new(bmpTables)
		for _, tab := range []*unicode.RangeTable{unicode.P, unicode.S, unicode.Han, unicode.Hiragana,
			unicode.Katakana, unicode.Hangul, unicode.Thai, unicode.Lao, unicode.Khmer, unicode.Myanmar} {
			for _, rg := range tab.R16 {
				for r := rune(rg.Lo); r <= rune(rg.Hi); r += rune(rg.Stride) {
					if r >= 0x80 && !isApos(r) {
						t.sep1[r>>6] |= 1 << (r & 63)
					}
				}
			}
		}
		var buf [utf8.UTFMax]byte
		for r := rune(0x80); r < 0x10000; r++ {
			if r >= 0xd800 && r <= 0xdfff {
				continue
			}
			b := buf[:utf8.EncodeRune(buf[:], r)]
			p := norm.NFKC.Properties(b)
			if p.CCC() == 0 && p.BoundaryBefore() && norm.NFKC.IsNormal(b) {
				t.stable[r>>6] |= 1 << (r & 63)
			}
		}
		for r := range rune(foldTableLen) {
			f := caseFoldSlow(r)
			if f >= 0x10000 {
				panic("taint: case fold leaves the BMP") // checked by TestTables
			}
			t.fold[r] = uint16(f)
		}
		bmpTab.Store(t)
	})
	return bmpTab.Load()
}

// nfkcStable reports a rune that needs no NFKC work (see bmpTables).
func nfkcStable(r rune) bool {
	return r < 0x10000 && bmp().stable[r>>6]&(1<<(r&63)) != 0
}

// folder holds scratch buffers for folding, reused between calls.
type folder struct {
	a, b []byte
}

// prepass drops ignorable runes, maps whitespace and controls to ' ', and
// replaces invalid UTF-8 by U+FFFD. When lower is set it also case-folds.
// uni reports a non-ASCII rune in the output that may not be NFKC-normal;
// stable reports that a second prepass would change nothing.
func prepass(dst, src []byte, lower bool) (out []byte, uni, stable bool) {
	stable = true
	for i := 0; i < len(src); {
		c := src[i]
		if c < utf8.RuneSelf {
			switch {
			case asciiClass[c]&cSpace != 0:
				dst = append(dst, ' ')
			case lower:
				dst = append(dst, asciiLower[c])
			default:
				dst = append(dst, c)
			}
			i++
			continue
		}
		r, n := decodeRune(src[i:])
		i += n
		switch {
		case ignorable(r):
			continue
		case isSpace(r):
			dst = append(dst, ' ')
			continue
		case lower:
			if f := caseFold(r); f != r {
				r = f
				if caseFold(f) != f {
					stable = false
				}
			}
		}
		if !nfkcStable(r) {
			uni = true
		}
		dst = utf8.AppendRune(dst, r)
	}
	return dst, uni, stable
}

// fold folds src: ignorable runes dropped, whitespace and controls mapped to
// ' ', NFKC compatibility forms (full-width letters, ligatures, ...), and
// case-folded when lower is set. Whitespace is not collapsed. It repeats
// until the result is stable, so folding twice changes nothing. The result
// aliases f's buffers and is valid until the next call.
func (f *folder) fold(src []byte, lower bool) []byte {
	out, uni, stable := prepass(f.a[:0], src, lower)
	f.a = out
	if !uni && stable {
		return out
	}
	for range 4 {
		if stable && norm.NFKC.IsNormal(out) {
			return out
		}
		f.b = norm.NFKC.Append(f.b[:0], out...)
		out, _, stable = prepass(f.a[:0], f.b, lower)
		f.a = out
	}
	return out
}

// collapse trims spaces and collapses runs of them to one, in place.
func collapse(b []byte) []byte {
	out := b[:0]
	space := false
	for _, c := range b {
		if c == ' ' {
			space = true
			continue
		}
		if space && len(out) > 0 {
			out = append(out, ' ')
		}
		space = false
		out = append(out, c)
	}
	return out
}

// Fold applies the folding used on both sides of a match: Unicode
// compatibility forms (full-width), case, removal of zero-width characters,
// and whitespace collapsed to single spaces and trimmed.
func Fold(s string) string {
	var f folder
	return string(collapse(f.fold([]byte(s), true)))
}

// runeLen counts runes (bytes that do not continue a UTF-8 sequence); the
// input is valid UTF-8, as folding makes it.
func runeLen(b []byte) int {
	n := 0
	for _, c := range b {
		if c&0xc0 != 0x80 {
			n++
		}
	}
	return n
}
