package taint

import "math/bits"

// The store keeps 64-bit hashes of tokens in one of two forms. While it is
// small it is an exact open-addressing set: a lookup is wrong only when two
// different tokens share a 64-bit hash (about n/2^64 per lookup). Once the set
// would outgrow exactSlotsMax it is replaced, for good, by a split-block Bloom
// filter of fixed size, so memory stays bounded whatever the output volume.
// Both forms only ever err towards "seen": a recorded hash is always found.
const (
	// exactSlotsMin is the first table size: 8 KiB, so an idle store costs
	// next to nothing.
	exactSlotsMin = 1 << 10
	// exactSlotsMax is the largest exact table (8 MiB, up to 512Ki tokens
	// at load 1/2). Growing past it switches to the Bloom filter.
	exactSlotsMax = 1 << 20
	// bloomBytes is the size of the Bloom filter (48 MiB). While the filter
	// is built the exact table still exists, so the peak is 56 MiB, under
	// the 64 MiB budget.
	bloomBytes = 48 << 20
	// bloomBlocks is the number of 256-bit blocks of the filter.
	bloomBlocks = bloomBytes / 32
)

// hashSet is the exact form: linear probing over a power-of-two table. Zero
// marks an empty slot, so a zero hash is stored as 1 (see fixHash).
type hashSet struct {
	slots []uint64
	n     int
	max   int // exactSlotsMax; smaller in tests, to reach the switch quickly
}

func newHashSet() *hashSet {
	return &hashSet{slots: make([]uint64, exactSlotsMin), max: exactSlotsMax}
}

// fixHash keeps zero free as the empty-slot marker.
func fixHash(h uint64) uint64 {
	if h == 0 {
		return 1
	}
	return h
}

func (s *hashSet) has(h uint64) bool {
	mask := uint64(len(s.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		v := s.slots[i]
		if v == h {
			return true
		}
		if v == 0 {
			return false
		}
	}
}

// add inserts h. It reports whether h was new, and ok false when the
// table is full enough that it should grow and cannot (it is at
// exactSlotsMax): the caller then switches to the Bloom filter. h is
// inserted either way.
func (s *hashSet) add(h uint64) (isNew, ok bool) {
	mask := uint64(len(s.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		v := s.slots[i]
		if v == h {
			return false, true
		}
		if v == 0 {
			s.slots[i] = h
			s.n++
			break
		}
	}
	if 2*s.n <= len(s.slots) {
		return true, true
	}
	if len(s.slots) >= s.max {
		return true, false
	}
	s.grow()
	return true, true
}

// grow makes the table four times larger, up to max. Each step writes
// every hash again into new memory (page faults, cache misses): on new
// text that cost more than the inserts themselves, and four-fold steps
// take half as many of them as doubling. The table is at least 1/8 full
// after a step.
func (s *hashSet) grow() {
	old := s.slots
	s.slots = make([]uint64, min(4*len(old), s.max))
	mask := uint64(len(s.slots) - 1)
	for _, h := range old {
		if h == 0 {
			continue
		}
		i := h & mask
		for s.slots[i] != 0 {
			i = (i + 1) & mask
		}
		s.slots[i] = h
	}
}

// bloom is a split-block Bloom filter (the layout Parquet and Impala use):
// each hash picks one 256-bit block (one half cache line) and sets one bit in
// each of its eight 32-bit words, so an insert or a lookup touches one cache
// line whatever the filter size.
type bloom struct {
	words []uint32
}

var bloomSalt = [8]uint32{
	0x47b6137b, 0x44974d91, 0x8824ad5b, 0xa2b7289d,
	0x705495c7, 0x2df1424b, 0x9efc4947, 0x5c6bfb31,
}

func newBloom() *bloom { return &bloom{words: make([]uint32, bloomBlocks*8)} }

// block picks the block from the high bits (multiply-shift range reduction)
// and leaves the low 32 bits for the bit positions inside it.
func (b *bloom) block(h uint64) []uint32 {
	hi, _ := bits.Mul64(h, uint64(len(b.words)/8))
	i := int(hi) * 8
	return b.words[i : i+8 : i+8]
}

func (b *bloom) add(h uint64) {
	blk := b.block(h)
	x := uint32(h)
	for i := range 8 {
		blk[i] |= 1 << ((x * bloomSalt[i]) >> 27)
	}
}

func (b *bloom) has(h uint64) bool {
	blk := b.block(h)
	x := uint32(h)
	for i := range 8 {
		if blk[i]&(1<<((x*bloomSalt[i])>>27)) == 0 {
			return false
		}
	}
	return true
}
