package jsontext

import (
	"strings"
	"testing"
)

// naiveRun is RunOf one byte at a time.
func naiveRun(b []byte, ascii bool) int {
	for i, c := range b {
		if c < 0x20 || c == '"' || c == '\\' || (ascii && c >= 0x80) {
			return i
		}
	}
	return len(b)
}

// RunOf's block and word tests must stop exactly where a byte-by-byte scan
// does, wherever the byte that stops it sits: in the first 32-byte block,
// a later one, or the tail after the last. RunOf takes the vector blocks
// where the machine has them; runWords is the form every other one runs,
// tested here too.
func TestRunOf(t *testing.T) {
	stops := []byte{0x00, 0x1f, '"', '\\', 0x80, 0xff, 0xe2}
	goes := []byte{0x20, '!', '#', '[', ']', 0x7f, '~', 'x', 0x21, 0x5b, 0x5d}
	for n := 0; n < 100; n++ {
		for at := 0; at <= n; at++ {
			for _, stop := range stops {
				for _, fill := range goes {
					b := make([]byte, n)
					for i := range b {
						b[i] = fill
					}
					if at < n {
						b[at] = stop
					}
					for _, ascii := range []bool{false, true} {
						want := naiveRun(b, ascii)
						if got := RunOf(b, ascii); got != want {
							t.Fatalf("RunOf(%q, %v) = %d, want %d", b, ascii, got, want)
						}
						if got := RunOf(string(b), ascii); got != want {
							t.Fatalf("RunOf(string %q, %v) = %d, want %d", b, ascii, got, want)
						}
						if got := runWords(b, ascii); got != want {
							t.Fatalf("runWords(%q, %v) = %d, want %d", b, ascii, got, want)
						}
					}
				}
			}
		}
	}
}

func FuzzRunOf(f *testing.F) {
	f.Add([]byte("abcdefgh\"ijklmnop"), false)
	f.Add([]byte("abcdefghijklmno\x1fp"), true)
	f.Add([]byte("abcdefghéijklmnop"), true)
	f.Fuzz(func(t *testing.T, b []byte, ascii bool) {
		want := naiveRun(b, ascii)
		if got := RunOf(b, ascii); got != want {
			t.Fatalf("RunOf(%q, %v) = %d, want %d", b, ascii, got, want)
		}
		if got := runWords(b, ascii); got != want {
			t.Fatalf("runWords(%q, %v) = %d, want %d", b, ascii, got, want)
		}
	})
}

// BenchmarkRunOf is a run over 64 KiB of plain prose, as in a large
// result's text: RunOf as this machine runs it, and runWords, the form
// without vector instructions.
func BenchmarkRunOf(b *testing.B) {
	prose := []byte(strings.Repeat("the quick brown fox jumps over the lazy dog. ", 64<<10/45))
	for _, f := range []struct {
		name string
		run  func([]byte, bool) int
	}{{"RunOf", RunOf[[]byte]}, {"runWords", runWords[[]byte]}} {
		b.Run(f.name, func(b *testing.B) {
			b.SetBytes(int64(len(prose)))
			for b.Loop() {
				if f.run(prose, false) != len(prose) {
					b.Fatal("the run stopped early")
				}
			}
		})
	}
}
