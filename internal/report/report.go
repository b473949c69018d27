// Package report writes the review pack: a Markdown document for a security
// reviewer that lists every tool of each server with the controls Bouncer
// puts on it, summarises the audit log for a period by server, lists
// findings (gaps in the policy that a reviewer should look at), states
// plainly what Bouncer enforces and what it does not, and maps the controls
// to the OWASP Top 10 for LLM Applications 2025 and, by topic, to AIUC-1,
// each row pointing at its evidence and naming the gap left to the user.
//
// The pack describes one policy, the one it is given, but the lines may
// have been decided by others: each line names its server and the digest
// of the policy that decided it, and the pack groups by both and says
// which lines another policy decided. What the lines show was enforced (a
// path denial, a taint deny, a vouch) is read from their structured fields
// (rule, taint, dests), never from the text of their reasons, and counts
// whichever policy decided it.
//
// The output depends only on its inputs (the generation date is one of
// them) and every list in it is sorted, so two runs over the same files give
// the same bytes and a pack can be diffed from one review to the next.
// Values that came from the agent or the server (tool names, arguments,
// destinations, reasons) are escaped by the one display escaper, as bouncer
// log shows them, and printed inside code spans, so Markdown or HTML in them
// is shown, not rendered, and can't add a cell to a table.
package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/bouncer-mcp/bouncer/internal/audit"
	"github.com/bouncer-mcp/bouncer/internal/display"
	"github.com/bouncer-mcp/bouncer/internal/policy"
)

// ToolDef is one tool of the server's tools/list result.
type ToolDef struct {
	Name        string
	Description string
	Params      []string // the input schema's property names, sorted
}

// ParseTools reads a saved tools/list result, {"tools": [...]}.
func ParseTools(data []byte) ([]ToolDef, error) {
	var doc struct {
		Tools *[]struct {
			Name        *string `json:"name"`
			Description string  `json:"description"`
			InputSchema struct {
				Properties map[string]json.RawMessage `json:"properties"`
			} `json:"inputSchema"`
		} `json:"tools"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("not a tools/list result: %v", err)
	}
	if doc.Tools == nil {
		return nil, fmt.Errorf(`not a tools/list result: no "tools" list`)
	}
	seen := map[string]bool{}
	var out []ToolDef
	for i, t := range *doc.Tools {
		if t.Name == nil || *t.Name == "" {
			return nil, fmt.Errorf("tools[%d] has no name", i)
		}
		if seen[*t.Name] {
			return nil, fmt.Errorf("tool %q is listed twice", *t.Name)
		}
		seen[*t.Name] = true
		d := ToolDef{Name: *t.Name, Description: t.Description}
		for p := range t.InputSchema.Properties {
			d.Params = append(d.Params, p)
		}
		sort.Strings(d.Params)
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// ToolList is one tools/list result: the list `bouncer run` pinned for a
// server, or a file given with --tools.
type ToolList struct {
	// Server is the server the list is of (bouncer run's --name); "" for
	// a --tools file given without --name, which names no server.
	Server string
	// File is where the list was read from.
	File  string
	Tools []ToolDef
	// Pack is the built-in pack that applies to the server (the one bouncer
	// run recognized, or --pack); "" for none.
	Pack string
}

// Input is everything a pack is written from.
type Input struct {
	// Policy is the policy files' entries; each server's tools are
	// described under it as it applies to that server (ForServer with the
	// server's pack, from its tool list), as its proxy looks them up.
	Policy *policy.Policy
	// PolicyFiles are the user policy files, as given; none means the
	// built-in packs alone.
	PolicyFiles []string
	// PolicyDigest is Policy's digest as `bouncer run` writes it in every
	// audit line (policy.Policy.Digest with this binary's version): the
	// lines with another digest were decided by another policy. "" when
	// not known.
	PolicyDigest string
	// Lists are the tool lists, each of one server (or of none).
	Lists []ToolList
	// Server limits the audit summary to lines of this --name; "" takes all.
	Server    string
	AuditFile string // "" when there is no log
	Audit     []audit.Entry
	// Chain is the hash chain's verification; nil when there is no log.
	Chain *audit.Report
	// Since and Until bound the period by date (UTC), both inclusive; a
	// zero value leaves that side open.
	Since, Until time.Time
	// Generated is the date printed as the pack's date.
	Generated time.Time
}

// control is one tool's row: its entry under the policy the pack
// describes, and what the audit lines show was enforced on it.
type control struct {
	// server is the server whose tool it is, as its tool list or its audit
	// lines say; "" for a tool no server is named for.
	server string
	def    ToolDef
	listed bool // in a tools list (false: only the policy or the log names it)
	t      *policy.Tool
	ev     evidence
	// guarded: a control beyond pinning applies, by the policy given or
	// as the lines show.
	guarded bool
}

// evidence is what a tool's enforced audit lines show of its controls,
// whatever the policy the pack describes says: a path denial proves that
// its paths were confined, whichever policy decided it. Lines written in
// observe mode prove nothing was enforced and are left out.
type evidence struct {
	denies map[string]int // rule → enforced deny lines
	sinks  int            // enforced lines on which the sink gate judged the call
}

// guards reports whether the lines show a control beyond pinning in force.
func (ev evidence) guards() bool {
	return ev.sinks > 0 || ev.denies["path"] > 0 || ev.denies["pattern"] > 0 || ev.denies["budget"] > 0
}

// text is the evidence cell: "2 `path` denials; sink gate on 3 calls".
func (ev evidence) text() string {
	var parts []string
	for _, r := range slices.Sorted(maps.Keys(ev.denies)) {
		parts = append(parts, fmt.Sprintf("%d %s denial%s", ev.denies[r], code(r), pluralS(ev.denies[r])))
	}
	if ev.sinks > 0 {
		parts = append(parts, fmt.Sprintf("sink gate on %s", plural(ev.sinks, "call")))
	}
	if len(parts) == 0 {
		return "—"
	}
	return strings.Join(parts, "; ")
}

// group is the tools of one server, as the tool lists and the audit lines
// place them.
type group struct {
	server string   // "" for the tools no server is named for
	files  []string // the tool lists read for it
	ctrls  []control
}

// groups places every tool the pack shows under its server: the tools of
// each list, the tools the audit lines name (under the server of the
// line), and, when no list was given, the tools the policy files name.
func (in *Input) groups(entries []audit.Entry) []group {
	key := func(server, tool string) tuple { return tuple{server, tool} }
	byKey := map[tuple]*control{}
	files := map[string][]string{}
	listed := map[string]bool{}  // servers with a tool list
	packs := map[string]string{} // server → the pack that applied to it
	for _, l := range in.Lists {
		listed[l.Server] = true
		if l.Pack != "" {
			packs[l.Server] = l.Pack
		}
		files[l.Server] = append(files[l.Server], l.File)
		for _, d := range l.Tools {
			byKey[key(l.Server, d.Name)] = &control{server: l.Server, def: d, listed: true}
		}
	}
	// A tool the audit log names is shown too, under the server the line
	// names: a pack must not say "0 tools" beside that tool's denials.
	for _, e := range entries {
		if e.Tool == "" {
			continue
		}
		k := key(e.Server, e.Tool)
		if byKey[k] == nil && !listed[e.Server] && byKey[key("", e.Tool)] != nil {
			// A --tools list that names no server has the tool.
			k = key("", e.Tool)
		}
		c := byKey[k]
		if c == nil {
			c = &control{server: e.Server, def: ToolDef{Name: e.Tool}}
			byKey[k] = c
		}
		if e.Observed() {
			continue
		}
		if e.Verdict == "deny" {
			if c.ev.denies == nil {
				c.ev.denies = map[string]int{}
			}
			c.ev.denies[ruleName(e.Rule)]++
		}
		if e.Rule == "sink" || len(e.Dests) > 0 || e.Taint != nil {
			c.ev.sinks++
		}
	}
	if len(in.Lists) == 0 {
		// No tools list: show what the user's files name. The packs'
		// entries for other servers' tools would only bury them.
		seen := map[string]bool{}
		for _, c := range byKey {
			seen[c.def.Name] = true
		}
		for _, n := range in.Policy.Names() {
			if t := in.Policy.For(n, nil); !seen[n] && !strings.HasPrefix(t.Source, "pack ") {
				byKey[key("", n)] = &control{def: ToolDef{Name: n}}
			}
		}
	}
	byServer := map[string]*group{}
	for _, c := range byKey {
		// The entry the server's proxy looks up: the policy files' over
		// the server's own pack, and no other server's. (A pack this
		// binary does not know, ForServer's error, leaves the files'.)
		view, err := in.Policy.ForServer(packs[c.server])
		if err != nil {
			view, _ = in.Policy.ForServer("")
		}
		c.t = view.For(c.def.Name, c.def.Params)
		c.guarded = guarded(c.t) || c.ev.guards()
		g := byServer[c.server]
		if g == nil {
			g = &group{server: c.server, files: files[c.server]}
			byServer[c.server] = g
		}
		g.ctrls = append(g.ctrls, *c)
	}
	for s := range files {
		if byServer[s] == nil {
			byServer[s] = &group{server: s, files: files[s]}
		}
	}
	var out []group
	for _, g := range byServer {
		sort.Slice(g.ctrls, func(i, j int) bool { return g.ctrls[i].def.Name < g.ctrls[j].def.Name })
		sort.Strings(g.files)
		out = append(out, *g)
	}
	// Named servers by name, then the tools no server is named for.
	sort.Slice(out, func(i, j int) bool {
		if (out[i].server == "") != (out[j].server == "") {
			return out[j].server == ""
		}
		return out[i].server < out[j].server
	})
	return out
}

// all flattens the groups' controls.
func all(gs []group) []control {
	var out []control
	for _, g := range gs {
		out = append(out, g.ctrls...)
	}
	return out
}

// guarded reports whether the policy puts any control beyond pinning on t.
func guarded(t *policy.Tool) bool {
	return t.Exfiltrating || (len(t.WriteParams) > 0 && len(t.AllowedPathPrefixes) > 0) || len(t.ArgPatterns) > 0 || t.MaxCalls != nil
}

// Write writes the pack to a buffer and returns it.
func Write(in Input) []byte {
	var b bytes.Buffer
	w := &writer{b: &b}
	entries := in.period()
	gs := in.groups(entries)
	w.multi = len(gs) > 1
	ctrls := all(gs)
	sum := summarise(entries)
	pols := policiesOf(&in, entries)
	finds := findings(&in, ctrls, sum, w.multi)

	w.f("# Bouncer review pack: %s\n\n", title(&in, gs, sum))
	w.f("Generated %s by `bouncer report`.\n\n", in.Generated.UTC().Format("2006-01-02"))
	w.inputs(&in, entries)
	w.summary(ctrls, sum, pols, finds, &in)
	w.policies(&in, pols)
	w.tools(&in, gs, pols)
	w.audit(&in, entries, sum)
	w.observed(entries)
	w.findings(finds, pols)
	w.limits(sum)
	w.owasp(ctrls, sum)
	w.aiuc(ctrls, sum, &in)
	return b.Bytes()
}

// title names the servers the pack is of: --name's, or every server the
// tool lists and the lines name.
func title(in *Input, gs []group, s *summary) string {
	if in.Server != "" {
		return mdText(in.Server)
	}
	names := map[string]bool{}
	for _, g := range gs {
		if g.server != "" {
			names[g.server] = true
		}
	}
	for n := range s.servers {
		if n != "" {
			names[n] = true
		}
	}
	if len(names) == 0 {
		return "MCP servers"
	}
	var q []string
	for _, n := range slices.Sorted(maps.Keys(names)) {
		q = append(q, mdText(n))
	}
	return strings.Join(q, ", ")
}

// period returns the audit lines of the server within the period.
func (in *Input) period() []audit.Entry {
	var out []audit.Entry
	for _, e := range in.Audit {
		if in.Server != "" && e.Server != in.Server {
			continue
		}
		ts := e.TS.UTC()
		if !in.Since.IsZero() && ts.Before(day(in.Since)) {
			continue
		}
		if !in.Until.IsZero() && !ts.Before(day(in.Until).AddDate(0, 0, 1)) {
			continue
		}
		out = append(out, e)
	}
	return out
}

func day(t time.Time) time.Time {
	t = t.UTC()
	return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
}

type writer struct {
	b *bytes.Buffer
	// multi: the pack shows more than one server's tools, so a tool is
	// named with its server.
	multi bool
}

func (w *writer) f(format string, a ...any) { fmt.Fprintf(w.b, format, a...) }

// policyText names the policy the pack describes.
func policyText(in *Input) string {
	if len(in.PolicyFiles) == 0 {
		return "the built-in packs alone"
	}
	var fs []string
	for _, f := range in.PolicyFiles {
		fs = append(fs, code(f))
	}
	return "the built-in packs, then " + strings.Join(fs, ", ")
}

func (w *writer) inputs(in *Input, entries []audit.Entry) {
	w.f("## Inputs\n\n")
	if len(in.PolicyFiles) == 0 {
		w.f("- Policy: no `--policy` given, so the built-in packs alone")
	} else {
		w.f("- Policy: %s (later files replace earlier entries for the same tool)", policyText(in))
	}
	if in.PolicyDigest != "" {
		w.f("; digest %s", code(in.PolicyDigest))
	}
	w.f(".\n")
	switch {
	case len(in.Lists) == 0:
		w.f("- Tools: no `--tools` list given and none pinned by `bouncer run`, so only the tools the policy files and the audit lines name are shown (not the built-in packs' entries, nor tools the servers offer beyond those). Save a server's `tools/list` result and pass it with `--tools` for a complete pack.\n")
	default:
		var ls []string
		for _, l := range in.Lists {
			who := "no server named (`--tools` without `--name`)"
			if l.Server != "" {
				who = "server " + code(l.Server)
			}
			ls = append(ls, fmt.Sprintf("%s of %s, from %s", plural(len(l.Tools), "tool"), who, code(l.File)))
		}
		w.f("- Tools: %s (saved `tools/list` results: `--tools`, or the lists `bouncer run` pinned).\n", strings.Join(ls, "; "))
	}
	if in.AuditFile == "" {
		w.f("- Audit log: none.\n")
	} else {
		w.f("- Audit log: %s, %s in the period (%s)", code(in.AuditFile), plural(len(entries), "line"), periodText(in))
		if in.Server != "" {
			w.f(", server %s", code(in.Server))
		}
		w.f(".\n")
	}
	w.f("\n")
}

func periodText(in *Input) string {
	switch {
	case in.Since.IsZero() && in.Until.IsZero():
		return "all dates"
	case in.Until.IsZero():
		return "from " + in.Since.Format("2006-01-02")
	case in.Since.IsZero():
		return "up to " + in.Until.Format("2006-01-02")
	}
	return in.Since.Format("2006-01-02") + " to " + in.Until.Format("2006-01-02")
}

func (w *writer) summary(ctrls []control, sum *summary, pols *policies, finds []finding, in *Input) {
	w.f("## Summary\n\n")
	g := 0
	for _, c := range ctrls {
		if c.guarded {
			g++
		}
	}
	w.f("- %s: %d with a control beyond pinning, %d guarded by pinning only.\n", plural(len(ctrls), "tool"), g, len(ctrls)-g)
	if in.AuditFile != "" {
		if len(sum.servers) > 0 {
			var ss []string
			for _, s := range slices.Sorted(maps.Keys(sum.servers)) {
				ss = append(ss, fmt.Sprintf("%s (%s)", serverName(s), plural(sum.byServer[s].total(), "line")))
			}
			w.f("- Servers in the log: %s.\n", strings.Join(ss, ", "))
		}
		w.f("- %s in the period: %d allow, %d deny, %d ask.\n", plural(sum.total, "verdict"), sum.verdicts["allow"], sum.verdicts["deny"], sum.verdicts["ask"])
		if sum.total > 0 {
			w.f("- Policy: %s\n", pols.headline())
		}
		w.f("- Hash chain: %s\n", chainText(in.Chain))
	}
	w.f("- %s.\n\n", plural(len(finds), "finding"))
}

func chainText(r *audit.Report) string {
	switch {
	case r == nil:
		return "not verified."
	case r.OK():
		return fmt.Sprintf("intact, %s, head `%s`.", plural(r.Lines, "line"), r.Head)
	}
	p := r.Problems[0]
	more := ""
	if len(r.Problems) > 1 {
		more = fmt.Sprintf(" (%d places in all)", len(r.Problems))
	}
	if p.Line == 0 { // the log as a whole, by its head file
		return fmt.Sprintf("**broken**: %s%s.", mdText(p.Msg), more)
	}
	return fmt.Sprintf("**broken** at line %d: %s%s.", p.Line, mdText(p.Msg), more)
}

func (w *writer) tools(in *Input, gs []group, pols *policies) {
	w.f("## Tools and their controls\n\n")
	w.f("Every tool is pinned at startup: a tool that was not in the list, or whose definition changed, is denied (rule `pinning`). ")
	w.f("The columns show what the policy this pack describes (%s) applies on top of that; the last, what the enforced audit lines of the period show was in force, whichever policy decided them.\n\n", policyText(in))
	if len(gs) == 0 {
		w.f("No tools.\n\n")
		return
	}
	for _, g := range gs {
		w.f("### %s\n\n", groupTitle(g))
		if ds := pols.otherFor(g.server); g.server != "" && len(ds) > 0 {
			var q []string
			for _, d := range ds {
				q = append(q, code(shortDigest(d)))
			}
			w.f("Lines of this server were decided by %s %s, not by the policy this pack describes: the columns before the last may not be what decided them.\n\n", map[bool]string{true: "policy", false: "policies"}[len(ds) == 1], strings.Join(q, ", "))
		}
		if len(g.ctrls) == 0 {
			w.f("No tools.\n\n")
			continue
		}
		w.f("| Tool | Entry from | Sends to (sink arguments) | Trusted destinations | Path confinement | Argument patterns | Budget | In force in the log |\n")
		w.f("|---|---|---|---|---|---|---|---|\n")
		var open []string
		for _, c := range g.ctrls {
			t := c.t
			w.f("| %s | %s | %s | %s | %s | %s | %s | %s |\n", code(c.def.Name), sourceText(t), sinksText(t), listOrDash(t.TrustedDestinations),
				pathsText(t), patternsText(t), budgetText(t), c.ev.text())
			if !c.guarded {
				open = append(open, code(c.def.Name))
			}
		}
		w.f("\n")
		if len(open) == 0 {
			w.f("Every tool has a control beyond pinning.\n\n")
		} else {
			w.f("Guarded by pinning only (any arguments, any number of calls): %s.\n\n", strings.Join(open, ", "))
		}
	}
}

// groupTitle heads a server's tools.
func groupTitle(g group) string {
	head := "Server " + code(g.server)
	if g.server == "" {
		head = "Tools with no server named"
	}
	switch {
	case len(g.files) > 0:
		return fmt.Sprintf("%s: %s, from %s", head, plural(len(g.ctrls), "tool"), joinCodes(g.files))
	case g.server == "":
		return head + " (from the policy files or the log; no tool list)"
	}
	return fmt.Sprintf("%s: %s named by the audit log (no tool list)", head, plural(len(g.ctrls), "tool"))
}

// serverName shows a server's name from an audit line.
func serverName(s string) string {
	if s == "" {
		return "(no server name)"
	}
	return code(s)
}

// toolLabel names a tool, with its server when the pack shows several.
func toolLabel(multi bool, server, tool string) string {
	if multi && server != "" {
		return code(tool) + " of " + code(server)
	}
	return code(tool)
}

func sourceText(t *policy.Tool) string {
	switch {
	case t.Fallback:
		return "fallback (no pack or file names it)"
	case strings.HasPrefix(t.Source, "pack "):
		return "pack " + code(strings.TrimPrefix(t.Source, "pack "))
	case t.Source == "":
		return "—"
	}
	return code(t.Source)
}

func sinksText(t *policy.Tool) string {
	if !t.Exfiltrating {
		return "—"
	}
	if len(t.SinkParams) == 0 {
		return "every argument"
	}
	return listOrDash(t.SinkParams)
}

func pathsText(t *policy.Tool) string {
	switch {
	case len(t.WriteParams) == 0 && len(t.AllowedPathPrefixes) == 0:
		return "—"
	case len(t.AllowedPathPrefixes) == 0:
		return listOrDash(t.WriteParams) + " not confined (no prefixes)"
	case len(t.WriteParams) == 0:
		return "prefixes " + listOrDash(t.AllowedPathPrefixes) + " but no write arguments"
	}
	return listOrDash(t.WriteParams) + " under " + listOrDash(t.AllowedPathPrefixes)
}

func patternsText(t *policy.Tool) string {
	if len(t.ArgPatterns) == 0 {
		return "—"
	}
	var s []string
	for _, p := range t.ArgPatterns {
		s = append(s, code(p.Arg)+" ~ "+code(p.Pattern))
	}
	return strings.Join(s, ", ")
}

func budgetText(t *policy.Tool) string {
	switch {
	case t.MaxCalls == nil:
		return "—"
	case *t.MaxCalls == 0:
		return "forbidden (0)"
	}
	return fmt.Sprintf("%d a session", *t.MaxCalls)
}

func listOrDash(s []string) string {
	if len(s) == 0 {
		return "—"
	}
	q := make([]string, len(s))
	for i, v := range s {
		q[i] = code(v)
	}
	return strings.Join(q, ", ")
}

// code renders s as a Markdown code span that is safe inside a table cell:
// its text is shown literally whatever it contains, and long values are cut.
func code(s string) string { return codeN(s, 100) }

// codeN is code with values cut at n runes. The value is escaped by the one
// display escaper (display.Printable), so it reads as bouncer log shows it:
// no control, bidirectional or invisible character, no line break, a
// backslash doubled. A pipe is then written \|: GitHub's Markdown splits a
// table row on every other pipe, code spans included, and takes the
// backslash out again inside a cell (outside a table \| shows as it is,
// which no escape of Printable's can be mistaken for). Only then is the
// span fenced with more backticks than it holds, padded with a space when
// it holds one (Printable leaves no space at either end for Markdown to
// strip).
func codeN(s string, n int) string {
	more := ""
	if r := []rune(s); len(r) > n {
		// A cut that falls after a space drops it: the value goes on
		// past the "…", so no end is hidden, and Printable would show the
		// space as \x20 (a reason cut between two words read "of\x20…").
		s, more = strings.TrimRight(string(r[:n]), " "), "…"
	}
	p, _ := display.Printable(s)
	p = strings.ReplaceAll(p, "|", `\|`) + more
	fence := "`"
	for strings.Contains(p, fence) {
		fence += "`"
	}
	if strings.Contains(p, "`") {
		return fence + " " + p + " " + fence
	}
	return fence + p + fence
}

// mdText makes a value safe for a line of Markdown outside a code span (a
// heading): escaped by display.Printable, then every ASCII punctuation
// character backslash-escaped, which CommonMark renders as the character
// itself, so no HTML, entity (&#x202e;), link, emphasis or table cell can
// come of it.
func mdText(s string) string {
	p, _ := display.Printable(s)
	var b strings.Builder
	for _, r := range p {
		if r < utf8.RuneSelf && unicode.IsPunct(r) || strings.ContainsRune("$+<=>^`|~", r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

func relOK(p string) bool { return filepath.IsAbs(p) }
