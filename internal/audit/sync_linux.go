package audit

import (
	"os"

	"golang.org/x/sys/unix"
)

// datasync flushes the file's data (not its metadata times) to disk.
func datasync(f *os.File) error { return unix.Fdatasync(int(f.Fd())) }
