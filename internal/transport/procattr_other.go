//go:build unix && !linux

package transport

import "syscall"

// procAttr puts the upstream in its own process group. Only Linux can also
// have the kernel kill it when the proxy dies.
func procAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
