// Package report writes the review pack: a Markdown document for a security
// reviewer that lists every tool of a server with the controls Bouncer puts
// on it, summarises the audit log for a period, lists findings (gaps in the
// policy that a reviewer should look at), states plainly what Bouncer
// enforces and what it does not, and maps the controls to the OWASP Top 10
// for LLM Applications 2025 and, by topic, to AIUC-1, each row pointing at
// its evidence and naming the gap left to the user.
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
	"path/filepath"
	"sort"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/bouncer-mcp/bouncer/internal/audit"
	"github.com/bouncer-mcp/bouncer/internal/display"
	"github.com/bouncer-mcp/bouncer/internal/policy"
)

// Policy is what the report needs of a loaded policy; *policy.Policy has it.
type Policy interface {
	// For returns the entry for a tool, or the fallback derived from params.
	For(tool string, params []string) *policy.Tool
	// Names lists the tools the policy configures.
	Names() []string
}

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

// Input is everything a pack is written from.
type Input struct {
	Policy      Policy
	PolicyFiles []string // user policy files, as given
	Tools       []ToolDef
	ToolsFile   string // "" when no tools list was given
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

// control is one tool's row: its entry and what it is guarded by.
type control struct {
	def     ToolDef
	listed  bool // in the tools list (false: only the policy names it)
	t       *policy.Tool
	guarded bool
}

func (in *Input) controls() []control {
	byName := map[string]*control{}
	for _, d := range in.Tools {
		byName[d.Name] = &control{def: d, listed: true}
	}
	if in.ToolsFile == "" {
		// No tools list: report what the user's files name. The packs'
		// entries for other servers' tools would only bury them.
		for _, n := range in.Policy.Names() {
			if t := in.Policy.For(n, nil); !strings.HasPrefix(t.Source, "pack ") {
				byName[n] = &control{def: ToolDef{Name: n}}
			}
		}
	}
	// A tool the audit log names is shown too: a pack must not say "0
	// tools" beside that tool's denials.
	for _, e := range in.Audit {
		if _, ok := byName[e.Tool]; !ok && e.Tool != "" && (in.Server == "" || e.Server == in.Server) {
			byName[e.Tool] = &control{def: ToolDef{Name: e.Tool}}
		}
	}
	var out []control
	for _, c := range byName {
		c.t = in.Policy.For(c.def.Name, c.def.Params)
		c.guarded = guarded(c.t)
		out = append(out, *c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].def.Name < out[j].def.Name })
	return out
}

// guarded reports whether any control beyond pinning applies.
func guarded(t *policy.Tool) bool {
	return t.Exfiltrating || (len(t.WriteParams) > 0 && len(t.AllowedPathPrefixes) > 0) || len(t.ArgPatterns) > 0 || t.MaxCalls != nil
}

// Write writes the pack to a buffer and returns it.
func Write(in Input) []byte {
	var b bytes.Buffer
	w := &writer{b: &b}
	ctrls := in.controls()
	entries := in.period()
	sum := summarise(entries, in.Policy)
	finds := findings(&in, ctrls, sum)

	server := in.Server
	if server == "" {
		server = "MCP server"
	}
	w.f("# Bouncer review pack: %s\n\n", mdText(server))
	w.f("Generated %s by `bouncer report`.\n\n", in.Generated.UTC().Format("2006-01-02"))
	w.inputs(&in, entries)
	w.summary(ctrls, sum, finds, &in)
	w.tools(&in, ctrls)
	w.audit(&in, entries, sum)
	w.observed(entries)
	w.findings(finds)
	w.limits()
	w.owasp(ctrls, sum)
	w.aiuc(ctrls, sum, &in)
	return b.Bytes()
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

type writer struct{ b *bytes.Buffer }

func (w *writer) f(format string, a ...any) { fmt.Fprintf(w.b, format, a...) }

func (w *writer) inputs(in *Input, entries []audit.Entry) {
	w.f("## Inputs\n\n")
	if len(in.PolicyFiles) == 0 {
		w.f("- Policy: the built-in packs only (no `--policy` file).\n")
	} else {
		var fs []string
		for _, f := range in.PolicyFiles {
			fs = append(fs, code(f))
		}
		w.f("- Policy: the built-in packs, then %s (later files replace earlier entries for the same tool).\n", strings.Join(fs, ", "))
	}
	if in.ToolsFile == "" {
		w.f("- Tools: no `--tools` list given, so only the tools the policy files name are shown (not the built-in packs' entries, nor tools the server offers beyond those). Save the server's `tools/list` result and pass it with `--tools` for a complete pack.\n")
	} else {
		w.f("- Tools: %d, from %s (a saved `tools/list` result: `--tools`, or the lists `bouncer run` pinned).\n", len(in.Tools), code(in.ToolsFile))
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

func (w *writer) summary(ctrls []control, sum *summary, finds []finding, in *Input) {
	w.f("## Summary\n\n")
	g := 0
	for _, c := range ctrls {
		if c.guarded {
			g++
		}
	}
	w.f("- %s: %d with a control beyond pinning, %d guarded by pinning only.\n", plural(len(ctrls), "tool"), g, len(ctrls)-g)
	if in.AuditFile != "" {
		w.f("- %s in the period: %d allow, %d deny, %d ask.\n", plural(sum.total, "verdict"), sum.verdicts["allow"], sum.verdicts["deny"], sum.verdicts["ask"])
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

func (w *writer) tools(in *Input, ctrls []control) {
	w.f("## Tools and their controls\n\n")
	w.f("Every tool is pinned at startup: a tool that was not in the list, or whose definition changed, is denied (rule `pinning`). The columns show what applies on top of that.\n\n")
	if len(ctrls) == 0 {
		w.f("No tools.\n\n")
		return
	}
	w.f("| Tool | Entry from | Sends to (sink arguments) | Trusted destinations | Path confinement | Argument patterns | Budget |\n")
	w.f("|---|---|---|---|---|---|---|\n")
	for _, c := range ctrls {
		t := c.t
		w.f("| %s | %s | %s | %s | %s | %s | %s |\n", code(c.def.Name), sourceText(t), sinksText(t), listOrDash(t.TrustedDestinations),
			pathsText(t), patternsText(t), budgetText(t))
	}
	w.f("\n")
	var open []string
	for _, c := range ctrls {
		if !c.guarded {
			open = append(open, code(c.def.Name))
		}
	}
	if len(open) == 0 {
		w.f("Every tool has a control beyond pinning.\n\n")
	} else {
		w.f("Guarded by pinning only (any arguments, any number of calls): %s.\n\n", strings.Join(open, ", "))
	}
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
		s, more = string(r[:n]), "…"
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
