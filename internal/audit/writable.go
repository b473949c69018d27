package audit

import (
	"errors"
	"fmt"
	"path/filepath"
)

// MinFree is the free space the audit log's file system must have for
// Writable to say the log can take more lines. A full disk fails every
// Append, which denies every call; below this the next long line (a
// mail with its body) may not fit.
const MinFree = 1 << 20

// Writable reports whether the log can take the next calls' lines: it is
// open, nothing it wrote before failed to reach the disk (a failed flush
// or head record fails every later Append), a flush now succeeds, and its
// file system has at least MinFree bytes free. A readiness check asks
// this, so that a replica whose disk filled up stops taking sessions
// instead of denying every call of the ones it takes; it is ready again
// once space is freed, with nothing to restart.
func (l *Log) Writable() error {
	if err := l.Sync(); err != nil {
		return err
	}
	l.mu.Lock()
	headErr := l.headErr
	l.mu.Unlock()
	if headErr != nil {
		return headErr
	}
	free, err := freeBytes(filepath.Dir(l.path))
	if errors.Is(err, errNoStatfs) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("audit %s: its file system's free space: %w", l.path, err)
	}
	if free < MinFree {
		return fmt.Errorf("audit %s: %d bytes free on its file system, under the %d its lines need: free space there (calls are denied while their lines can't be written)", l.path, free, MinFree)
	}
	return nil
}

// errNoStatfs is freeBytes' answer where the system has no statfs.
var errNoStatfs = errors.New("no statfs on this system")
