//go:build unix

package audit

import (
	"os"

	"golang.org/x/sys/unix"
)

// unlinked reports a file that no longer has a name: removed, or replaced
// by a rename over it. One fstat, no path to walk.
func unlinked(f *os.File) bool {
	var st unix.Stat_t
	return unix.Fstat(int(f.Fd()), &st) == nil && st.Nlink == 0
}
