package transport

import (
	"strings"
	"testing"
	"testing/iotest"
)

// Events whose lines are longer than the scanner's buffer, read a byte at
// a time or all at once, come out whole.
func TestEventScannerLongLines(t *testing.T) {
	long := strings.Repeat("x", 200<<10)
	stream := ": comment\r\nevent: message\r\nid: 7\r\ndata: " + long + "\r\ndata: two\r\n\r\n" +
		"data: " + long[:5000] + "\n\n" +
		"data: cut off by the end"
	for name, r := range map[string]func() *eventScanner{
		"whole":        func() *eventScanner { return newEventScanner(strings.NewReader(stream)) },
		"byte by byte": func() *eventScanner { return newEventScanner(iotest.OneByteReader(strings.NewReader(stream))) },
		"half at most": func() *eventScanner { return newEventScanner(iotest.HalfReader(strings.NewReader(stream))) },
		"an answer's":  func() *eventScanner { return newAnswerScanner(iotest.HalfReader(strings.NewReader(stream))) },
	} {
		t.Run(name, func(t *testing.T) {
			sc := r()
			ev, ok := sc.next()
			if !ok || ev.name != "message" || ev.id != "7" || string(ev.data) != long+"\ntwo" {
				t.Fatalf("first event: ok %v, name %q, id %q, %d bytes of data", ok, ev.name, ev.id, len(ev.data))
			}
			ev, ok = sc.next()
			if !ok || string(ev.data) != long[:5000] {
				t.Fatalf("second event: ok %v, %d bytes of data", ok, len(ev.data))
			}
			if _, ok := sc.next(); ok {
				t.Fatal("an event cut off by the end was delivered")
			}
		})
	}
}
