package main

import (
	"fmt"
	"runtime/debug"
)

// Set by the release build with -ldflags "-X main.version=... -X main.commit=... -X main.date=...".
var (
	version = "dev"
	commit  = "none"
	date    = "unknown"
)

func cmdVersion(args []string) error {
	fs, _ := newFlags("version", "bouncer version")
	if done, err := parseFlags(fs, args); done {
		return err
	}
	if fs.NArg() > 0 {
		return usageErr("%s", "version takes no arguments")
	}
	bi, _ := debug.ReadBuildInfo()
	fmt.Println(versionLine(version, commit, date, bi))
	return nil
}

// versionLine is what bouncer version prints: the version, commit and
// build date the release build set, or, where it set none (go build or go
// install from a clone), what the Go toolchain recorded in the binary: the
// commit it was built from, with that commit's time (a build date is not
// recorded), or the module's version when it was installed as a module.
// A build with -buildvcs=false (as CI's) or outside a git clone (from an
// archive, or in a git worktree, which Go does not stamp) records no
// commit, and the line says so.
func versionLine(version, commit, date string, bi *debug.BuildInfo) string {
	if commit != "none" {
		return fmt.Sprintf("bouncer %s (commit %s, built %s)", version, commit, date)
	}
	var rev, at string
	modified := false
	if bi != nil {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.time":
				at = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	if rev == "" {
		if bi != nil && version == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			version = bi.Main.Version // go install MODULE@VERSION
		}
		return fmt.Sprintf("bouncer %s (no commit recorded: built with -buildvcs=false, or not in a git clone)", version)
	}
	line := fmt.Sprintf("bouncer %s (commit %s", version, rev)
	if modified {
		line += " with uncommitted changes"
	}
	if at != "" {
		line += ", committed " + at
	}
	return line + ")"
}
