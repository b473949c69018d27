package session

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// readProc reads a process's parent, start time and program from /proc.
func readProc(pid int) (proc, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return proc{}, err
	}
	// pid (comm) state ppid ... ; comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return proc{}, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	fields := strings.Fields(string(b[i+1:]))
	if len(fields) < 20 {
		return proc{}, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	ppid, err1 := strconv.Atoi(fields[1])
	start, err2 := strconv.ParseUint(fields[19], 10, 64)
	if err1 != nil || err2 != nil {
		return proc{}, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	p := proc{ppid: ppid, start: start}
	if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err == nil {
		p.name = filepath.Base(strings.TrimSuffix(exe, " (deleted)"))
	} else if j := bytes.IndexByte(b, '('); j >= 0 && j < i {
		p.name = string(b[j+1 : i])
	}
	if cl, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); err == nil {
		p.args = strings.Split(strings.TrimSuffix(string(cl), "\x00"), "\x00")
	}
	return p, nil
}

// alive reports whether the client still runs (same pid, same start).
func alive(c Client) bool {
	p, err := readProc(c.PID)
	return err == nil && p.start == c.Start
}
