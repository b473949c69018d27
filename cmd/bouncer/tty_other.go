//go:build unix && !linux

package main

import (
	"os"

	"golang.org/x/sys/unix"
)

// fread is FREAD of <sys/fcntl.h>: TIOCFLUSH with it drops pending input.
const fread = 0x1

// flushTypeAhead discards input typed before a question was shown.
func flushTypeAhead(f *os.File) {
	_ = unix.IoctlSetPointerInt(int(f.Fd()), unix.TIOCFLUSH, fread)
}
