//go:build !unix

package unixshim

import "syscall"

// Stat_t has the fields Bouncer reads; nothing ever fills it in here.
type Stat_t struct {
	Dev  uint64
	Ino  uint64
	Mode uint32
	Uid  uint32
	Gid  uint32
	Size int64
}

// SysStat is never what os.FileInfo.Sys returns here, so a type assertion
// to it fails, as it should.
type SysStat struct {
	Dev uint64
	Ino uint64
	Uid uint32
	Gid uint32
}

// The values are Linux's; the O_ flags are 0 because os.OpenFile must
// accept them.
const (
	O_CLOEXEC   = 0
	O_NOFOLLOW  = 0
	O_NONBLOCK  = 0
	S_IFMT      = 0o170000
	S_IFDIR     = 0o040000
	S_IFREG     = 0o100000
	LOCK_SH     = 1
	LOCK_EX     = 2
	LOCK_NB     = 4
	LOCK_UN     = 8
	EINTR       = syscall.EINTR
	EWOULDBLOCK = syscall.EWOULDBLOCK
	ENOENT      = syscall.ENOENT
	ENOSYS      = syscall.ENOSYS
	EOPNOTSUPP  = syscall.EOPNOTSUPP
	EPERM       = syscall.EPERM
)

func Fstat(int, *Stat_t) error   { return ErrUnsupported }
func Stat(string, *Stat_t) error { return ErrUnsupported }
func Flock(int, int) error       { return ErrUnsupported }
