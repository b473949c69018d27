package taint

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
)

// Text recorded before is not read again. A session reads the same output
// over and over (a mailbox listed, a ticket re-read, a file opened twice),
// and each reading costs a scan of every byte; a store keeps the digests
// of the long pieces of text and the documents it recorded, and skips one
// it finds among them. Skipping is safe only if the text is the very same:
// a new text taken for one already recorded would have its destinations
// never recorded, and a call to them allowed. So the digest is keyed and
// collision-proof: GHASH, the polynomial hash under AES-GCM's tag, with a
// random key of this store's own. Two different texts of up to L 16-byte
// blocks get the same digest with a probability of at most (L+1)/2^128
// over the key, whatever texts an attacker chooses without seeing the
// digests (which never leave the process). It runs at several GB/s with
// the processor's carry-less multiply.
//
// A text is noted only once all its hashes are in the store and handed on
// (recorded holds the store's rec lock for both), so a record that skips
// it never runs ahead of the one that recorded it.

// digest is a text's keyed digest.
type digest [16]byte

// Text domains: a piece of plain text and a JSON document are read
// differently, so the same bytes are two different texts.
const (
	domainText = iota + 1
	domainJSON
)

// minText is the shortest text whose digest is kept: a shorter one costs
// little more to scan than to digest.
const minText = 256

// maxTexts bounds the digests kept (16 bytes each); when full, they are
// forgotten and the texts are read again the next time.
const maxTexts = 1 << 15

// newDigester returns the keyed digest function of a new store.
func newDigester() cipher.AEAD {
	var key [16]byte
	if _, err := rand.Read(key[:]); err != nil {
		panic("taint: no randomness for the digest key: " + err.Error()) // crypto/rand does not fail on supported systems
	}
	block, err := aes.NewCipher(key[:])
	if err != nil {
		panic("taint: " + err.Error()) // a 16-byte key can't be refused
	}
	g, err := cipher.NewGCM(block)
	if err != nil {
		panic("taint: " + err.Error()) // AES has GCM's block size
	}
	return g
}

// digest returns the digest of text in a domain, or false when the text is
// too short to keep one for. (It works in the scanner's buffers: a slice
// handed to the cipher's interface would be allocated every time.)
func (sc *scanner) digest(text []byte, domain byte) (d digest, ok bool) {
	if len(text) < minText || sc.store == nil {
		return d, false
	}
	sc.nonce[0] = domain
	// The tag of an empty message with text as additional data: GHASH of
	// the text, masked with AES of the nonce.
	sc.store.dkey.Seal(sc.dsum[:0], sc.nonce[:], nil, text)
	return sc.dsum, true
}

// recordedText reports whether the store recorded the text of digest d
// whole before.
func (s *Store) recordedText(d digest) bool {
	s.rec.Lock()
	defer s.rec.Unlock()
	_, ok := s.pieces[d]
	return ok
}
