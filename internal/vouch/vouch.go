// Package vouch is the one table of the ways a destination is vouched for:
// what the user typed, the output of a tool the policy trusts, a whole
// entry of a directory listing, the people of a record the user named, the
// policy's allowlist, a destination a human remembered, and a human's
// approval of one call.
//
// Each way is declared here once, with the name an audit line's dests
// carry (and so bouncer log, bouncer report and policy suggest show),
// whether it wins over taint, whether policy suggest may propose from it,
// and the files it reads. The engine checks the ways in the table's order
// and asks taint between those that win over it and those that don't;
// report and suggest read the names and meanings from here; setup makes
// the files own state (no server may reach them) and the proxy's sandbox
// keeps reading them. A new way is a row here and its own check in the
// engine, nothing else.
package vouch

import "path/filepath"

// The names of the ways, as an audit line's dests[].vouch carries them.
const (
	Allowlist     = "allowlist"
	Prompt        = "prompt"
	Remembered    = "remembered"
	Anchor        = "anchor"
	Directory     = "directory"
	TrustedOutput = "trusted_output"
	Approval      = "approval"
)

// Files in the state directory that ways to vouch read.
const (
	// RememberedFile holds the destinations humans chose to remember.
	RememberedFile = "remembered.json"
	// SessionsDir holds the client sessions: what the user typed, what
	// trusted and directory tools returned and the records anchoring
	// knows, as hashes shared by the proxies of one client.
	SessionsDir = "sessions"
	// PendingFile holds the codes of approvals asked in a terminal
	// (bouncer approve).
	PendingFile = "pending.json"
)

// Way is one way to vouch.
type Way struct {
	// Name is the way's name in audit lines, log, report and suggest.
	Name string
	// Means says what it is, for a person reading a report.
	Means string
	// WinsOverTaint says a destination it vouches for is allowed even
	// when untrusted output held it too. A way that doesn't is asked only
	// for a destination no untrusted output held.
	WinsOverTaint bool
	// Evidence says a destination it vouched for is positive evidence
	// that policy suggest may propose as trusted_destinations: the user
	// typed it, a human said yes to it, or a policy already allows it.
	Evidence bool
	// State lists what the way reads, as names in the state directory:
	// a way reads nothing elsewhere, so the proxy's own sandbox, which
	// keeps the state directory readable, keeps it readable by
	// construction. Policy and trust files, which every command reads
	// before it starts, are not listed: setup has them.
	State []string
	// Was lists the names earlier versions wrote for the same way, so a
	// report over an older log still knows them.
	Was []string
}

// Ways are the ways to vouch: those that win over taint first, in the
// order the engine checks them.
var Ways = []Way{
	{Name: Allowlist, Means: "in the tool's `trusted_destinations`", WinsOverTaint: true, Evidence: true},
	{Name: Prompt, Means: "typed by the user (a prompt line, `bouncer hook prompt`)", WinsOverTaint: true, Evidence: true,
		State: []string{SessionsDir}},
	{Name: Remembered, Means: "remembered by a person for the server (`bouncer trust add`, or \"remember\" ticked when approving in the client)",
		WinsOverTaint: true, Evidence: true, State: []string{RememberedFile}, Was: []string{"human"}},
	{Name: Anchor, Means: "the people of the one record the user named (`anchor_records`)", WinsOverTaint: true,
		State: []string{SessionsDir}},
	{Name: Directory, Means: "a whole entry of a `directory` tool's listing, in an argument of that kind (`sink_kinds`)", WinsOverTaint: true,
		State: []string{SessionsDir}},
	{Name: TrustedOutput, Means: "returned by a tool the policy marks `trusted_output`, and by no untrusted output",
		State: []string{SessionsDir}},
	{Name: Approval, Means: "approved by a human earlier in the session", Evidence: true,
		State: []string{PendingFile}},
}

// Lookup returns the way a name (or a name an earlier version wrote)
// stands for.
func Lookup(name string) (Way, bool) {
	for _, w := range Ways {
		if w.Name == name {
			return w, true
		}
		for _, old := range w.Was {
			if old == name {
				return w, true
			}
		}
	}
	return Way{}, false
}

// Files lists, as absolute paths under stateDir, what the ways to vouch
// read there: Bouncer's own state, which no server may read or write, and
// which the proxy's own sandbox must leave readable. Empty for an empty
// stateDir.
func Files(stateDir string) []string {
	if stateDir == "" {
		return nil
	}
	var out []string
	seen := map[string]bool{}
	for _, w := range Ways {
		for _, f := range w.State {
			p := filepath.Join(stateDir, f)
			if !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	return out
}
