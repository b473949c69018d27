package transport

import (
	"os"

	"golang.org/x/sys/unix"
)

// growPipe asks for a pipe of pipeSize bytes behind f, when f is a pipe.
// A pipe holds 64 KiB by default, so a larger message (a file read, a
// page fetched) crossed it in pieces: the writer blocked at each, and
// each side woke the other once a piece. A message that fits now crosses
// in one write and one read. It is best effort: f may be no pipe (a file,
// a terminal, a socket), and a user over the kernel's
// pipe-user-pages-soft keeps the size it has.
func growPipe(f *os.File) {
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Control(func(fd uintptr) {
		_, _ = unix.FcntlInt(fd, unix.F_SETPIPE_SZ, pipeSize)
	})
}
