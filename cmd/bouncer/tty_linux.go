package main

import (
	"os"

	"golang.org/x/sys/unix"
)

// flushTypeAhead discards input typed before a question was shown.
func flushTypeAhead(f *os.File) { _ = unix.IoctlSetInt(int(f.Fd()), unix.TCFLSH, unix.TCIFLUSH) }
