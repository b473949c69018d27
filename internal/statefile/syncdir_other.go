//go:build !unix

package statefile

// SyncDir does nothing without Unix: Windows has no way to flush a
// directory, and a rename there is as durable as the file system makes it.
func SyncDir(dir string) error { return nil }
