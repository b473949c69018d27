package taint

import (
	"strings"
	"testing"

	"github.com/bouncer-mcp/bouncer/internal/dest"
)

// A phone or account number in output is seen in every spelling its
// receiver reads as the same digits: an SMS API takes "+14155550199" for
// the "+1 415-555-0199" an injection printed, a bank the IBAN without its
// spaces.
func TestNumbersByDigits(t *testing.T) {
	const out = "Text +1 415-555-0199, call (020) 7946 0958 or +33 1 42 68 53 00; wire to DE89 3704 0044 0532 0130 00. Ticket 2024-05-01 #88123."
	s := NewStore()
	s.Record(out)
	seen := func(d string) bool {
		for _, f := range append([]string{d}, dest.Variants(d)...) {
			if s.Seen(f) {
				return true
			}
		}
		return false
	}
	for _, d := range []string{
		"+14155550199", "+1 (415) 555-0199", "(415) 555-0199", "415.555.0199", "1-415-555-0199", "001 415 555 0199", "tel:+14155550199",
		"+44 20 7946 0958", "+442079460958", "+33142685300", "01 42 68 53 00",
		"DE89370400440532013000", "de89 3704 0044 0532 0130 00",
	} {
		if !seen(d) {
			t.Errorf("%q not seen in %q", d, out)
		}
	}
	for _, d := range []string{"+14155550198", "+1 415-555-0100", "(415) 555-0198", "DE89370400440532013001", "+12024050199"} {
		if seen(d) {
			t.Errorf("%q seen in %q", d, out)
		}
	}
}

// A run of more words of digits than a number has (maxNumberWords) drops
// its first words as it goes: it must not panic (the words' starts were
// once shifted by a value the shift itself overwrote), and a number at its
// end is still read.
func TestLongRunOfNumberWords(t *testing.T) {
	for _, out := range []string{
		"000 0 00 00 00 00 0 0 0",
		"1 22 333 4 55 666 7 88 999 10 +1 415-555-0199",
	} {
		s := NewStore()
		s.Record(out)
		if strings.Contains(out, "415") && !s.Seen("14155550199") {
			t.Errorf("14155550199 not seen in %q", out)
		}
	}
}
