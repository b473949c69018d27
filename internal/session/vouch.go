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
// each destination it names vouches for the rest of the session unless
// untrusted output holds it too. A whole value (a line of its text, a
// string of its structuredContent) vouches from dest.MinMention runes, so
// a member listing vouches "Eve"; a word inside a longer value only from
// taint.MinLen, as long as taint would trace it.
type Vouches struct {
	set *vouchSet
}

// Record records a text a trusted tool returned.
func (v *Vouches) Record(text string) { v.set.add(trustedText(text)) }

func trustedText(text string) []string {
	var keys []string
	for _, e := range dest.Entries(text) {
		keys = append(keys, dest.MentionsOf(e, taint.MinLen)...)
	}
	return keys
}

// RecordJSON records a trusted tool's result (a CallToolResult): the text
// of its content blocks and embedded resources, and every string of its
// structuredContent. The protocol's own fields ("type": "text") name
// nothing.
func (v *Vouches) RecordJSON(doc []byte) {
	var keys []string
	eachResultString(doc, func(s string, whole bool) {
		if whole {
			keys = append(keys, dest.MentionsOf(s, taint.MinLen)...)
		} else {
			keys = append(keys, trustedText(s)...)
		}
	})
	v.set.add(keys)
}

// eachResultString calls fn on the text of a CallToolResult's content
// blocks and embedded resources (whole: false, a text to read by lines)
// and on each string of its structuredContent (whole: true). A document
// that is not a CallToolResult gives each string of it, whole.
func eachResultString(doc []byte, fn func(s string, whole bool)) {
	var walk func(any)
	walk = func(x any) {
		switch t := x.(type) {
		case string:
			fn(t, true)
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
		fn(string(doc), false)
		return
	}
	m, _ := whole.(map[string]any)
	_, hasContent := m["content"]
	_, hasStructured := m["structuredContent"]
	if !hasContent && !hasStructured {
		walk(whole)
		return
	}
	var r struct {
		Content []struct {
			Text     string `json:"text"`
			Resource struct {
				Text string `json:"text"`
			} `json:"resource"`
		} `json:"content"`
	}
	if err := json.Unmarshal(doc, &r); err != nil {
		walk(whole)
		return
	}
	for _, c := range r.Content {
		fn(c.Text, false)
		fn(c.Resource.Text, false)
	}
	walk(m["structuredContent"])
}

// Directory records the output of a tool the policy marks as a directory
// (directory: KIND): each whole entry of its listing vouches for an
// argument declared of that kind (sink_kinds), and for nothing else. An
// entry is a string of its structuredContent that is an element of a
// list, or the name, id or title of an object in a list; in a text block
// (JSON text read the same way), each line. Only names are entries: a
// value that reads as an address, a URL or a host never is, so a directory
// never vouches where mail or a request goes.
type Directory struct {
	set  *vouchSet
	kind string
}

// RecordJSON records a directory tool's result (a CallToolResult).
func (d *Directory) RecordJSON(doc []byte) {
	var keys []string
	add := func(s string) {
		if k, ok := directoryKey(d.kind, s); ok {
			keys = append(keys, k)
		}
	}
	var r struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		Structured any `json:"structuredContent"`
	}
	if err := json.Unmarshal(doc, &r); err != nil {
		return
	}
	listed(r.Structured, false, add)
	for _, c := range r.Content {
		var x any
		if err := json.Unmarshal([]byte(c.Text), &x); err == nil {
			if _, scalar := x.(string); !scalar {
				listed(x, false, add)
				continue
			}
		}
		for _, e := range dest.Entries(c.Text) {
			add(e)
		}
	}
	d.set.add(keys)
}

// listed calls add on each entry of the lists in x: a string element of a
// list, and the name, id or title of an object element.
func listed(x any, inList bool, add func(string)) {
	switch t := x.(type) {
	case string:
		if inList {
			add(t)
		}
	case []any:
		for _, e := range t {
			listed(e, true, add)
		}
	case map[string]any:
		for k, e := range t {
			if s, ok := e.(string); ok {
				if inList && (k == "name" || k == "id" || k == "title") {
					add(s)
				}
				continue
			}
			listed(e, false, add)
		}
	}
}

// directoryKey is the key of an entry of a directory of kind: its
// canonical form, when it reads as a name and nothing else (dest.IsName).
func directoryKey(kind, s string) (string, bool) {
	d, err := dest.Parse(s)
	if err != nil || !dest.IsName(s) {
		return "", false
	}
	return "directory\x00" + kind + "\x00" + d.Key(), true
}
