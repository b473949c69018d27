//go:build unix

package statefile

import (
	"errors"
	"os"
	"syscall"
)

// SyncDir flushes dir to disk, so that a file created, renamed or removed
// in it stays so after a crash. A file system that cannot flush a
// directory at all (EINVAL, ENOTSUP) is taken as it is: nothing more can
// be done there.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOTSUP) {
		return err
	}
	return nil
}
