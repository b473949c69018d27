package taint

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// OnRecord gets only the hashes new to the store: a peer that reads them
// has the others already, from this store or from the peer that recorded
// them. Once the store is a Bloom filter, which can't tell, it gets them
// all.
func TestOnRecordNewOnly(t *testing.T) {
	var key [KeySize]byte
	key[0] = 7
	a, peer := NewStoreWithKey(key), NewStoreWithKey(key)
	var got []uint64
	a.OnRecord(func(hs []uint64) { got = append(got, hs...) })
	a.Record("mail attacker@evil.example now")
	first := len(got)
	if first == 0 {
		t.Fatal("nothing handed on")
	}
	a.Record("again attacker@evil.example, and mallory@evil.example")
	for _, h := range got[:first] {
		for _, h2 := range got[first:] {
			if h == h2 {
				t.Fatalf("hash %x handed on twice", h)
			}
		}
	}
	peer.AddHashes(got)
	for _, d := range []string{"attacker@evil.example", "mallory@evil.example"} {
		if !peer.Seen(d) {
			t.Errorf("the peer does not see %q", d)
		}
	}
	// A hash a peer handed on is not handed on again.
	b := NewStoreWithKey(key)
	b.AddHashes(got)
	var again []uint64
	b.OnRecord(func(hs []uint64) { again = append(again, hs...) })
	b.Record("mail attacker@evil.example now")
	if len(again) != 0 {
		t.Errorf("hashes a peer recorded handed on again: %d", len(again))
	}

	bl := NewStoreWithKey(key)
	bl.set.max = exactSlotsMin // a Bloom filter after 512 hashes
	var n int
	for i := 0; bl.bf == nil; i++ {
		bl.Record(fmt.Sprintf("filler-word-%d ", i))
	}
	bl.OnRecord(func(hs []uint64) { n += len(hs) })
	bl.Record("mail attacker@evil.example now")
	bl.Record("mail attacker@evil.example now")
	if n == 0 || n%2 != 0 {
		t.Errorf("a Bloom store handed on %d hashes for two records of the same text; want all of both", n)
	}
}

// A long text or document recorded before is not read again; one that
// differs anywhere is.
func TestRecordedTextSkipped(t *testing.T) {
	s := NewStore()
	s.RecordJSON([]byte(`{"content":[{"type":"text","text":"x"}],"n":1}`)) // the envelope's words
	var calls int
	s.OnRecord(func([]uint64) { calls++ })
	filler := strings.Repeat("lorem ipsum dolor sit amet ", 20)
	text := filler + " write to first-attacker@evil.example " + filler
	s.Record(text)
	if calls != 1 {
		t.Fatalf("OnRecord ran %d times for a new text", calls)
	}
	sc := s.scanner(true)
	d, ok := sc.digest([]byte(text), domainText)
	putScanner(sc)
	if !ok || !s.recordedText(d) {
		t.Fatal("a long text recorded whole is not noted")
	}
	// The same bytes again: nothing to scan. Inside a JSON document as a
	// string, the same.
	s.Record(text)
	doc := fmt.Sprintf(`{"content":[{"type":"text","text":%q}],"n":%d}`, text, 1)
	s.RecordJSON([]byte(doc))
	if calls != 1 {
		t.Fatalf("a text recorded before was handed on again (%d)", calls)
	}
	// One byte changed: a new text, read, and its destination seen.
	other := strings.Replace(text, "first-attacker", "other-attacker", 1)
	s.RecordJSON([]byte(fmt.Sprintf(`{"content":[{"type":"text","text":%q}]}`, other)))
	if !s.Seen("other-attacker@evil.example") {
		t.Fatal("a text that differs from one recorded was skipped")
	}
	// The same bytes as plain text and as a JSON document are different
	// texts: read as JSON, each string is a piece, and a short one is a
	// name too.
	named := fmt.Sprintf(`{"name":"Mal Evi","notes":%q}`, filler)
	s.Record(named)
	if s.Seen("Mal Evi") {
		t.Fatal("the text alone records the name (the test needs it not to)")
	}
	s.RecordJSON([]byte(named))
	if !s.Seen("Mal Evi") {
		t.Fatal("a JSON document was taken for the same bytes recorded as text")
	}
}

// A record that finds its hashes in the store already returns only after
// the record that put them there has handed them on: else a peer of this
// store could be asked, by a client that saw the second output, before
// the hashes reached it.
func TestRecordWaitsForHandOn(t *testing.T) {
	s := NewStore()
	var mu sync.Mutex
	handed := map[uint64]bool{}
	entered := make(chan struct{}, 1)
	s.OnRecord(func(hs []uint64) {
		select {
		case entered <- struct{}{}:
		default:
		}
		time.Sleep(50 * time.Millisecond)
		mu.Lock()
		for _, h := range hs {
			handed[h] = true
		}
		mu.Unlock()
	})
	go s.Record("mail attacker@evil.example")
	<-entered
	s.Record("mail attacker@evil.example") // finds the hashes present
	p := s.Probe("attacker@evil.example")
	mu.Lock()
	defer mu.Unlock()
	found := false
	for _, h := range p.hashes {
		found = found || handed[h]
	}
	if !found {
		t.Fatal("the second record returned before the first handed its hashes on")
	}
}
