//go:build unix

package procgroup

import (
	"syscall"
	"time"
)

// Gone reports whether no process is left in the process group pgid,
// waiting up to two seconds for the last ones to go.
func Gone(pgid int) bool {
	for i := 0; i < 100; i++ {
		if syscall.Kill(-pgid, 0) != nil {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}
