//go:build !linux

package sandbox

import (
	"errors"
	"os/exec"
	"syscall"
)

// Spawner needs Linux; elsewhere Spawn always fails and callers start
// servers as bouncer run does.
type Spawner struct{}

// SpawnerUnavailable says why this system can't use the spawner.
func SpawnerUnavailable() string { return "the spawner needs Linux" }

// Spawn fails: there is no spawner here.
func (*Spawner) Spawn(*exec.Cmd) (*Child, error) { return nil, errors.New(SpawnerUnavailable()) }

// Close does nothing.
func (*Spawner) Close() error { return nil }

// Child is never made here.
type Child struct{}

// Pid is -1.
func (*Child) Pid() int { return -1 }

// Signal fails.
func (*Child) Signal(syscall.Signal) error { return syscall.ESRCH }

// Wait fails.
func (*Child) Wait() error { return errNotLinux }

func runSpawner() error { return errNotLinux }
