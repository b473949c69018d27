package taint

import (
	"strings"
	"testing"
)

// BenchmarkRecordHostile records words built to hit every slow path at
// once: long, full of separators, query syntax and escapes.
func BenchmarkRecordHostile(b *testing.B) {
	for _, c := range []struct{ name, unit string }{
		{"query", "https://a.example/b/c?d=e@f.gh&i=j+k@l.mn#o=p:q/"},
		{"escapes", "%26%2364%3B&#x40;\\u0040&amp;%"},
		{"separators", "<a>(b)[c]'d'\"e\",f;g|h*i`j"},
		{"unicode", "ｆｕｌｌ\u200bwidth—Ⓐﬁ«x»请"},
	} {
		text := strings.Repeat(c.unit, (64<<10)/len(c.unit))
		b.Run(c.name+"/one-word", func(b *testing.B) {
			s := NewStore()
			b.SetBytes(int64(len(text)))
			cpu := cpuClock()
			for b.Loop() {
				s.Record(text)
			}
			reportCPU(b, cpu, int64(len(text)))
		})
		spaced := strings.Repeat(c.unit+" ", (64<<10)/(len(c.unit)+1))
		b.Run(c.name+"/words", func(b *testing.B) {
			s := NewStore()
			b.SetBytes(int64(len(spaced)))
			cpu := cpuClock()
			for b.Loop() {
				s.Record(spaced)
			}
			reportCPU(b, cpu, int64(len(spaced)))
		})
	}
}
