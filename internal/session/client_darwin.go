package session

import (
	"path/filepath"

	"golang.org/x/sys/unix"
)

// readProc reads a process's parent, start time and program with sysctl.
func readProc(pid int) (proc, error) {
	kp, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	if err != nil {
		return proc{}, err
	}
	start := uint64(kp.Proc.P_starttime.Sec)*1_000_000 + uint64(kp.Proc.P_starttime.Usec)
	name := unix.ByteSliceToString(kp.Proc.P_comm[:])
	return proc{ppid: int(kp.Eproc.Ppid), start: start, name: filepath.Base(name)}, nil
}

// alive reports whether the client still runs (same pid, same start).
func alive(c Client) bool {
	p, err := readProc(c.PID)
	return err == nil && p.start == c.Start
}
