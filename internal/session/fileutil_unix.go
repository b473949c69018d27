//go:build unix

package session

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// lockFile takes an exclusive flock on path (created 0600) until unlock.
func lockFile(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, err
	}
	for {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return func() { f.Close() }, nil
}

// replaceFile writes data to path atomically (0600): a synced temporary
// file renamed over it.
func replaceFile(path string, data []byte) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, ".remembered-*")
	if err != nil {
		return err
	}
	name := tmp.Name()
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		os.Remove(name)
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		os.Remove(name)
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(name)
		return err
	}
	if err := os.Rename(name, path); err != nil {
		os.Remove(name)
		return err
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

// readOwned reads a small file that only this user may write, refusing one
// longer than max bytes (a file cut short would read as another one).
func readOwned(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if err := checkOwnedFile(f, path); err != nil {
		return nil, err
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, max)
	}
	return b, nil
}

// checkOwned refuses a path another user owns or may write: what is in it
// would vouch for destinations or hide taint.
func checkOwned(path string, dir bool) error {
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		return err
	}
	return checkStat(path, &st, dir)
}

func checkOwnedFile(f *os.File, path string) error {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return err
	}
	return checkStat(path, &st, false)
}

func checkStat(path string, st *unix.Stat_t, dir bool) error {
	want := uint32(unix.S_IFREG)
	if dir {
		want = unix.S_IFDIR
	}
	switch {
	case uint32(st.Mode)&unix.S_IFMT != want:
		return fmt.Errorf("%s: not a regular %s", path, map[bool]string{true: "directory", false: "file"}[dir])
	case int(st.Uid) != os.Geteuid():
		return fmt.Errorf("%s: owned by uid %d, not this user", path, st.Uid)
	case st.Mode&0o022 != 0:
		return fmt.Errorf("%s: mode %04o lets others write it", path, st.Mode&0o777)
	}
	return nil
}
