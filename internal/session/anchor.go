package session

import (
	"encoding/json"
	"sort"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/bouncer-mcp/bouncer/internal/dest"
	"github.com/bouncer-mcp/bouncer/internal/jsonc"
)

// Record anchoring (anchor_records: true, off by default): a person in a
// people field of a record counts as typed by the user when all of these
// hold:
//
//   - the record came as the structuredContent of a tool the policy opts
//     in (never structure guessed from text);
//   - the user's prompt names the record by a whole title, subject or
//     file name of the record's own, compared without regard to case or
//     runs of space, that is distinctive (distinctive: at least two
//     words and eight letters or digits, so "notes", a year or an amount
//     names no record);
//   - that name picks exactly one record of all the opted-in records the
//     session has seen;
//   - the send names the whole set of one of the record's people fields
//     (every participant, or the one sender), each in canonical form;
//   - the send is not to the user's own destinations alone (the engine
//     checks own_destinations).
//
// The limit, stated in docs/efficacy.md: an attacker who authored a
// record whose whole title the user typed, and no other record of the
// session carries (the organiser of the event, the sender of the mail),
// chooses its people, and wins.

// nameFields name a record for a person; peopleFields hold whom it
// involves.
var (
	nameFields   = []string{"title", "subject", "filename", "file_name"}
	peopleFields = []string{"participants", "attendees", "sender", "recipients", "recipient", "cc", "bcc", "shared_with", "organizer"}
)

// anchors is what the session knows for anchoring, as hashes under its
// key: each record's names and people sets, and the names the user typed.
type anchors struct {
	set *vouchSet // hashes only, for sum

	mu      sync.RWMutex
	records map[uint64]map[uint64]bool // name → records that carry it
	pairs   map[uint64]bool            // H(name, people set)
	typed   map[uint64]bool            // names the user typed

	onRecord func(kind byte, hs []uint64)
}

func newAnchors(set *vouchSet) *anchors {
	return &anchors{set: set, records: map[uint64]map[uint64]bool{}, pairs: map[uint64]bool{}, typed: map[uint64]bool{}}
}

// anchorName is how a record's name and a prompt's words compare:
// without regard to case or runs of space.
func anchorName(s string) string {
	return strings.ToLower(strings.Join(strings.Fields(s), " "))
}

// distinctive reports whether a record's name can name it: at least two
// words and eight letters or digits ("Board sync", "Q3 budget.xlsx"), not
// one common word ("notes") or a number (a year, an amount) that a prompt
// says for other reasons.
func distinctive(name string) bool {
	words := strings.FieldsFunc(name, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	n := 0
	for _, w := range words {
		n += utf8.RuneCountInString(w)
	}
	return len(words) >= 2 && n >= 8
}

func (a *anchors) nameHash(name string) uint64 { return a.set.sum("anchor-name\x00" + name) }

func (a *anchors) pairHash(name uint64, people string) uint64 {
	var b [8]byte
	for i := range b {
		b[i] = byte(name >> (8 * i))
	}
	return a.set.sum("anchor-pair\x00" + string(b[:]) + "\x00" + people)
}

// peopleKey is a set of destinations as one string: their canonical keys,
// sorted, each once.
func peopleKey(keys []string) string {
	sort.Strings(keys)
	keys = compactStrings(keys)
	return strings.Join(keys, "\x01")
}

func compactStrings(s []string) []string {
	out := s[:0]
	for i, x := range s {
		if i == 0 || x != s[i-1] {
			out = append(out, x)
		}
	}
	return out
}

// typedNames records the names a prompt holds.
func (a *anchors) typedNames(text string) {
	var hs []uint64
	for _, k := range dest.Mentions(text) {
		_, canon, _ := strings.Cut(k, "\x00")
		if distinctive(canon) {
			hs = append(hs, a.nameHash(anchorName(canon)))
		}
	}
	a.add(kindAnchorTyped, hs)
}

// recordJSON records the records of an opted-in tool's result: its
// structuredContent, or with text (anchor_records: text_json), when it
// has none, each text block that is wholly JSON (textJSON).
func (a *anchors) recordJSON(doc []byte, text bool) {
	var r struct {
		Structured any `json:"structuredContent"`
		Content    []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	}
	if json.Unmarshal(doc, &r) != nil {
		return
	}
	if r.Structured == nil && text {
		for _, c := range r.Content {
			if v, ok := textJSON(c.Type, c.Text); ok {
				a.recordValue(v)
			}
		}
		return
	}
	if r.Structured != nil {
		a.recordValue(r.Structured)
	}
}

// textJSON reads a text block as records only when the whole block is one
// JSON object or array, as strict JSON, valid UTF-8, with no key twice in
// any object: an agent reads the text, and a block that two readers could
// read two ways vouches for nothing (the allow side under-matches).
func textJSON(typ, text string) (any, bool) {
	t := strings.TrimSpace(text)
	if typ != "text" || t == "" || (t[0] != '{' && t[0] != '[') || !utf8.ValidString(t) || !json.Valid([]byte(t)) {
		return nil, false
	}
	n, err := jsonc.Parse("text", []byte(t))
	if err != nil || jsonc.CheckUnique("text", []byte(t), n, "") != nil {
		return nil, false
	}
	var v any
	if json.Unmarshal([]byte(t), &v) != nil {
		return nil, false
	}
	return v, true
}

// recordValue records the records (objects with a name and people) found
// at any depth of v.
func (a *anchors) recordValue(v any) {
	var hs []uint64
	var walk func(x any)
	walk = func(x any) {
		switch t := x.(type) {
		case []any:
			for _, e := range t {
				walk(e)
			}
		case map[string]any:
			hs = append(hs, a.record(t)...)
			for _, e := range t {
				walk(e)
			}
		}
	}
	walk(v)
	a.add(kindAnchorRecord, hs)
}

// record returns the triples (name, record, pair) of one object, or none
// when it has no name or no people field.
func (a *anchors) record(m map[string]any) []uint64 {
	var names []uint64
	for _, f := range nameFields {
		if v, ok := m[f].(string); ok && distinctive(v) {
			names = append(names, a.nameHash(anchorName(v)))
		}
	}
	var sets []string
	for _, f := range peopleFields {
		if keys, ok := people(m[f]); ok {
			sets = append(sets, peopleKey(keys))
		}
	}
	if len(names) == 0 || len(sets) == 0 {
		return nil
	}
	whole, _ := json.Marshal(m) // keys sorted: the same record, the same bytes
	rec := a.set.sum("anchor-record\x00" + string(whole))
	var out []uint64
	for _, n := range names {
		for _, s := range sets {
			out = append(out, n, rec, a.pairHash(n, s))
		}
	}
	return out
}

// people reads a people field: a destination, a list of them, or an
// object keyed by them (shared_with: {addr: "rw"}). A field any of whose
// values has no canonical form anchors nothing.
func people(v any) ([]string, bool) {
	var raw []string
	switch t := v.(type) {
	case string:
		raw = []string{t}
	case []any:
		for _, e := range t {
			s, ok := e.(string)
			if !ok {
				return nil, false
			}
			raw = append(raw, s)
		}
	case map[string]any:
		for k := range t {
			raw = append(raw, k)
		}
	default:
		return nil, false
	}
	if len(raw) == 0 {
		return nil, false
	}
	keys := make([]string, 0, len(raw))
	for _, s := range raw {
		k, ok := dest.Canon(s)
		if !ok {
			return nil, false
		}
		keys = append(keys, k)
	}
	return keys, true
}

// add takes hashes of one kind, from this process or another.
func (a *anchors) add(kind byte, hs []uint64) {
	if len(hs) == 0 {
		return
	}
	a.take(kind, hs)
	a.mu.RLock()
	fn := a.onRecord
	a.mu.RUnlock()
	if fn != nil {
		fn(kind, hs)
	}
}

func (a *anchors) take(kind byte, hs []uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	switch kind {
	case kindAnchorTyped:
		for _, h := range hs {
			a.typed[h] = true
		}
	case kindAnchorRecord:
		for i := 0; i+2 < len(hs); i += 3 {
			name, rec, pair := hs[i], hs[i+1], hs[i+2]
			if a.records[name] == nil {
				a.records[name] = map[uint64]bool{}
			}
			a.records[name][rec] = true
			a.pairs[pair] = true
		}
	}
}

// anchored reports whether the set of destinations (canonical keys) is the
// whole people field of the one record a name the user typed picks.
func (a *anchors) anchored(keys []string) bool {
	people := peopleKey(append([]string(nil), keys...))
	a.mu.RLock()
	defer a.mu.RUnlock()
	for name := range a.typed {
		if len(a.records[name]) == 1 && a.pairs[a.pairHash(name, people)] {
			return true
		}
	}
	return false
}
