package sandbox

import (
	"fmt"
	"os/exec"
	"strings"
)

// On macOS the strongest form is a Seatbelt profile: sandbox-exec runs
// the server under "(allow default)" with deny rules for the own files,
// which says "everything but these paths" directly. Seatbelt matches a
// path once its links are resolved (/var/folders is /private/var/folders
// there), so the rules name what pins resolves to, and every directory
// and link the resolution passes through may be neither removed nor
// replaced, as the mount namespace pins them on Linux. This is untested
// on a Mac: the profile is built and checked here, on every system, as
// text.

// seatbeltPath is where macOS keeps sandbox-exec.
const seatbeltPath = "/usr/bin/sandbox-exec"

// seatbeltProfile is the profile for the planned pins.
func seatbeltProfile(ps []pin) (string, error) {
	var b strings.Builder
	b.WriteString("(version 1)\n(allow default)\n")
	for _, p := range ps {
		q, err := sbplString(p.Path)
		if err != nil {
			return "", err
		}
		switch p.Kind {
		case pinDir, pinLink:
			// Not removed, renamed, or replaced by another entry;
			// what lies in a directory is the server's to change.
			fmt.Fprintf(&b, "(deny file-write-unlink file-write-create (literal %s))\n", q)
		case pinReadOnly:
			fmt.Fprintf(&b, "(deny file-write* (subpath %s))\n", q)
		case pinHidden:
			fmt.Fprintf(&b, "(deny file-read* file-write* (subpath %s))\n", q)
		}
	}
	return b.String(), nil
}

// sbplString quotes s as a string of the profile language. A path with a
// control character is refused rather than guessed at.
func sbplString(s string) (string, error) {
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return "", fmt.Errorf("seatbelt: the path %q has a control character", s)
		}
	}
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`, nil
}

// seatbeltCommand wraps the server's command line (or the launcher's, when
// the sandbox key confines it too) in sandbox-exec with the profile that
// keeps it off o.
func seatbeltCommand(o OwnFiles, argv []string, p launchPlan, launcher func(launchPlan) (string, []string, error)) (string, []string, func(*exec.Cmd), error) {
	ps, _, err := pins(o, nil)
	if err != nil {
		return "", nil, nil, err
	}
	profile, err := seatbeltProfile(ps)
	if err != nil {
		return "", nil, nil, err
	}
	inner := argv
	if p.Confine {
		path, args, err := launcher(p)
		if err != nil {
			return "", nil, nil, err
		}
		inner = append([]string{path}, args...)
	}
	return seatbeltPath, append([]string{"-p", profile}, inner...), nil, nil
}
