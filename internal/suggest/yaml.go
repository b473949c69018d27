package suggest

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/bouncer-mcp/bouncer/internal/display"
	"github.com/bouncer-mcp/bouncer/internal/policy"
	"github.com/bouncer-mcp/bouncer/internal/vouch"
	"github.com/bouncer-mcp/bouncer/internal/yamlstrict"
)

// WriteYAML writes the suggestion as a policy file: each tool's entry in
// effect restated whole, with the suggestions added and their evidence in
// comments. It loads with `bouncer check --policy` beside the current files.
func (r *Result) WriteYAML(w io.Writer, period string) error {
	b := &yamlText{}
	fmt.Fprintf(b, "# Suggested by `bouncer policy suggest` from %d audit lines (%s).\n", r.Lines, comment(period))
	b.WriteString("# Load it after your current policy files. Each entry restates the tool's whole entry in\n")
	b.WriteString("# effect (a later entry replaces an earlier one), with the suggestions added; each\n")
	b.WriteString("# suggestion says how often it was seen and which verdicts it changes. Review every line,\n")
	b.WriteString("# then sign and push it (docs/rollout.md).\n")
	if len(r.Tools) == 0 {
		b.WriteString("#\n# Nothing to suggest: no ask, approval, path or budget denial in the period.\n")
	}
	for _, t := range r.Tools {
		b.WriteString("\n")
		if policy.Reserved(t.Name) {
			// A tool so named can't be given an entry: the key means
			// something else at the top level of a policy.
			fmt.Fprintf(b, "# %s: NOT restated: %s is a reserved key of a policy file, not a tool entry, so this tool keeps the fallback.\n", comment(t.Name), comment(t.Name))
			continue
		}
		writeTool(b, t)
	}
	if b.err != nil {
		return fmt.Errorf("a suggested value can't be written as YAML that reads back the same, so nothing was written: %w", b.err)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// yamlText is the suggestion being written. Its scalars are written by
// yamlstrict, the one YAML writer; the first one that can't be (text that
// is not UTF-8, a key too long for YAML) is kept in err, and then nothing
// is written at all.
type yamlText struct {
	strings.Builder
	err error
}

func (b *yamlText) keep(s string, err error) string {
	if err != nil && b.err == nil {
		b.err = err
	}
	return s
}

// q quotes a value, key a mapping key, flow a list of values.
func (b *yamlText) q(s string) string   { return b.keep(yamlstrict.Quote(s)) }
func (b *yamlText) key(s string) string { return b.keep(yamlstrict.Key(s, yamlstrict.Quote)) }
func (b *yamlText) flow(list []string) string {
	return b.keep(yamlstrict.Flow(list, yamlstrict.Quote))
}

func writeTool(b *yamlText, t Tool) {
	e := t.entry
	fmt.Fprintf(b, "# %s: restated from %s.\n", comment(t.Name), comment(t.Source))
	fmt.Fprintf(b, "%s:\n", b.key(t.Name))

	exfil := e.Exfiltrating
	sinks := append([]string(nil), e.SinkParams...)
	if e.Fallback && len(t.Destinations) > 0 {
		// No entry named the tool; its sinks were derived from argument
		// names. Name them now.
		exfil = true
		for _, d := range t.Destinations {
			sinks = appendOnce(sinks, d.Param)
		}
		sort.Strings(sinks)
	}
	if exfil {
		b.WriteString("  exfiltrating: true\n")
		if len(sinks) > 0 {
			fmt.Fprintf(b, "  sink_params: %s\n", b.flow(sinks))
		}
	}
	if exfil && (len(e.TrustedDestinations) > 0 || len(t.Destinations) > 0) {
		b.WriteString("  trusted_destinations:\n")
		for _, d := range e.TrustedDestinations {
			fmt.Fprintf(b, "    - %s\n", b.q(d))
		}
		for _, d := range t.Destinations {
			fmt.Fprintf(b, "    - %s  # %s=%s: %s, never in untrusted output; %s\n", b.q(d.Destination), comment(d.Param), comment(d.Destination), evidenceWords[d.Why], evidence(d.Evidence))
		}
	}
	for _, d := range t.Unproven {
		why := "asked about, but the log holds no evidence that it is the user's (typed, approved, remembered or allowlisted elsewhere)"
		if d.Why == "declined" {
			why = "a human declined it"
		}
		fmt.Fprintf(b, "  # NOT suggested: %s=%s: %s. %s\n", comment(d.Param), comment(d.Destination), why, evidence(d.Evidence))
	}
	for _, r := range t.Refused {
		src := "a server"
		if len(r.Sources) > 0 && r.Sources[0] != "" {
			src = "server " + strings.Join(r.Sources, ", ")
		}
		fmt.Fprintf(b, "  # NOT suggested: %s appeared in the output of %s, which is exactly what an injection\n", comment(r.Destination), comment(src))
		fmt.Fprintf(b, "  #   looks like; if you know this recipient, vouch for it yourself (bouncer trust add). %s\n", evidence(r.Evidence))
	}
	if len(e.WriteParams) > 0 {
		fmt.Fprintf(b, "  write_params: %s\n", b.flow(e.WriteParams))
	}
	if len(e.AllowedPathPrefixes) > 0 || len(t.Prefixes) > 0 {
		b.WriteString("  allowed_path_prefixes:\n")
		for _, p := range e.AllowedPathPrefixes {
			fmt.Fprintf(b, "    - %s\n", b.q(p))
		}
		for _, p := range t.Prefixes {
			fmt.Fprintf(b, "    - %s  # admits %s; %s\n", b.q(p.Prefix), comment(strings.Join(shorten(p.Paths, 3), ", ")), evidence(p.Evidence))
		}
	}
	for _, u := range t.Unplaced {
		fmt.Fprintf(b, "  # NOT suggested: %s\n", comment(u))
	}
	if e.RelativePaths.Mode != policy.RelativeDeny {
		fmt.Fprintf(b, "  relative_paths: %s\n", b.q(e.RelativePaths.String()))
	}
	if len(e.ArgPatterns) > 0 {
		b.WriteString("  arg_patterns:\n")
		for _, ap := range e.ArgPatterns {
			fmt.Fprintf(b, "    %s: %s\n", b.key(ap.Arg), b.q(ap.Pattern))
		}
	}
	switch {
	case t.Budget != nil:
		steered := ""
		if t.Budget.SteeredPeak > t.Budget.Peak {
			steered = fmt.Sprintf(" (%d in a session untrusted output steered, not counted)", t.Budget.SteeredPeak)
		}
		if t.Budget.Burst > t.Budget.Peak {
			steered += fmt.Sprintf(" (%d in one session alone, not counted: one burst is no need)", t.Budget.Burst)
		}
		fmt.Fprintf(b, "  max_calls: %d  # was %d; at most %d calls in each of two sessions%s; %s\n", t.Budget.Suggest, t.Budget.Was, t.Budget.Peak, steered, evidence(t.Budget.Evidence))
	case e.MaxCalls != nil:
		fmt.Fprintf(b, "  max_calls: %d\n", *e.MaxCalls)
	}
	if len(e.CountsAs) > 0 {
		b.WriteString("  counts_as:\n")
		for _, ca := range e.CountsAs {
			fmt.Fprintf(b, "    %s:\n", b.key(ca.Tool))
			for _, ap := range ca.When {
				fmt.Fprintf(b, "      %s: %s\n", b.key(ap.Arg), b.q(ap.Pattern))
			}
		}
	}
	if e.TrustedOutput {
		b.WriteString("  trusted_output: true\n")
	}
	if !exfil && len(e.WriteParams) == 0 && e.MaxCalls == nil && t.Budget == nil && len(e.ArgPatterns) == 0 && len(e.CountsAs) == 0 && !e.TrustedOutput {
		// An entry must hold a key; this one gates nothing.
		b.WriteString("  exfiltrating: false\n")
	}
}

// evidenceWords say what a way to vouch (Destination.Why) proves.
var evidenceWords = map[string]string{
	vouch.Prompt:     "typed by the user",
	vouch.Remembered: "remembered by a human",
	vouch.Approval:   "approved by a human",
	vouch.Allowlist:  "allowlisted for another tool",
}

// evidence is the comment on one suggestion.
func evidence(e Evidence) string {
	var vs []string
	keys := make([]string, 0, len(e.Verdicts))
	for v := range e.Verdicts {
		keys = append(keys, v)
	}
	sort.Strings(keys)
	for _, v := range keys {
		if v == "allow" {
			continue // a human's yes after an ask: evidence, not a verdict it changes
		}
		vs = append(vs, fmt.Sprintf("%d %s", e.Verdicts[v], v))
	}
	return fmt.Sprintf("seen %d× on %s, first %s, last %s; changes %s", e.Count, strings.Join(e.Servers, ", "),
		e.First.UTC().Format(time.DateOnly), e.Last.UTC().Format(time.DateOnly), strings.Join(vs, ", "))
}

// comment makes text safe inside a YAML comment: one line, escaped by the
// one display escaper (display.Printable), as bouncer log and the approval
// prompt show it (an agent chose most of it).
func comment(s string) string {
	p, _ := display.Printable(s)
	return p
}

func shorten(list []string, n int) []string {
	if len(list) <= n {
		return list
	}
	return append(append([]string(nil), list[:n]...), fmt.Sprintf("and %d more", len(list)-n))
}
