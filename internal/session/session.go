// Package session is the history that the proxies of one MCP client share:
// what each server returned (untrusted: it taints the destinations in it),
// what the user typed (a prompt hook records it: it vouches), and what the
// tools the policy trusts returned (the user's own contacts or sent mail:
// it vouches unless untrusted output holds the same destination too).
//
// A client starts one `bouncer run` per server. An injection read through
// one server and sent through another must meet the same taint, so the
// proxies of one client find each other without configuration: by that
// client process (its pid and start time, see FindClient), in a directory
// of the state directory (so the sandboxed proxy can reach it). Each
// process appends what it records to a file of its own there, as token
// hashes under a key the session's processes share, never as text; before
// a decision, every proxy reads what the others appended since it last
// looked. A record torn by a crash is ignored. A proxy that can't reach the
// shared directory says so and keeps its own history, which can only turn
// a deny into an ask, never into an allow.
package session

import (
	"crypto/rand"
	"sort"
	"sync"

	"github.com/bouncer-mcp/bouncer/internal/dest"
	"github.com/bouncer-mcp/bouncer/internal/taint"
	"github.com/bouncer-mcp/bouncer/internal/vouch"
)

// Session is the history of one client session. The zero value is not
// usable; make one with New or Join. It is safe for concurrent use.
type Session struct {
	key [taint.KeySize]byte

	mu        sync.RWMutex
	untrusted map[string]*taint.Store // by server
	trusted   *vouchSet               // what trusted output named
	prompts   *vouchSet               // what the user typed
	dirs      *vouchSet               // the entries of directories, by kind
	anchors   *anchors                // records and names for anchoring
	probe     *taint.Store            // any store with the key: makes probes

	disk       *shared       // nil: this process's memory only
	remembered []*Remembered // destinations humans vouched for
	group      *Group        // the sessions whose taint is checked with this one; may be nil
}

// New returns a session kept in this process's memory only (bouncer check,
// bouncer serve, and a proxy that could not join its client's session).
func New() *Session {
	var key [taint.KeySize]byte
	if _, err := rand.Read(key[:]); err != nil {
		panic("session: no randomness: " + err.Error())
	}
	return newWithKey(key)
}

func newWithKey(key [taint.KeySize]byte) *Session {
	s := &Session{
		key:       key,
		untrusted: map[string]*taint.Store{},
		trusted:   newVouchSet(key),
		prompts:   newVouchSet(key),
		dirs:      newVouchSet(key),
		probe:     taint.NewStoreWithKey(key),
	}
	s.anchors = newAnchors(s.prompts)
	return s
}

// Record kinds, as written on disk. Vouching kinds hold hashes of
// canonical destinations (see vouchSet), never folded tokens; the kinds
// of earlier versions ('v', 'p': folded) are not read.
const (
	kindUntrusted = 'o'
	kindTrusted   = 'T'
	kindPrompt    = 'P'
	kindDirectory = 'D'
	// Anchoring: names the user typed, and each record's (name, record,
	// name and people set) triples.
	kindAnchorTyped  = 'N'
	kindAnchorRecord = 'R'
)

// Output returns the store that records server's untrusted output. What it
// records is shared with the client's other proxies.
func (s *Session) Output(server string) *taint.Store {
	return s.store(kindUntrusted, server, true)
}

// TrustedOutput returns what records the output of server's tools that
// the policy trusts: the destinations it names vouch, compared exactly
// (package dest).
func (s *Session) TrustedOutput(server string) *Vouches {
	s.shareVouches(kindTrusted, s.trusted)
	return &Vouches{set: s.trusted}
}

// Directory returns what records the output of a tool the policy marks as
// a directory of kind (see Directory).
func (s *Session) Directory(kind string) *Directory {
	s.shareVouches(kindDirectory, s.dirs)
	return &Directory{set: s.dirs, kind: kind}
}

// InDirectory reports whether d is a whole entry of a directory of kind
// that a tool of this session listed.
func (s *Session) InDirectory(kind, d string) bool {
	k, ok := directoryKey(kind, d)
	if !ok {
		return false
	}
	s.sync()
	return s.dirs.has(k)
}

// RecordPrompt records what the user typed: each destination it names as a
// whole (a word, or a run of words such as "Le Marais Boutique"; see
// dest.Mentions) is vouched for by the user for the rest of the session,
// in its canonical form and nothing else.
func (s *Session) RecordPrompt(text string) {
	s.shareVouches(kindPrompt, s.prompts)
	s.prompts.add(dest.Mentions(text))
	s.shareAnchors()
	s.anchors.typedNames(text)
}

// Anchors returns what records the output of a tool whose records the
// policy opts in to anchoring: its structuredContent (anchor_records:
// true), and with text also each text block that is wholly JSON
// (anchor_records: text_json).
func (s *Session) Anchors(text bool) Recorder {
	s.shareAnchors()
	return anchorRecorder{s.anchors, text}
}

// Recorder records a tool's result (a CallToolResult's JSON).
type Recorder interface {
	RecordJSON(doc []byte)
}

type anchorRecorder struct {
	a    *anchors
	text bool
}

func (r anchorRecorder) RecordJSON(doc []byte) { r.a.recordJSON(doc, r.text) }

// Anchored reports whether the destinations one argument of a send names
// are, all together, the people of a record the user named (see
// anchor.go). A destination with no canonical form anchors nothing.
func (s *Session) Anchored(ds []string) bool {
	keys := make([]string, 0, len(ds))
	for _, d := range ds {
		k, ok := dest.Canon(d)
		if !ok {
			return false
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return false
	}
	s.sync()
	return s.anchors.anchored(keys)
}

// shareAnchors makes the anchors write what they record to this
// process's record file, once.
func (s *Session) shareAnchors() {
	if s.disk == nil {
		return
	}
	s.anchors.mu.Lock()
	if s.anchors.onRecord == nil {
		s.anchors.onRecord = func(kind byte, hs []uint64) { s.disk.write(kind, "", hs) }
	}
	s.anchors.mu.Unlock()
}

// store returns the untrusted store of server, making it on first use.
// share makes what it records go to disk too (stores filled from disk
// must not write back).
func (s *Session) store(kind byte, server string, share bool) *taint.Store {
	m := s.untrusted
	s.mu.RLock()
	st := m[server]
	s.mu.RUnlock()
	if st == nil {
		s.mu.Lock()
		if st = m[server]; st == nil {
			st = taint.NewStoreWithKey(s.key)
			m[server] = st
		}
		s.mu.Unlock()
	}
	if share {
		s.shareOnce(kind, server, st)
	}
	return st
}

// shareOnce makes st write what it records to this process's record file.
// Stores are shared at most once; stores that only hold what other
// processes wrote are never shared back.
func (s *Session) shareOnce(kind byte, server string, st *taint.Store) {
	if s.disk == nil {
		return
	}
	s.disk.share(kind, server, st)
}

// shareVouches makes v write what it records to this process's record
// file, once.
func (s *Session) shareVouches(kind byte, v *vouchSet) {
	if s.disk == nil {
		return
	}
	v.mu.Lock()
	if v.onRecord == nil {
		v.onRecord = func(hs []uint64) { s.disk.write(kind, "", hs) }
	}
	v.mu.Unlock()
}

// Tainted reports whether dest, or another spelling of it (its host in
// punycode or in Unicode, an address without quotes: dest.Variants),
// appeared in any server's untrusted output of this session, and which
// server's (the first in name order, so the same history gives the same
// reason).
func (s *Session) Tainted(d string) (server string, ok bool) {
	s.sync()
	forms := append([]string{d}, dest.Variants(d)...)
	if server, ok := s.taintedHere(forms); ok {
		return server, true
	}
	if s.group != nil {
		return s.group.tainted(s, forms)
	}
	return "", false
}

// taintedHere is Tainted over this session's own stores.
func (s *Session) taintedHere(forms []string) (server string, ok bool) {
	s.mu.RLock()
	names := sortedKeys(s.untrusted)
	stores := make([]*taint.Store, len(names))
	for i, n := range names {
		stores[i] = s.untrusted[n]
	}
	s.mu.RUnlock()
	for _, form := range forms {
		p := s.probe.Probe(form)
		for i, st := range stores {
			if st.Has(p) {
				return names[i], true
			}
		}
	}
	return "", false
}

// Vouched reports whether d, sent through server, is vouched for, and by
// which of the session's ways (package vouch): vouch.Prompt (the user
// typed it), vouch.Remembered (a human chose to remember it for this
// server: bouncer approve --remember, bouncer trust add, or the client's
// question) or vouch.TrustedOutput (a tool the policy trusts returned
// it); "" for none. Whether a way wins over taint is the table's to say
// (vouch.Way.WinsOverTaint), and the caller's to apply. Every way compares
// the canonical form of d as a whole (package dest): a look-alike, a part
// of a vouched value, or a value with no canonical form is vouched by none.
func (s *Session) Vouched(server, d string) string {
	key, ok := dest.Canon(d)
	if !ok {
		return ""
	}
	s.sync()
	switch {
	case s.prompts.has(key):
		return vouch.Prompt
	case s.rememberedHas(server, d):
		return vouch.Remembered
	case s.trusted.has(key):
		return vouch.TrustedOutput
	}
	return ""
}

// SetRemembered gives the session the destinations humans chose to remember.
func (s *Session) SetRemembered(r *Remembered) {
	s.remembered = nil
	if r != nil {
		s.remembered = []*Remembered{r}
	}
}

// AddRemembered gives the session another file of remembered destinations:
// bouncer listen gives each session its user's own, and the operator's.
func (s *Session) AddRemembered(r *Remembered) { s.remembered = append(s.remembered, r) }

func (s *Session) rememberedHas(server, d string) bool {
	for _, r := range s.remembered {
		if r.Has(server, d) {
			return true
		}
	}
	return false
}

// Shared reports whether the session is shared with other processes on
// disk (false for New, and after a failure to reach the shared directory).
func (s *Session) Shared() bool { return s.disk != nil && !s.disk.failed() }

// sync reads what the client's other processes recorded since the last
// look.
func (s *Session) sync() {
	if s.disk != nil {
		s.disk.sync(func(kind byte, server string, hs []uint64) {
			switch kind {
			case kindPrompt:
				s.prompts.addHashes(hs)
			case kindTrusted:
				s.trusted.addHashes(hs)
			case kindDirectory:
				s.dirs.addHashes(hs)
			case kindAnchorTyped, kindAnchorRecord:
				s.anchors.take(kind, hs)
			default:
				s.store(kind, server, false).AddHashes(hs)
			}
		})
	}
}

func sortedKeys(m map[string]*taint.Store) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
