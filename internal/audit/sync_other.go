//go:build !linux

package audit

import "os"

// datasync flushes the file to disk; only Linux has fdatasync.
func datasync(f *os.File) error { return f.Sync() }
