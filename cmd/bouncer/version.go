package main

import "fmt"

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
	fmt.Printf("bouncer %s (commit %s, built %s)\n", version, commit, date)
	return nil
}
