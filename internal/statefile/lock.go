package statefile

import (
	"context"
	"errors"
	"os"
	"time"

	unix "github.com/bouncer-mcp/bouncer/internal/unixshim"
)

// ErrLocked is TryLock's error when another process holds the lock.
var ErrLocked = errors.New("locked by another process")

// lockPoll is how often LockContext tries again.
const lockPoll = 200 * time.Millisecond

// Lock takes an exclusive lock on the lock file path (created 0600 if
// missing), waiting as long as another process holds it. unlock releases
// it; so does the process ending.
func Lock(path string) (unlock func(), err error) {
	f, err := openLock(path)
	if err != nil {
		return nil, err
	}
	if err := flock(f, unix.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	return func() { f.Close() }, nil
}

// TryLock is Lock without the wait: ErrLocked at once if another process
// holds the lock.
func TryLock(path string) (unlock func(), err error) {
	f, err := openLock(path)
	if err != nil {
		return nil, err
	}
	if err := tryLock(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { f.Close() }, nil
}

// LockContext is Lock that gives up with ctx.Err() when ctx ends.
func LockContext(ctx context.Context, path string) (unlock func(), err error) {
	f, err := openLock(path)
	if err != nil {
		return nil, err
	}
	for {
		err := tryLock(f)
		if err == nil {
			return func() { f.Close() }, nil
		}
		if !errors.Is(err, ErrLocked) {
			f.Close()
			return nil, err
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(lockPoll):
		}
	}
}

// LockOpen locks f itself, shared or exclusive, waiting as long as it
// takes; unlock releases the lock and leaves f open. It is for a file that
// is its own lock (the audit log, which its readers lock shared).
func LockOpen(f *os.File, shared bool) (unlock func(), err error) {
	how := unix.LOCK_EX
	if shared {
		how = unix.LOCK_SH
	}
	if err := flock(f, how); err != nil {
		return nil, err
	}
	return func() { unix.Flock(int(f.Fd()), unix.LOCK_UN) }, nil
}

// openLock opens (creating 0600) a lock file, never through a symbolic
// link.
func openLock(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDWR|os.O_CREATE|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0o600)
}

// flock is flock(2), tried again when a signal interrupts the wait.
func flock(f *os.File, how int) error {
	for {
		err := unix.Flock(int(f.Fd()), how)
		if err != unix.EINTR {
			return err
		}
	}
}

func tryLock(f *os.File) error {
	err := flock(f, unix.LOCK_EX|unix.LOCK_NB)
	if errors.Is(err, unix.EWOULDBLOCK) {
		return ErrLocked
	}
	return err
}
