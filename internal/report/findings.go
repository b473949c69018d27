package report

import (
	"fmt"
	"sort"
	"strings"
	"unicode"

	"github.com/bouncer-mcp/bouncer/internal/policy"
)

// finding is one thing a reviewer should look at.
type finding struct {
	tool string // the tool's label (with its server when the pack shows several); "" for findings about the whole setup
	text string // Markdown
}

// Words in tool names that mark destructive or file-writing tools. They are
// matched against the name's words (split at _, -, ., / and case changes),
// never as substrings, so "confirm" is not "rm" and "format" is not "rm".
var (
	deleteWords = set("delete", "remove", "rm", "del", "drop", "destroy", "purge", "erase", "wipe", "truncate", "unlink", "revoke", "archive", "trash")
	writeWords  = set("write", "create", "save", "put", "upload", "edit", "move", "rename", "copy", "append", "mkdir")
	pathArgs    = set("path", "paths", "file", "file_path", "filepath", "filename", "dest", "destination", "target", "directory", "dir", "source")
)

func set(w ...string) map[string]bool {
	m := map[string]bool{}
	for _, s := range w {
		m[s] = true
	}
	return m
}

// words splits a tool name into lower-case words.
func words(name string) []string {
	var out []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			out = append(out, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	rs := []rune(name)
	for i, r := range rs {
		switch {
		case !unicode.IsLetter(r) && !unicode.IsDigit(r):
			flush()
		case unicode.IsUpper(r) && i > 0 && unicode.IsLower(rs[i-1]):
			flush()
			cur = append(cur, r)
		default:
			cur = append(cur, r)
		}
	}
	flush()
	return out
}

func anyWord(name string, in map[string]bool) bool {
	for _, w := range words(name) {
		if in[w] {
			return true
		}
	}
	return false
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func findings(in *Input, ctrls []control, sum *summary, multi bool) []finding {
	var out []finding
	add := func(tool, format string, a ...any) { out = append(out, finding{tool, fmt.Sprintf(format, a...)}) }

	if in.Chain != nil && !in.Chain.OK() {
		add("", "The audit log's hash chain is broken (%s): lines were edited, removed or reordered after they were written. Treat the counts in this pack as unreliable and find out who could write the file.", chainText(in.Chain))
	}
	if in.AuditFile != "" && in.Chain != nil && in.Chain.OK() {
		add("", "The hash chain finds edited, removed or reordered lines, but not a log cut short at the end. Keep the head hash (`%s`) somewhere the agent cannot write, and compare it next time with `bouncer audit verify --expect-head`.", in.Chain.Head)
	}
	var fallback []string
	for _, c := range ctrls {
		t, name := c.t, toolLabel(multi, c.server, c.def.Name)
		if c.listed && t.Fallback {
			fallback = append(fallback, name)
		}
		if !c.listed && len(in.Lists) > 0 && !strings.HasPrefix(t.Source, "pack ") {
			add(name, "The policy configures it but the server's tool list doesn't have it: a typo, a renamed tool, or an entry meant for another server. A misspelled entry protects nothing.")
		}
		if t.Exfiltrating && len(t.SinkParams) == 0 {
			add(name, "Sends data but declares no destination argument, so every argument is checked: a subject or body that isn't a vouched destination goes to a human. Declare its recipient arguments in `sink_params`.")
		}
		// Evidence the policy contradicts. A fallback entry is left out:
		// it is derived from the call's argument names, which the pack
		// may not have.
		if !t.Fallback && !t.Exfiltrating && c.ev.sinks > 0 {
			add(name, "The audit lines show the sink gate judged %s of it, but the policy this pack describes doesn't mark it `exfiltrating`: the lines were decided by another policy, or it lost its sink gate since.", plural(c.ev.sinks, "call"))
		}
		if !t.Fallback && !(len(t.WriteParams) > 0 && len(t.AllowedPathPrefixes) > 0) && c.ev.denies["path"] > 0 {
			add(name, "The audit lines show %s, but the policy this pack describes confines none of its paths: the lines were decided by another policy, or a path check that holds whatever the policy says (Bouncer's own files).", plural(c.ev.denies["path"], "`path` denial"))
		}
		if c.listed && len(c.def.Params) > 0 {
			for _, s := range t.SinkParams {
				if !contains(c.def.Params, s) {
					add(name, "`sink_params` names %s, which the tool's schema doesn't have. If no declared sink is in a call, every argument is checked; check the server's real argument names.", code(s))
				}
			}
			for _, w := range t.WriteParams {
				if !contains(c.def.Params, w) {
					add(name, "`write_params` names %s, which the tool's schema doesn't have: the path argument the server really takes is not confined.", code(w))
				}
			}
			// An argument the entry confines as a path (move_file's
			// destination) is where a file goes on disk, not a
			// recipient: the write check judges it.
			var dests []string
			for _, p := range c.def.Params {
				if policy.IsDestinationName(p) && !contains(t.SinkParams, p) && !contains(t.WriteParams, p) {
					dests = append(dests, code(p))
				}
			}
			switch {
			case len(dests) > 0 && !t.Exfiltrating && !t.Fallback:
				add(name, "Has destination-shaped arguments (%s) but its entry (%s) is not `exfiltrating`, so the sink gate is off for it. An override replaces the pack entry whole: restate `exfiltrating` and `sink_params` if it sends anywhere.", strings.Join(dests, ", "), sourceText(t))
			case len(dests) > 0 && t.Exfiltrating && len(t.SinkParams) > 0:
				add(name, "Argument(s) %s look like destinations and are checked, but `sink_params` doesn't list them; list them so the policy says what is checked.", strings.Join(dests, ", "))
			}
			if len(t.WriteParams) == 0 && anyWord(name, writeWords) {
				var paths []string
				for _, p := range c.def.Params {
					if pathArgs[strings.ToLower(p)] {
						paths = append(paths, code(p))
					}
				}
				if len(paths) > 0 {
					add(name, "Looks like it writes files (argument %s) but no path is confined. Set `write_params` and `allowed_path_prefixes`.", strings.Join(paths, ", "))
				}
			}
		}
		switch {
		case len(t.WriteParams) > 0 && len(t.AllowedPathPrefixes) == 0:
			add(name, "`write_params` %s are not confined: there are no `allowed_path_prefixes`, so any path is allowed.", listOrDash(t.WriteParams))
		case len(t.WriteParams) == 0 && len(t.AllowedPathPrefixes) > 0:
			add(name, "`allowed_path_prefixes` is set but `write_params` is empty, so no argument is confined.")
		}
		for _, p := range t.AllowedPathPrefixes {
			switch {
			case !relOK(p):
				add(name, "The path prefix %s is relative; it depends on the directory the proxy starts in. Use an absolute prefix.", code(p))
			case p == "/":
				add(name, "The path prefix `/` admits every path.")
			}
		}
		if t.MaxCalls == nil && anyWord(name, deleteWords) {
			add(name, "Deletes or removes things and has no call budget: a hijacked agent can call it as often as it likes. Set `max_calls` (0 forbids it).")
		}
		for _, d := range t.TrustedDestinations {
			switch {
			case strings.ContainsAny(d, "*?"):
				add(name, "Trusted destination %s looks like a wildcard, but matching is exact: it vouches only for that literal text. List each recipient.", code(d))
			case looksLikeDomain(d):
				add(name, "Trusted destination %s is a bare domain; matching is exact, so it vouches for that text only, not for addresses or URLs under it.", code(d))
			}
		}
	}
	if len(fallback) > 0 {
		add("", "Not covered by any pack or policy file, so their entry is derived from argument names (destination-shaped names become sinks; nothing else is checked): %s. Write an entry for each tool that sends, writes or deletes.", strings.Join(fallback, ", "))
	}
	if n := sum.denies("pinning"); n > 0 {
		add("", "%s denied by `pinning`: a tool that was not in the list at startup, or whose definition changed. Find out whether the server changed its tools mid-session.", plural(n, "call"))
	}
	if n := sum.outcomes[outcomeOrder[len(outcomeOrder)-1]]; n > 0 {
		add("", "%s without an outcome line: the proxy stopped while a human was being asked. No such call was forwarded.", plural(n, "ask"))
	}
	sort.SliceStable(out, func(i, j int) bool {
		if (out[i].tool == "") != (out[j].tool == "") {
			return out[i].tool == ""
		}
		return out[i].tool < out[j].tool
	})
	return out
}

func looksLikeDomain(d string) bool {
	if strings.ContainsAny(d, "@/:# ") || !strings.Contains(d, ".") {
		return false
	}
	for _, r := range d {
		if !(unicode.IsLetter(r) || unicode.IsDigit(r) || r == '.' || r == '-') {
			return false
		}
	}
	return true
}

func (w *writer) findings(fs []finding, pols *policies) {
	w.f("## Findings\n\n")
	if len(fs) == 0 {
		w.f("None.\n\n")
		return
	}
	if pols.other > 0 {
		w.f("The findings about a tool's entry are about the policy this pack describes, which did not decide %d of the lines (see \"Which policy decided the lines\").\n\n", pols.other)
	}
	for _, f := range fs {
		if f.tool == "" {
			w.f("- %s\n", f.text)
		} else {
			w.f("- %s: %s\n", f.tool, f.text)
		}
	}
	w.f("\n")
}
