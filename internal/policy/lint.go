package policy

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Lint returns warnings about a policy that loads but does not do what its
// author likely meant, for the server whose tool names are given (nil: the
// server's tools are not known, and only what needs none is checked):
//
//   - a user entry names a tool the server does not have (send_mail for
//     send_email): the entry guards nothing. Not when the name is a tool of
//     a built-in pack that this server shares no tool with: then the entry
//     is for that pack's server, in a policy file several servers load (as
//     bouncer init writes the filesystem server's entries into the file
//     every server of a config loads), and is no mistake;
//   - a user entry replaces a pack's (or an earlier file's) entry whole and
//     drops one of its gates: the destination check, the write paths, or
//     the budget.
//
// bouncer run prints them once the tool list is pinned; bouncer check
// --policy prints them too.
func Lint(p *Policy, tools []string) []string {
	if p == nil {
		return nil
	}
	have := map[string]bool{}
	for _, t := range tools {
		have[t] = true
	}
	var out []string
	for _, name := range p.Names() {
		t, _ := p.Lookup(name)
		if strings.HasPrefix(t.Source, "pack ") {
			continue
		}
		if tools != nil && !have[name] && !otherPacksTool(name, have) {
			out = append(out, fmt.Sprintf("%s: %s: the server has no tool %s%s, so this entry guards nothing",
				t.Source, name, name, suggestTool(name, tools)))
			continue
		}
		if old := p.replaced(name, t); old != nil {
			from := old.Source
			var lost []string
			if old.Exfiltrating && !t.Exfiltrating {
				lost = append(lost, "its sends are no longer checked (exfiltrating: true is gone)")
			}
			if len(old.WriteParams) > 0 && len(t.WriteParams) == 0 {
				lost = append(lost, fmt.Sprintf("its write paths %v are no longer named (write_params is gone)", old.WriteParams))
			}
			if old.MaxCalls != nil && t.MaxCalls == nil {
				lost = append(lost, fmt.Sprintf("its budget of %d calls is gone (max_calls)", *old.MaxCalls))
			}
			if len(old.CountsAs) > 0 && len(t.CountsAs) == 0 {
				lost = append(lost, "what it counts as is gone (counts_as)")
			}
			if len(lost) > 0 {
				out = append(out, fmt.Sprintf("%s: %s replaces the entry of %s whole, and %s; restate those keys in your entry if you meant to keep them",
					t.Source, name, from, strings.Join(lost, "; ")))
			}
		}
	}
	return out
}

// otherPacksTool reports whether name is a tool of a built-in pack none of
// whose tools the server (its tools in have) has: a tool of another server.
func otherPacksTool(name string, have map[string]bool) bool {
	for _, p := range Packs() {
		if !slices.Contains(p.Tools, name) {
			continue
		}
		for _, t := range p.Tools {
			if have[t] {
				return false // this pack's server, without this tool
			}
		}
		return true
	}
	return false
}

// suggestTool names the server's tool closest to name, if one is close.
func suggestTool(name string, tools []string) string {
	sorted := append([]string(nil), tools...)
	sort.Strings(sorted)
	s := suggest(name, sorted)
	if s == "" {
		return ""
	}
	return " (did you mean " + strings.TrimSuffix(strings.TrimPrefix(s, " (did you mean "), "?)") + "?)"
}
