package initplan

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/bouncer-mcp/bouncer/internal/mcpconfig"
)

// Launcher is what init knows of the bouncer a wrapped entry is to start:
// this binary, and the one a PATH lookup finds.
type Launcher struct {
	// self is this binary's absolute path, symbolic links resolved; ""
	// when unknown.
	self string
	// goRun: self is a build of `go run`, in a temporary directory that
	// is removed when it exits.
	goRun bool
	// onPath is what a lookup of "bouncer" on PATH finds, absolute; ""
	// when nothing.
	onPath string
	// isSelf: onPath is this binary (by path, link or copy of the same
	// file).
	isSelf bool
}

// FindLauncher looks at this binary and at what PATH finds as bouncer.
func FindLauncher() Launcher {
	var l Launcher
	if exe, err := os.Executable(); err == nil {
		if r, err := filepath.EvalSymlinks(exe); err == nil {
			exe = r
		}
		l.self = exe
		l.goRun = goRunBuild(exe)
	}
	if p, err := exec.LookPath("bouncer"); err == nil {
		if abs, err := filepath.Abs(p); err == nil {
			l.onPath = abs
			l.isSelf = sameFile(abs, l.self)
		}
	}
	return l
}

// goRunBuild reports whether the binary at path was built by `go run`:
// it lives in DIR/go-buildNNN/bNNN/exe/, which go run removes on exit.
func goRunBuild(path string) bool {
	exe := filepath.Dir(path)
	b := filepath.Dir(exe)
	return filepath.Base(exe) == "exe" && strings.HasPrefix(filepath.Base(b), "b") &&
		strings.HasPrefix(filepath.Base(filepath.Dir(b)), "go-build")
}

func sameFile(a, b string) bool {
	if a == "" || b == "" {
		return false
	}
	fa, err1 := os.Stat(a)
	fb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(fa, fb)
}

const installHint = "install bouncer first (in the clone: go install ./cmd/bouncer, which puts it in $(go env GOPATH)/bin; or a release binary), then run bouncer init again"

// Command decides what the wrapped entries (and the prompt hook) of the
// config t launch, and says why; an error when nothing init may write
// would start this binary. The rule: "bouncer" only where the client's
// lookup of that name finds this very binary, else this binary by its
// absolute path, so that what init wrote is what the client starts.
//
//   - A user's file of an app (mcpconfig.Client.Desktop: Claude Desktop,
//     Cursor, VS Code) gets the absolute path whatever PATH holds here:
//     launched from the Dock or a desktop menu, the app may not have the
//     PATH of the shell init runs in. Where PATH finds this binary by a
//     link, the path is the link's, which a package manager's upgrade
//     moves along.
//   - Any other file, a project's included, gets "bouncer" when PATH finds
//     this binary, else the absolute path: when PATH finds no bouncer, and
//     when it finds another one, because the entries and the policy are
//     what this binary wrote and knows how to run. A project's file is
//     shared, and init says that a path of this machine is in it.
//
// A go run build is never written: its directory is gone once it exits.
func (l Launcher) Command(t mcpconfig.Found) (command, why string, err error) {
	project := t.Workspace != ""
	app := !project && t.Client.Desktop()
	if l.isSelf && !app {
		return "bouncer", "found on PATH (" + l.onPath + ")", nil
	}
	var reason string
	switch {
	case app:
		reason = fmt.Sprintf("%s is an app, and an app started from the Dock or a desktop menu may not see your shell's PATH", t.Client)
	case l.onPath != "":
		reason = fmt.Sprintf("bouncer on PATH is %s, another binary than the one that ran init and wrote these entries (to launch that one, run its own bouncer init)", l.onPath)
	default:
		reason = "bouncer is not on PATH"
	}
	if l.self == "" {
		if l.onPath == "" {
			return "", "", fmt.Errorf("%s, and the path of the binary that ran init is unknown, so no entry init writes would start it; %s", reason, installHint)
		}
		if app {
			return l.onPath, reason + "; the path of the binary that ran init is unknown, so they name the one on PATH", nil
		}
		return "bouncer", "the path of the binary that ran init is unknown; on PATH bouncer is " + l.onPath, nil
	}
	if l.goRun {
		return "", "", fmt.Errorf("%s, so the entries would name this binary by its path, but go run built it in a temporary directory that is removed when it exits; %s", reason, installHint)
	}
	path := l.self
	if l.isSelf {
		path = l.onPath
	}
	why = reason + ", so they name it by its absolute path; if you move it, run bouncer init again"
	if project {
		why += ". This is a project's file: if you commit it, everyone needs bouncer at that path; put bouncer on PATH and run bouncer init again to write \"bouncer\" instead"
	}
	return path, why, nil
}

// Relaunch reports whether init replaces cur, the command of an entry (or
// prompt hook) of the file t that was wrapped before, with command, the
// one it now chooses: where cur no longer starts this binary for the
// client (stale), and in a project's file an absolute path where
// "bouncer" now does. A command that isn't bouncer's (by name) and exists
// is the user's own wrapper, left alone.
func (l Launcher) Relaunch(t mcpconfig.Found, cur, command string) bool {
	if cur == command || l.self == "" || l.goRun {
		return false // no better command to give
	}
	base := filepath.Base(cur)
	_, statErr := os.Stat(cur)
	if base != "bouncer" && base != "bouncer.exe" && !(filepath.IsAbs(cur) && statErr != nil) {
		return false
	}
	if t.Workspace != "" && command == "bouncer" && filepath.IsAbs(cur) {
		return true // a shared file names no path when it needn't
	}
	return l.stale(t, cur)
}

// stale reports whether cur no longer starts this binary for the client of
// t: a bouncer that is gone, one the client can't find (a bare name in an
// app's user file, or a name PATH doesn't find), or another binary.
func (l Launcher) stale(t mcpconfig.Found, cur string) bool {
	resolved := cur
	if !filepath.IsAbs(cur) {
		if t.Workspace == "" && t.Client.Desktop() {
			return true
		}
		p, err := exec.LookPath(cur)
		if err != nil {
			return true
		}
		resolved = p
	}
	return !sameFile(resolved, l.self)
}
