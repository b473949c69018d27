//go:build !unix

package transport

import "syscall"

// procAttr: no process groups here (bouncer run refuses to start without
// Unix; see cmd/bouncer/platform_other.go).
func procAttr() *syscall.SysProcAttr { return nil }
