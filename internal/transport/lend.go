package transport

import (
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Frames of large answers are lent, not given: the reader of a Conn may
// hand an answer back (GiveBack) once nothing reads its bytes any more,
// and the next large frame is read into them. Without it every large
// result is a new allocation, read into cold memory, and the garbage
// collector runs every few dozen of them (see docs/performance.md).
//
// Whoever gives an answer back must be done with every byte of it: the
// next frame overwrites them. A loan that is never given back costs
// nothing but the reuse; the collector frees it as it would any frame.
const (
	// lendMin is the least frame lent: smaller ones cost less to allocate
	// than to track.
	lendMin = 32 << 10
	// lendSlots is how many loans are remembered; an older one is
	// forgotten (and its frame left to the collector).
	lendSlots = 8
	// maxSpares is how many given-back frames wait to be read into.
	maxSpares = 2
)

// loan is a frame lent with the answer decoded from it.
type loan struct {
	m     *jsonrpc.Response
	frame []byte
}

// lender keeps a Conn's loans and the frames given back.
type lender struct {
	mu     sync.Mutex
	loans  [lendSlots]loan
	next   int // the slot the next loan takes
	spares [][]byte
}

// lend remembers that m was decoded from frame, which is all m's: a
// frame of one answer, alone in it.
func (l *lender) lend(m *jsonrpc.Response, frame []byte) {
	l.mu.Lock()
	l.loans[l.next] = loan{m, frame}
	l.next = (l.next + 1) % lendSlots
	l.mu.Unlock()
}

// giveBack takes m's frame back, if it was lent and is still remembered.
func (l *lender) giveBack(m *jsonrpc.Response) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := range l.loans {
		if l.loans[i].m == m {
			if len(l.spares) < maxSpares {
				l.spares = append(l.spares, l.loans[i].frame[:0])
			}
			l.loans[i] = loan{}
			return
		}
	}
}

// spare returns a given-back frame that holds n bytes, emptied, or nil.
func (l *lender) spare(n int) []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, s := range l.spares {
		if cap(s) >= n {
			l.spares[i] = l.spares[len(l.spares)-1]
			l.spares[len(l.spares)-1] = nil
			l.spares = l.spares[:len(l.spares)-1]
			return s
		}
	}
	return nil
}

// GiveBack hands back an answer Read returned, once the caller and
// everyone it gave the answer to are done with its bytes: the frame it
// was read from may then be read into again. Any other message, an answer
// given back before, or one Read did not lend, is passed over.
func (c *Conn) GiveBack(m jsonrpc.Message) {
	// An error's answer, or one whose result is shorter than the least
	// frame lent, was never lent: passed over without the lock.
	if r, ok := m.(*jsonrpc.Response); ok && r != nil && r.Error == nil && len(r.Result) >= minLentResult {
		c.lent.giveBack(r)
	}
}

// minLentResult is the least result of a lent answer: its frame, at least
// lendMin bytes, holds the envelope too, which is far shorter than this
// margin. (An answer with a longer envelope only loses the reuse.)
const minLentResult = lendMin - 1<<10
