//go:build !unix

package main

import (
	"os"
	"runtime"
)

// Without Unix (Windows), bouncer run and the commands that serve it refuse
// to start, each with one line saying why (platform.go).
func init() { refuseUnsupported(runtime.GOOS, os.Stderr) }
