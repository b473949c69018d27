package transport

import (
	"io"
	"os"
	"sync/atomic"
)

// A Conn grows a pipe it reads or writes to pipeSize bytes the first time
// more than a pipe's default capacity (smallPipe) crosses it at once (a
// frame it reads, a write of one message or of several that queued), and
// only then. Linux charges a pipe's capacity to its user, against
// /proc/sys/fs/pipe-user-pages-soft (64 MiB by default), and once a user
// is over it every new pipe that user makes gets 8 KiB: growing every
// pipe of every proxy up front would spend that budget on sessions that
// never carry a large message, and slow down the user's other programs
// once it is spent. A `bouncer run` whose messages are large both ways
// spends 4 x 448 KiB more than the default (its two pipes to the server,
// the client's two), 2.7% of the default budget; a process grows at most
// maxGrown pipes, so that a listener with many sessions spends no more
// than 12%.
const (
	pipeSize  = 512 << 10
	smallPipe = 64 << 10
	maxGrown  = 16
)

// grown counts the pipes this process has grown.
var grown atomic.Int32

// growOnce grows the pipe behind f (see growPipe) unless the process has
// grown maxGrown already.
func growOnce(f *os.File) {
	if grown.Add(1) <= maxGrown {
		growPipe(f)
	}
}

// pipeOf is the file behind a Conn's reader or writer when there is one,
// a pipe perhaps: what growPipe can grow.
func pipeOf(rw any) *os.File {
	if w, ok := rw.(writerOnly); ok {
		rw = w.Writer
	}
	f, _ := rw.(*os.File)
	return f
}

// writerOnly hides a writer's Close.
type writerOnly struct{ io.Writer }
