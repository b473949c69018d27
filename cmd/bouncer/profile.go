package main

import (
	"fmt"
	"os"
	"runtime/pprof"
)

// envCPUProfile names a file to write a CPU profile of this bouncer
// process to (go tool pprof reads it): where a slow session's time goes,
// for users and for us (docs/performance.md).
const envCPUProfile = "BOUNCER_CPUPROFILE"

// startProfile starts the CPU profile $BOUNCER_CPUPROFILE asks for, and
// returns what ends it and writes it out. The variable is taken out of the
// environment first, so that the processes bouncer starts (the upstream
// server, its own helpers) do not write over the same file. The file is
// opened before anything else happens, so the sandbox, applied later,
// does not stand in the way.
func startProfile() (stop func()) {
	path := os.Getenv(envCPUProfile)
	os.Unsetenv(envCPUProfile)
	if path == "" {
		return func() {}
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err == nil {
		err = pprof.StartCPUProfile(f)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "bouncer: %s=%s: no CPU profile is written (%v)\n", envCPUProfile, path, err)
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			fmt.Fprintf(os.Stderr, "bouncer: %s=%s: %v\n", envCPUProfile, path, err)
		}
	}
}
