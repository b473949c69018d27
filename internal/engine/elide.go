package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"unicode/utf8"
)

// MaxAuditArgs is the size of encoded arguments above which the audit line
// records them elided: every string longer than elideString is replaced by
// its start, its length and its SHA-256. A 1 MiB file written through the
// filesystem server would otherwise put 1 MiB into the log per call, and
// the log must stay readable and quick to verify; what the line needs to
// show (paths, destinations, names, ids) is short and kept whole.
const MaxAuditArgs = 64 << 10

// elideString and elidePreview bound a string kept in an elided line, and
// the start shown of one that is not.
const (
	elideString  = 1024
	elidePreview = 256
)

// Elided is how an elided string reads in the audit line, after its
// first elidePreview bytes: "…[bouncer: N bytes, sha256:HEX]".
const elidedFormat = "…[bouncer: %d bytes, sha256:%s]"

// ElideJSON returns doc with every string longer than elideString replaced
// as an audit line's elided arguments are (see MaxAuditArgs), for a record
// that must stay small: bouncer run --record elides a huge output so. A
// doc that is not JSON the engine reads is elided as one string.
func ElideJSON(doc []byte) []byte {
	if !utf8.Valid(doc) {
		doc = []byte(strings.ToValidUTF8(string(doc), "\uFFFD"))
	}
	v, err := parseValue(doc)
	if err != nil {
		v = string(doc)
	}
	b, err := encodeValue(nil, elide(v))
	if err != nil {
		b, _ = encodeValue(nil, elide(string(doc)))
	}
	return b
}

// elide returns a copy of a parsed value with every long string replaced.
func elide(v any) any {
	switch x := v.(type) {
	case string:
		if len(x) <= elideString {
			return x
		}
		sum := sumString(x)
		cut := elidePreview
		for cut > 0 && !utf8.RuneStart(x[cut]) {
			cut--
		}
		return x[:cut] + fmt.Sprintf(elidedFormat, len(x), hex.EncodeToString(sum[:]))
	case []any:
		out := make([]any, len(x))
		for i, el := range x {
			out[i] = elide(el)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, el := range x {
			out[k] = elide(el)
		}
		return out
	}
	return v
}

// sumString is sha256.Sum256 of s without a copy of s: a long string is
// what gets elided, and copying a megabyte to hash it doubles its cost.
func sumString(s string) [sha256.Size]byte {
	h := sha256.New()
	var buf [16 << 10]byte
	for len(s) > 0 {
		n := copy(buf[:], s)
		h.Write(buf[:n])
		s = s[n:]
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum
}
