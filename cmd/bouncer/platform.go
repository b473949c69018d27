package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
)

// Bouncer runs on Linux and macOS. Elsewhere (Windows) it builds, so that
// the offline commands work for policy authors there, but the proxy and
// everything that serves a running proxy refuse to start: they rest on the
// kernel sandbox, process groups, and the file locking, ownership and
// permission checks that keep the audit log and the approval codes
// trustworthy, none of which Bouncer has on Windows. platform_other.go
// applies this at startup where there is no Unix.

// unsupportedOffUnix are the commands that refuse without Unix, and why each
// would not work.
var unsupportedOffUnix = map[string]string{
	"run":     "bouncer run needs Linux or macOS (its kernel sandbox, the upstream's process group, and the locked, private audit log and approval codes)",
	"approve": "there is no bouncer run here whose calls could need approving",
	"pending": "there is no bouncer run here whose calls could need approving",
	"trust":   "remembered destinations are for bouncer run, which needs Linux or macOS",
	"init":    "it would point your MCP client at bouncer run, which needs Linux or macOS",
	"doctor":  "bouncer run and its kernel sandbox need Linux or macOS",
	"hook":    "the prompt hook records prompts for bouncer run, which needs Linux or macOS",
}

// refuseUnsupported replaces each command of unsupportedOffUnix with one
// that prints, to w, a single line saying the platform (GOOS) is not
// supported, why, what to do instead and which commands do work, and exits
// 1 (the command refused). The prompt hook exits 0 after saying so: it must
// never block the client's prompt.
func refuseUnsupported(goos string, w io.Writer) {
	platform := goos
	if goos == "windows" {
		platform = "Windows"
	}
	var works []string
	for name, c := range commands {
		if _, refused := unsupportedOffUnix[name]; !refused && !c.hidden {
			works = append(works, name)
		}
	}
	sort.Strings(works)
	for name, why := range unsupportedOffUnix {
		c, ok := commands[name]
		if !ok {
			continue
		}
		status := exitFail
		if name == "hook" {
			status = exitOK
		}
		msg := fmt.Sprintf("bouncer: %s is not supported: %s. Run Bouncer under WSL 2 or in a Linux container (docs/install.md). Here, only these commands work: %s.\n",
			platform, why, strings.Join(works, ", "))
		c.run = func([]string) error {
			fmt.Fprint(w, msg)
			if status == exitOK {
				return nil
			}
			return silently(status)
		}
		commands[name] = c
	}
}
