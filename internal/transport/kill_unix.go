//go:build unix

package transport

import "syscall"

// kill is syscall.Kill (a negative pid signals that process group).
func kill(pid int, sig syscall.Signal) error { return syscall.Kill(pid, sig) }
