package taint

import (
	"encoding/binary"
	"hash/maphash"
	"math/bits"
)

// keyed is the token hash: 64 bits, keyed by a random per-store seed so the
// hashes of one store say nothing about another's and cannot be aimed at
// offline. Tokens of up to 16 bytes (most of them) use an inline
// multiply-mix in the style of wyhash; longer ones use hash/maphash. Both
// mix in the length, so the two never meet on purpose. A collision can only
// make a destination look seen.
type keyed struct {
	k0, k1 uint64
	seed   maphash.Seed
}

func newKeyed() keyed {
	s := maphash.MakeSeed()
	return keyed{k0: maphash.Bytes(s, []byte("k0")) | 1, k1: maphash.Bytes(s, []byte("k1")), seed: s}
}

const (
	wyp0 = 0xa0761d6478bd642f
	wyp1 = 0xe7037ed1a0b428db
)

func wymix(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return hi ^ lo
}

func (k *keyed) sum(b []byte) uint64 {
	n := len(b)
	var a, c uint64
	switch {
	case n > 16:
		return maphash.Bytes(k.seed, b)
	case n >= 8:
		a = binary.LittleEndian.Uint64(b)
		c = binary.LittleEndian.Uint64(b[n-8:])
	case n >= 4:
		a = uint64(binary.LittleEndian.Uint32(b))
		c = uint64(binary.LittleEndian.Uint32(b[n-4:]))
	case n > 0:
		a = uint64(b[0])<<16 | uint64(b[n>>1])<<8 | uint64(b[n-1])
	}
	return wymix(a^k.k0^wyp0, c^k.k1^wyp1^uint64(n)<<56) ^ uint64(n)
}
