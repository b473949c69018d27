// Package taint remembers what untrusted tool output said and answers one
// question: did this destination appear in it?
//
// Text is folded (case, whitespace, full-width and other compatibility
// forms, zero-width characters) and decoded (percent-encoding, HTML
// entities, JSON string escapes) before it is cut into tokens; a destination
// is seen when it, folded the same way, is one whole token. The store keeps
// hashes of tokens, not the text, so its memory stays bounded for very large
// outputs. A hash collision can only make a destination look seen (the call
// is denied: fail closed); a recorded destination is never reported unseen.
//
// What counts as a token, and which forms of it are recorded, is described
// in tokens.go and dest.go, and for users in docs/taint.md; the memory and
// speed figures are in docs/performance.md.
package taint

import (
	"bytes"
	"crypto/cipher"
	"sync"
	"unsafe"
)

// MinLen is the shortest folded destination that can be tainted: shorter
// ones are too likely to occur by chance, so they are never reported seen and
// go to a human instead.
const MinLen = 6

// maxPhrase bounds the pieces of text that are also recorded whole, as one
// multi-word token (a display name in a JSON field, a one-line message):
// longer ones are prose, not a destination.
const (
	maxPhraseBytes = 512
	maxPhraseRunes = 128
)

// Store records untrusted output. It is safe for concurrent use, so the
// proxies of one client may share one store.
type Store struct {
	seed keyed

	mu    sync.RWMutex
	set   *hashSet // exact form, until it would outgrow exactSlotsMax
	bf    *bloom   // bounded form, afterwards
	added uint64   // hashes inserted, duplicates included (for Stats)
	sink  uint64   // keeps touch's loads from being optimized away

	// min, when not 0, replaces MinLen (see SetMinLen).
	min int

	// onRecord, if set, receives the hashes of each Record or RecordJSON
	// once they are in the store (package session writes them where the
	// client's other proxies read them): those that were new to it.
	onRecord func([]uint64)

	// rec is held while this store's own record inserts hashes and hands
	// the new ones to onRecord, so that a record that finds a hash already
	// in the store (and so does not hand it on) finds it handed on already.
	// The digests of the long pieces and documents recorded so far
	// (recordedText) are guarded by it too.
	rec    sync.Mutex
	pieces map[digest]struct{}
	dkey   cipher.AEAD
}

// Stats describes a store's memory, for benchmarks and diagnostics.
type Stats struct {
	// Hashes is how many token hashes were inserted, duplicates included.
	Hashes uint64
	// Bytes is the memory held by the hash set or the Bloom filter.
	Bytes int
	// Bloom reports whether the store switched to its Bloom filter.
	Bloom bool
}

// Stats returns the store's current figures.
func (s *Store) Stats() Stats {
	s.mu.RLock()
	defer s.mu.RUnlock()
	st := Stats{Hashes: s.added, Bloom: s.bf != nil}
	if s.bf != nil {
		st.Bytes = len(s.bf.words) * 4
	} else {
		st.Bytes = len(s.set.slots) * 8
	}
	return st
}

// NewStore returns an empty store with a random hash key.
func NewStore() *Store {
	return newStore(newKeyed())
}

// NewStoreWithKey returns an empty store whose token hashes are keyed by
// key: stores with the same key hash alike, so AddHashes can take what
// another recorded. Keep the key as secret as the output itself.
func NewStoreWithKey(key [KeySize]byte) *Store {
	return newStore(keyedFrom(key))
}

func newStore(seed keyed) *Store {
	return &Store{seed: seed, set: newHashSet(), dkey: newDigester()}
}

// SetMinLen sets the shortest form, in runes, that the store records and
// looks up, in place of MinLen. Only a store that vouches may go lower: a
// short word the user typed ("Bob") is theirs, while a short word of
// untrusted output occurs by chance too often to deny on. Set it before
// the store is used.
func (s *Store) SetMinLen(n int) {
	if n < 1 {
		n = 1
	}
	s.min = n
}

func (s *Store) minLen() int {
	if s.min == 0 {
		return MinLen
	}
	return s.min
}

// OnRecord sets a function that receives the token hashes of every later
// Record and RecordJSON, after they are in the store. It must not keep the
// slice. Set it before the store is shared.
func (s *Store) OnRecord(fn func(hashes []uint64)) { s.onRecord = fn }

// AddHashes inserts token hashes that a store with the same key recorded
// (see OnRecord), as if this store had recorded the text itself.
func (s *Store) AddHashes(hs []uint64) {
	if len(hs) > 0 {
		s.insert(hs, false)
	}
}

var scanners = sync.Pool{New: func() any { return new(scanner) }}

// maxPooled keeps a scanner that once handled a huge token from pinning its
// buffers in the pool.
const maxPooled = 1 << 20

func (s *Store) scanner(record bool) *scanner {
	sc := scanners.Get().(*scanner)
	sc.seed = s.seed
	sc.min = s.minLen()
	sc.store = nil
	if record {
		sc.store = s
	}
	sc.hashes = sc.hashes[:0]
	sc.all = sc.all[:0]
	sc.texts = sc.texts[:0]
	sc.collect = nil
	return sc
}

func putScanner(sc *scanner) {
	for _, b := range [...][]byte{sc.lower, sc.f.a, sc.f.b, sc.pf.a, sc.pf.b, sc.phr.a, sc.phr.b,
		sc.dec[0], sc.dec[1], sc.dec[2], sc.cat, sc.jbuf, sc.plus, sc.pair} {
		if cap(b) > maxPooled {
			return
		}
	}
	sc.store = nil
	sc.collect = nil
	sc.prev = nil // a slice of the text last recorded
	scanners.Put(sc)
}

// insert adds hashes under the write lock, switching to the Bloom filter
// when the exact set is full. With fresh, it moves the hashes that were
// new to the store to the front of hs and returns them: while the store
// is an exact set, a hash it holds already is one that some store with its
// key recorded and handed on. Once it is a Bloom filter it can't tell (a
// hash may only look present), so every hash counts as new.
func (s *Store) insert(hs []uint64, fresh bool) []uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.added += uint64(len(hs))
	s.touch(hs)
	n := 0
	for _, h := range hs {
		if s.bf != nil {
			s.bf.add(h)
			if fresh {
				hs[n] = h
				n++
			}
			continue
		}
		isNew, ok := s.set.add(h)
		if isNew && fresh {
			hs[n] = h
			n++
		}
		if !ok {
			bf := newBloom()
			for _, v := range s.set.slots {
				if v != 0 {
					bf.add(v)
				}
			}
			s.bf, s.set = bf, nil
		}
	}
	return hs[:n]
}

// touch loads the slot or block of every hash before any is written. The
// loads are independent, so the processor overlaps their cache misses, and
// the inserts that follow find the lines in cache: Go has no prefetch
// instruction, and this does its job.
func (s *Store) touch(hs []uint64) {
	var sum uint64
	if s.bf != nil {
		for _, h := range hs {
			sum += uint64(s.bf.block(h)[0])
		}
	} else {
		slots := s.set.slots
		mask := uint64(len(slots) - 1)
		for _, h := range hs {
			sum += slots[h&mask]
		}
	}
	s.sink = sum
}

func (s *Store) has(h uint64) bool {
	if s.bf != nil {
		return s.bf.has(h)
	}
	return s.set.has(h)
}

// bytesOf views a string as bytes without copying; the tokenizer only reads.
func bytesOf(s string) []byte {
	return unsafe.Slice(unsafe.StringData(s), len(s))
}

// Record adds one piece of untrusted text. Text the store recorded whole
// before (see recordedText) is not read again.
func (s *Store) Record(text string) {
	b := bytesOf(text)
	sc := s.scanner(true)
	sc.piece(b)
	s.flush(sc)
}

// RecordJSON adds every string value and every object key in a JSON document
// (a tool result, a resource, an error), each as its own piece of text.
// Numbers are recorded too, since a phone number or chat id can be a
// destination. Invalid JSON is recorded as plain text. A document the
// store recorded before, or a long string in it, is not read again (see
// recordedText).
func (s *Store) RecordJSON(doc []byte) {
	sc := s.scanner(true)
	if d, ok := sc.digest(doc, domainJSON); !ok || !s.recordedText(d) {
		sc.json(doc)
		if ok {
			sc.texts = append(sc.texts, d)
		}
	}
	s.flush(sc)
}

func (s *Store) flush(sc *scanner) {
	if len(sc.hashes) > 0 || len(sc.texts) > 0 {
		s.recorded(sc.hashes, sc.texts)
	}
	putScanner(sc)
}

// recorded inserts hashes this store's own Record produced, and hands the
// new ones to the OnRecord function; then it notes the texts whose every
// hash is now recorded (see recordedText).
func (s *Store) recorded(hs []uint64, texts []digest) {
	s.rec.Lock()
	defer s.rec.Unlock()
	if len(hs) > 0 {
		if fresh := s.insert(hs, true); len(fresh) > 0 && s.onRecord != nil {
			s.onRecord(fresh)
		}
	}
	if len(texts) > 0 {
		if s.pieces == nil || len(s.pieces)+len(texts) > maxTexts {
			s.pieces = make(map[digest]struct{}, len(texts))
		}
		for _, d := range texts {
			s.pieces[d] = struct{}{}
		}
	}
}

// piece records one piece of text: its tokens, and the piece as a whole when
// it is short enough to be a multi-word destination ("Alice Smith"). A
// long piece the store recorded before is not read again.
func (sc *scanner) piece(b []byte) {
	if d, ok := sc.digest(b, domainText); ok {
		if sc.store.recordedText(d) {
			return
		}
		sc.texts = append(sc.texts, d)
	}
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

// mayHaveSpace reports whether b may fold to more than one word: it has
// ASCII whitespace or control bytes, or non-ASCII runes (which may be or
// fold to spaces).
func mayHaveSpace(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 || asciiClass[c]&cSpace != 0 {
			return true
		}
	}
	return false
}

// Seen reports whether dest, folded, appeared as a whole token in recorded
// output. It also checks the forms a destination hides behind: an address in
// a URL's query, without a trailing dot, or without a +tag, a percent- or
// entity-encoded form, and each destination of a list ("a@x.com, b@y.com").
// A folded dest shorter than MinLen is never seen.
func (s *Store) Seen(dest string) bool {
	sc := s.scanner(false)
	defer putScanner(sc)
	if !sc.destHashes([]byte(dest)) {
		return false
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.hasAny(sc.hashes, sc.all)
}

// hasAny reports whether s holds any of hashes, or every one of all (the
// pairs of a run of short words), under s.mu.
func (s *Store) hasAny(hashes, all []uint64) bool {
	for _, h := range hashes {
		if s.has(h) {
			return true
		}
	}
	if len(all) == 0 {
		return false
	}
	for _, h := range all {
		if !s.has(h) {
			return false
		}
	}
	return true
}

// Match is Seen that also says which form of dest was found (for a verdict's
// reason: "https://x.example/?to=a%40evil.com" is tainted through
// "a@evil.com"). It allocates; use Seen on the hot path.
func (s *Store) Match(dest string) (form string, ok bool) {
	var forms []string
	sc := s.scanner(false)
	defer putScanner(sc)
	sc.collect = &forms
	if !sc.destHashes([]byte(dest)) {
		return "", false
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	for i, h := range sc.hashes {
		if s.has(h) {
			return forms[i], true
		}
	}
	if s.hasAny(nil, sc.all) {
		return dest, true
	}
	return "", false
}

// Tokens returns the forms Record would keep for text, in order, without
// duplicates. It is for tests and for explaining a verdict; the store itself
// keeps only hashes.
func Tokens(text string) []string {
	var out []string
	sc := &scanner{seed: newKeyed(), collect: &out, min: MinLen}
	sc.piece([]byte(text))
	return dedupe(out)
}

// DestForms returns the forms Seen looks up for dest, in order, without
// duplicates (nil when dest is shorter than MinLen).
func DestForms(dest string) []string {
	var out []string
	sc := &scanner{seed: newKeyed(), collect: &out, min: MinLen}
	sc.destHashes([]byte(dest))
	return dedupe(out)
}

func dedupe(in []string) []string {
	seen := make(map[string]bool, len(in))
	out := in[:0]
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// Probe is a destination's lookup hashes under one store's key, so that
// several stores sharing that key (one per server of a client session) can
// be asked without folding and hashing the destination again.
type Probe struct {
	hashes []uint64
	all    []uint64 // the pairs of a run of short words, all of which must be seen
}

// Probe computes dest's lookup hashes under s's key. A destination shorter
// than MinLen gives an empty Probe, which no store has.
func (s *Store) Probe(dest string) Probe {
	sc := s.scanner(false)
	defer putScanner(sc)
	if !sc.destHashes([]byte(dest)) {
		return Probe{}
	}
	return Probe{hashes: append([]uint64(nil), sc.hashes...), all: append([]uint64(nil), sc.all...)}
}

// Has reports whether s recorded any form of the probed destination. The
// Probe must come from a store with the same key.
func (s *Store) Has(p Probe) bool {
	if len(p.hashes) == 0 && len(p.all) == 0 {
		return false
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.hasAny(p.hashes, p.all)
}
