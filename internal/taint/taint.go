// Package taint remembers what untrusted tool output said and answers one
// question: did this destination appear in it?
//
// Text is folded (case, whitespace, full-width forms, zero-width characters)
// and decoded (percent-encoding, HTML entities, JSON string escapes) before it
// is cut into tokens; a destination is seen when it, folded the same way, is
// one whole token. The store keeps hashes of tokens, not the text, so its
// memory stays bounded for very large outputs. A hash collision can only make
// a destination look seen (the call is denied: fail closed); a recorded
// destination is never reported unseen.
package taint

// MinLen is the shortest folded destination that can be tainted: shorter
// ones are too likely to occur by chance, so they are never reported seen and
// go to a human instead.
const MinLen = 6

// Store records untrusted output. It is safe for concurrent use, so the
// proxies of one client may share one store.
type Store struct{}

// NewStore returns an empty store.
func NewStore() *Store { return &Store{} }

// Record adds one piece of untrusted text.
func (s *Store) Record(text string) {}

// RecordJSON adds every string value and every object key in a JSON document
// (a tool result, a resource, an error), each as its own piece of text.
// Invalid JSON is recorded as plain text.
func (s *Store) RecordJSON(doc []byte) {}

// Seen reports whether dest, folded, appeared as a whole token in recorded
// output. It also checks the forms a destination hides behind: an address in
// a URL's query, without a trailing dot, or without a +tag. A folded dest
// shorter than MinLen is never seen.
func (s *Store) Seen(dest string) bool { return false }

// Fold applies the folding used on both sides of a match: Unicode
// compatibility forms (full-width), case, removal of zero-width characters,
// and whitespace collapsed to single spaces and trimmed.
func Fold(s string) string { return s }
