package transport

import "syscall"

// procAttr puts the upstream in its own process group (so stopping it
// signals everything it started) and kills it if the proxy dies.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{
		Setpgid:   true,
		Pdeathsig: syscall.SIGKILL, // nothing outlives a killed proxy
	}
}
