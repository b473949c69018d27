package main

import (
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"runtime/trace"
)

// envCPUProfile names a file to write a CPU profile of this bouncer
// process to (go tool pprof reads it): where a slow session's time goes,
// for users and for us (docs/performance.md).
const envCPUProfile = "BOUNCER_CPUPROFILE"

// envTrace names a file to write an execution trace of this bouncer
// process to (go tool trace reads it): when a session is slow but not
// busy, which goroutine waited for what, and each system call and thread
// wake-up on a call's way through (docs/performance.md).
const envTrace = "BOUNCER_TRACE"

// startProfile starts the CPU profile $BOUNCER_CPUPROFILE and the
// execution trace $BOUNCER_TRACE ask for, and returns what ends them and
// writes them out. The variables are taken out of the environment first,
// so that the processes bouncer starts (the upstream server, its own
// helpers) do not write over the same files. The files are opened before
// anything else happens, so the sandbox, applied later, does not stand in
// the way.
func startProfile() (stop func()) {
	stopCPU := startOne(envCPUProfile, "CPU profile", pprof.StartCPUProfile, pprof.StopCPUProfile)
	stopTrace := startOne(envTrace, "execution trace", trace.Start, trace.Stop)
	return func() {
		stopTrace()
		stopCPU()
	}
}

// startOne starts one recording into the file $env names, if it names
// one, and returns what ends it and closes the file.
func startOne(env, what string, start func(io.Writer) error, end func()) (stop func()) {
	path := os.Getenv(env)
	os.Unsetenv(env)
	if path == "" {
		return func() {}
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err == nil {
		if err = start(f); err != nil {
			f.Close()
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "bouncer: %s=%s: no %s is written (%v)\n", env, path, what, err)
		return func() {}
	}
	return func() {
		end()
		if err := f.Close(); err != nil {
			fmt.Fprintf(os.Stderr, "bouncer: %s=%s: %v\n", env, path, err)
		}
	}
}
