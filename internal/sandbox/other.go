//go:build !linux

package sandbox

import (
	"errors"

	"github.com/elastic/go-seccomp-bpf/arch"
	"github.com/landlock-lsm/go-landlock/landlock"
)

// Elsewhere than Linux there is neither Landlock nor seccomp: Probe
// reports both missing, so Auto applies nothing and says so, and Strict
// refuses. These are never reached; they keep the callers portable.

type filter = []struct{}

var errNotLinux = errors.New("not Linux")

func seccompSupported() error                                   { return errors.New("seccomp needs Linux") }
func nativeArch() (*arch.Info, error)                           { return nil, errNotLinux }
func proxyFilter(*arch.Info, int, int) (filter, error)          { return nil, errNotLinux }
func proxyFilterNet(*arch.Info, int, int, bool) (filter, error) { return nil, errNotLinux }
func upstreamFilter(*arch.Info, bool, bool) (filter, error)     { return nil, errNotLinux }
func loadFilter(filter) error                                   { return errNotLinux }
func loadThreadFilter(filter) error                             { return errNotLinux }
func restrictThread(landlock.Config, []landlock.Rule) error     { return errNotLinux }
