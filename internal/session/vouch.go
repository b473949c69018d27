package session

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"sync"

	"github.com/bouncer-mcp/bouncer/internal/dest"
	"github.com/bouncer-mcp/bouncer/internal/taint"
)

// vouchSet holds destinations that vouch, in their canonical form (package
// dest), as hashes under the session's key: the same destination from any
// of the client's processes gives the same hash, and the files on disk say
// nothing about what was typed. Unlike taint's token hash, an allow rests
// on this one, so it is HMAC-SHA-256: a collision would be a silent allow.
type vouchSet struct {
	key [taint.KeySize]byte

	mu       sync.RWMutex
	m        map[uint64]struct{}
	onRecord func([]uint64)
}

func newVouchSet(key [taint.KeySize]byte) *vouchSet {
	return &vouchSet{key: key, m: map[uint64]struct{}{}}
}

// sum is the hash of one destination key (dest.Key).
func (v *vouchSet) sum(k string) uint64 {
	mac := hmac.New(sha256.New, v.key[:])
	mac.Write([]byte("bouncer vouch v1\x00"))
	mac.Write([]byte(k))
	return binary.LittleEndian.Uint64(mac.Sum(nil))
}

// add records destination keys and shares their hashes.
func (v *vouchSet) add(keys []string) {
	if len(keys) == 0 {
		return
	}
	hs := make([]uint64, len(keys))
	for i, k := range keys {
		hs[i] = v.sum(k)
	}
	v.addHashes(hs)
	v.mu.RLock()
	fn := v.onRecord
	v.mu.RUnlock()
	if fn != nil {
		fn(hs)
	}
}

// addHashes takes hashes another process recorded.
func (v *vouchSet) addHashes(hs []uint64) {
	v.mu.Lock()
	for _, h := range hs {
		v.m[h] = struct{}{}
	}
	v.mu.Unlock()
}

// has reports whether the destination key k was recorded.
func (v *vouchSet) has(k string) bool {
	h := v.sum(k)
	v.mu.RLock()
	defer v.mu.RUnlock()
	_, ok := v.m[h]
	return ok
}

// Vouches records the output of a tool the policy trusts (trusted_output):
// each destination it names, as a whole (see dest.Mentions), vouches for
// the rest of the session unless untrusted output holds it too.
type Vouches struct {
	set *vouchSet
}

// Record records a text a trusted tool returned.
func (v *Vouches) Record(text string) { v.set.add(dest.Mentions(text)) }

// RecordJSON records a trusted tool's result (a CallToolResult): the text
// of its content blocks and embedded resources, and every string of its
// structuredContent, each as a whole value and by the words of it. The
// protocol's own fields ("type": "text") name nothing.
func (v *Vouches) RecordJSON(doc []byte) {
	var r struct {
		Content []struct {
			Text     string `json:"text"`
			Resource struct {
				Text string `json:"text"`
			} `json:"resource"`
		} `json:"content"`
		Structured any `json:"structuredContent"`
	}
	var keys []string
	var walk func(any)
	walk = func(x any) {
		switch t := x.(type) {
		case string:
			keys = append(keys, dest.MentionsOf(t)...)
		case []any:
			for _, e := range t {
				walk(e)
			}
		case map[string]any:
			for _, e := range t {
				walk(e)
			}
		}
	}
	var whole any
	if err := json.Unmarshal(doc, &whole); err != nil {
		v.Record(string(doc))
		return
	}
	m, _ := whole.(map[string]any)
	_, hasContent := m["content"]
	_, hasStructured := m["structuredContent"]
	if !hasContent && !hasStructured {
		// Not a CallToolResult: every string of it.
		walk(whole)
		v.set.add(keys)
		return
	}
	if err := json.Unmarshal(doc, &r); err != nil {
		walk(whole)
		v.set.add(keys)
		return
	}
	for _, c := range r.Content {
		keys = append(keys, dest.Mentions(c.Text)...)
		keys = append(keys, dest.Mentions(c.Resource.Text)...)
	}
	walk(r.Structured)
	v.set.add(keys)
}
