//go:build !linux

package sandbox

import (
	"errors"
	"os"
	"os/exec"
	"runtime"
)

// Elsewhere than Linux there are no user namespaces and no Landlock. On
// macOS the namespace form is a Seatbelt profile (seatbelt.go); elsewhere
// only the argument checks keep a server off Bouncer's files.

const seatbelt = runtime.GOOS == "darwin"

func namespaceName() string {
	if seatbelt {
		return "seatbelt"
	}
	return "namespace"
}

func formUnavailable(f OwnForm) string {
	switch {
	case f == OwnNamespace && seatbelt:
		if _, err := os.Stat(seatbeltPath); err != nil {
			return "no " + seatbeltPath
		}
		return ""
	case f == OwnNamespace:
		return "no user namespaces on " + runtime.GOOS
	case f == OwnLandlock:
		return "no Landlock on " + runtime.GOOS
	}
	return ""
}

var errNoNamespace = errors.New("no user namespaces on " + runtime.GOOS)

func namespaceAttrs(*exec.Cmd) {}

func mountOwn(ownPlan) (ownStatus, error) { return ownStatus{}, errNoNamespace }

func runInit([]string, bool) error { return errNoNamespace }

func guardAround(ownPlan, int) (ownStatus, error) { return ownStatus{}, errNoNamespace }
