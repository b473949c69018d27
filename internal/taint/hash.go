package taint

import (
	"crypto/rand"
	"encoding/binary"
	"math/bits"
)

// KeySize is the length of a store's hash key (see NewStoreWithKey).
const KeySize = 32

// keyed is the token hash: 64 bits, keyed by a secret so the hashes of one
// store say nothing about another's and cannot be aimed at offline. Stores
// that share a key (the proxies of one client session, see package
// session) compute the same hash for the same token, so one can take the
// other's hashes. Tokens of up to 16 bytes (most of them) use one
// multiply-mix in the style of wyhash; longer ones are hashed 16 bytes at a
// time the same way. Both mix in the length. A collision can only make a
// destination look seen.
type keyed struct {
	k0, k1, k2 uint64
}

func newKeyed() keyed {
	var key [KeySize]byte
	if _, err := rand.Read(key[:]); err != nil {
		panic("taint: no randomness for the hash key: " + err.Error()) // crypto/rand does not fail on supported systems
	}
	return keyedFrom(key)
}

func keyedFrom(key [KeySize]byte) keyed {
	return keyed{
		k0: binary.LittleEndian.Uint64(key[0:]) | 1,
		k1: binary.LittleEndian.Uint64(key[8:]),
		k2: binary.LittleEndian.Uint64(key[16:]) ^ binary.LittleEndian.Uint64(key[24:]),
	}
}

const (
	wyp0 = 0xa0761d6478bd642f
	wyp1 = 0xe7037ed1a0b428db
	wyp2 = 0x8ebc6af09c88c6e3
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
		return k.long(b)
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

// long hashes a token of more than 16 bytes: each 16-byte block is mixed
// into the state, and the last 16 bytes (which may overlap the previous
// block) with the length.
func (k *keyed) long(b []byte) uint64 {
	n := len(b)
	h := k.k2 ^ wyp2
	p := b
	for len(p) > 16 {
		h = wymix(binary.LittleEndian.Uint64(p)^k.k0^wyp0, binary.LittleEndian.Uint64(p[8:])^h)
		p = p[16:]
	}
	a := binary.LittleEndian.Uint64(b[n-16:])
	c := binary.LittleEndian.Uint64(b[n-8:])
	return wymix(a^k.k1^wyp1, c^h^uint64(n)) ^ uint64(n)<<1
}
