package taint

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/bouncer-mcp/bouncer/internal/testsupport/need"
)

// gen writes pseudo-random, mostly unique output: words, addresses, URLs,
// handles, numbers and punctuation, in lines. With uni set, about half the
// words are non-ASCII (accented Latin, Cyrillic, Greek, CJK, full-width,
// emoji), as in mixed-language mail.
type gen struct {
	r   *rand.Rand
	uni bool
}

func newGen(seed uint64, uni bool) *gen {
	return &gen{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), uni: uni}
}

var (
	latinExtra = []rune("éèêëàâäôöüûçñßøåæ")
	cyrillic   = []rune("абвгдежзийклмнопрстуфхцчшщыэюя")
	greek      = []rune("αβγδεζηθικλμνξοπρστυφχψω")
	cjk        = []rune("的一是不了人我在有他这中大来上国个到说们为子和你地出道也时年")
	emoji      = []rune("📧🔥✅🚀")
)

func (g *gen) word(b []byte) []byte {
	n := 2 + g.r.IntN(10)
	if g.uni && g.r.IntN(2) == 0 {
		var set []rune
		switch g.r.IntN(5) {
		case 0, 1:
			for i := range n {
				if g.r.IntN(3) == 0 {
					b = utf8.AppendRune(b, latinExtra[g.r.IntN(len(latinExtra))])
				} else {
					b = append(b, byte('a'+g.r.IntN(26)-32*(i&1)))
				}
			}
			return b
		case 2:
			set = cyrillic
		case 3:
			set = greek
		case 4:
			set = cjk
			n = 2 + g.r.IntN(4)
		}
		for range n {
			b = utf8.AppendRune(b, set[g.r.IntN(len(set))])
		}
		if g.r.IntN(20) == 0 {
			b = utf8.AppendRune(b, emoji[g.r.IntN(len(emoji))])
		}
		return b
	}
	for i := range n {
		c := byte('a' + g.r.IntN(26))
		if i == 0 && g.r.IntN(5) == 0 {
			c -= 32
		}
		b = append(b, c)
	}
	return b
}

// fill appends about n bytes of output to b.
func (g *gen) fill(b []byte, n int) []byte {
	end := len(b) + n
	col := 0
	for len(b) < end {
		switch k := g.r.IntN(100); {
		case k < 8:
			b = g.word(b)
			b = append(b, '.')
			b = g.word(b)
			b = append(b, '@')
			b = g.word(b)
			b = append(b, ".com"...)
		case k < 12:
			b = append(b, "https://"...)
			b = g.word(b)
			b = append(b, ".example/"...)
			b = g.word(b)
			b = append(b, "?id="...)
			b = strconv.AppendUint(b, g.r.Uint64N(1<<40), 16)
		case k < 14:
			b = append(b, '@')
			b = g.word(b)
		case k < 18:
			b = strconv.AppendUint(b, g.r.Uint64N(1e9), 10)
		default:
			b = g.word(b)
		}
		switch k := g.r.IntN(100); {
		case k < 8:
			b = append(b, ',')
		case k < 12:
			b = append(b, '.')
		}
		col++
		if col%14 == 0 {
			b = append(b, '\n')
		} else {
			b = append(b, ' ')
		}
	}
	return b
}

func benchRecord(b *testing.B, uni bool) {
	const corpus, piece = 1 << 20, 16 << 10
	text := string(newGen(1, uni).fill(nil, corpus))
	s := NewStore()
	s.Record(text) // warm: later passes record known tokens, as a session re-reading a mailbox would
	b.SetBytes(piece)
	b.ResetTimer()
	off := 0
	cpu := cpuClock()
	for b.Loop() {
		if off+piece > len(text) {
			off = 0
		}
		s.Record(text[off : off+piece])
		off += piece
	}
	reportCPU(b, cpu, piece)
}

// cpuClock returns the process's user+system CPU time. On a shared, loaded
// machine wall-clock MB/s mostly measures the other tenants; the CPU time the
// benchmark itself used is the figure that carries over.
func cpuClock() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports throughput per CPU-second (cpu-MB/s) and CPU ns per op.
func reportCPU(b *testing.B, start time.Duration, bytesPerOp int64) {
	used := cpuClock() - start
	if used <= 0 {
		return
	}
	b.ReportMetric(float64(bytesPerOp)*float64(b.N)/used.Seconds()/1e6, "cpu-MB/s")
}

// BenchmarkRecordASCII records ASCII output. After the first pass over
// the corpus, every piece is one the store recorded before.
func BenchmarkRecordASCII(b *testing.B) { benchRecord(b, false) }

// BenchmarkRecordASCIIFresh records ASCII output the store has never seen
// (the same kind of text as RecordASCII's, from another seed), each piece
// once: the scan itself, which RecordASCII's repeated pieces skip. When
// the 2 MiB corpus is used up, the next pieces go into a new store (made
// with the timer stopped), so the store stays an exact set, as it is for
// the first 6 MB or so of a session's output (the switch to the Bloom
// filter is Memory256MB's).
func BenchmarkRecordASCIIFresh(b *testing.B) {
	const corpus, piece = 1 << 20, 16 << 10
	warm := string(newGen(1, false).fill(nil, corpus))
	text := string(newGen(2, false).fill(nil, 2<<20))
	newStore := func() *Store {
		s := NewStore()
		s.Record(warm)
		return s
	}
	s := newStore()
	b.SetBytes(piece)
	b.ResetTimer()
	off := 0
	var cpu time.Duration
	c0 := cpuClock()
	for i := 0; i < b.N; i++ {
		if off+piece > len(text) {
			b.StopTimer()
			cpu += cpuClock() - c0
			s, off = newStore(), 0
			c0 = cpuClock()
			b.StartTimer()
		}
		s.Record(text[off : off+piece])
		off += piece
	}
	cpu += cpuClock() - c0
	if cpu > 0 {
		b.ReportMetric(float64(piece)*float64(b.N)/cpu.Seconds()/1e6, "cpu-MB/s")
	}
}

// BenchmarkScanASCIIFresh is RecordASCIIFresh's scan alone: the same new
// text cut into tokens and hashed, with no store to insert the hashes into.
// The difference between the two is the store's part (the inserts, and the
// exact set's growth).
func BenchmarkScanASCIIFresh(b *testing.B) {
	const piece = 16 << 10
	text := newGen(2, false).fill(nil, 2<<20)
	sc := &scanner{seed: newKeyed(), min: MinLen}
	b.SetBytes(piece)
	off := 0
	cpu := cpuClock()
	for b.Loop() {
		if off+piece > len(text) {
			off = 0
		}
		sc.hashes = sc.hashes[:0]
		sc.piece(text[off : off+piece])
		off += piece
	}
	reportCPU(b, cpu, piece)
}

// BenchmarkRecordUnicode records output where half the words are non-ASCII.
func BenchmarkRecordUnicode(b *testing.B) { benchRecord(b, true) }

var (
	bigOnce  sync.Once
	bigStore *Store
	bigHeap  uint64 // HeapInuse growth while recording
	bigTotal uint64 // HeapInuse after, whole process
	bigBytes int
	bigCPU   time.Duration // CPU time spent in Record
)

// big records 256 MiB of mostly unique output once per test binary, and
// measures the heap it keeps.
func big() *Store {
	bigOnce.Do(func() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		s := NewStore()
		g := newGen(42, false)
		buf := make([]byte, 0, 1<<20+256)
		for bigBytes < 256<<20 {
			buf = g.fill(buf[:0], 1<<20)
			c0 := cpuClock()
			s.Record(string(buf))
			bigCPU += cpuClock() - c0
			bigBytes += len(buf)
		}
		buf = nil
		runtime.GC()
		runtime.ReadMemStats(&after)
		bigStore, bigHeap, bigTotal = s, after.HeapInuse-before.HeapInuse, after.HeapInuse
	})
	return bigStore
}

// dests are destinations to look up: some recorded (from the same
// generator's first megabyte), some fresh.
func dests() []string {
	return []string{
		"attacker@evil.example", "Attacker+x@Evil.Example.", "https://hooks.example/abc?to=a%40b.com",
		"#general-channel", "@octocatalyst", "someone.else@example.org",
	}
}

func benchSeen(b *testing.B, s *Store) {
	ds := dests()
	b.ResetTimer()
	i := 0
	cpu := cpuClock()
	for b.Loop() {
		s.Seen(ds[i%len(ds)])
		i++
	}
	if used := cpuClock() - cpu; used > 0 {
		b.ReportMetric(float64(used.Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
}

// BenchmarkSeen1KB checks destinations against a store holding 1 KB.
func BenchmarkSeen1KB(b *testing.B) {
	s := NewStore()
	s.Record(string(newGen(42, false).fill(nil, 1<<10)))
	benchSeen(b, s)
}

// BenchmarkSeen256MB checks destinations against a store holding 256 MiB of
// mostly unique output (built once; skipped with -short).
func BenchmarkSeen256MB(b *testing.B) {
	need.Long(b, "256 MiB setup")
	s := big()
	benchSeen(b, s)
}

// BenchmarkMemory256MB reports the heap kept by a store after 256 MiB of
// mostly unique output, and the false-positive rate of fresh lookups.
func BenchmarkMemory256MB(b *testing.B) {
	need.Long(b, "256 MiB setup")
	s := big()
	const probes = 1 << 20
	fp := 0
	var buf []byte
	for i := range probes {
		buf = append(buf[:0], "fresh-probe-"...)
		buf = strconv.AppendInt(buf, int64(i), 36)
		if s.Seen(string(buf)) {
			fp++
		}
	}
	for b.Loop() {
	}
	var rss uint64
	if data, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
				kb, _ := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
				rss = kb << 10
			}
		}
	}
	b.ReportMetric(float64(rss)/(1<<20), "rss-MiB")
	b.ReportMetric(float64(bigHeap)/(1<<20), "store-MiB")
	b.ReportMetric(float64(bigTotal)/(1<<20), "heap-MiB")
	b.ReportMetric(float64(fp)/probes, "false-seen-rate")
	b.ReportMetric(float64(bigBytes)/(1<<20), "recorded-MiB")
	b.ReportMetric(float64(bigBytes)/bigCPU.Seconds()/1e6, "record-cpu-MB/s")
	st := s.Stats()
	b.ReportMetric(float64(st.Hashes)/1e6, "hashes-M")
	b.ReportMetric(float64(st.Bytes)*8/float64(st.Hashes), "bits/hash")
}

// BenchmarkRecordJSON records a tool result as JSON: the text of its content
// blocks and its structuredContent, each string its own piece.
func BenchmarkRecordJSON(b *testing.B) {
	g := newGen(3, false)
	var doc []byte
	doc = append(doc, `{"content":[`...)
	for i := range 64 {
		if i > 0 {
			doc = append(doc, ',')
		}
		doc = append(doc, `{"type":"text","text":"`...)
		doc = g.fill(doc, 256)
		doc = append(doc, `"}`...)
	}
	doc = append(doc, `],"structuredContent":{"items":[`...)
	for i := range 256 {
		if i > 0 {
			doc = append(doc, ',')
		}
		doc = append(doc, `{"from":"`...)
		doc = g.word(doc)
		doc = append(doc, `@example.com","subject":"`...)
		doc = g.word(doc)
		doc = append(doc, `","id":`...)
		doc = strconv.AppendInt(doc, int64(i), 10)
		doc = append(doc, '}')
	}
	doc = append(doc, "]}}"...)
	for i, c := range doc {
		if c == '\n' {
			doc[i] = ' '
		}
	}
	if !json.Valid(doc) {
		b.Fatal("benchmark document is not JSON")
	}
	s := NewStore()
	b.SetBytes(int64(len(doc)))
	cpu := cpuClock()
	for b.Loop() {
		s.RecordJSON(doc)
	}
	reportCPU(b, cpu, int64(len(doc)))
}
