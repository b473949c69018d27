//go:build unix

package unixshim

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// Stat_t is unix.Stat_t; SysStat is what os.FileInfo.Sys returns here.
type (
	Stat_t  = unix.Stat_t
	SysStat = syscall.Stat_t
)

const (
	O_CLOEXEC   = unix.O_CLOEXEC
	O_NOFOLLOW  = unix.O_NOFOLLOW
	O_NONBLOCK  = unix.O_NONBLOCK
	S_IFMT      = unix.S_IFMT
	S_IFDIR     = unix.S_IFDIR
	S_IFREG     = unix.S_IFREG
	LOCK_EX     = unix.LOCK_EX
	LOCK_SH     = unix.LOCK_SH
	LOCK_NB     = unix.LOCK_NB
	LOCK_UN     = unix.LOCK_UN
	EINTR       = unix.EINTR
	EWOULDBLOCK = unix.EWOULDBLOCK
	ENOENT      = unix.ENOENT
	ENOSYS      = unix.ENOSYS
	EOPNOTSUPP  = unix.EOPNOTSUPP
	EPERM       = unix.EPERM
)

func Fstat(fd int, st *Stat_t) error     { return unix.Fstat(fd, st) }
func Stat(path string, st *Stat_t) error { return unix.Stat(path, st) }
func Flock(fd int, how int) error        { return unix.Flock(fd, how) }
