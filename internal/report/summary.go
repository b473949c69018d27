package report

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/bouncer-mcp/bouncer/internal/audit"
	"github.com/bouncer-mcp/bouncer/internal/engine"
)

// summary counts the audit lines of the period.
type summary struct {
	total    int
	verdicts map[string]int
	byTool   map[string]map[string]int
	byRule   map[string]map[string]int
	denied   map[string]int // "param=value" of sink denials → count
	asked    map[string]int // "param=value" sent to a human → count
	outcomes map[string]int // how asks ended
	reasons  map[string]int // tool\x00rule\x00reason of deny lines → count
	sessions map[string]bool
	servers  map[string]bool
}

// Ask outcomes, in the order the pack lists them.
var outcomeOrder = []string{
	"approved in the client (elicitation)",
	"approved with a one-time code",
	"blocked, one-time code issued",
	"declined in the client",
	"not answered (timeout, cancelled, session ended)",
	"denied for another reason",
	"no outcome line (the proxy stopped first)",
}

// destRE finds the destinations the engine names in its reasons:
// "destination to='x@y' came from untrusted data", "destination to='x' is
// not a vouched recipient". The quoted value is read back by the engine's
// own engine.Unquote.
var destRE = regexp.MustCompile(`destination ([^\s=]+)=('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")`)

func destinations(reason string) []string {
	var out []string
	for _, m := range destRE.FindAllStringSubmatch(reason, -1) {
		if v, ok := engine.Unquote(m[2]); ok {
			out = append(out, m[1]+"="+v)
		}
	}
	return out
}

// callKey identifies one tools/call across its ask line and the approval
// line that ends it.
func callKey(e audit.Entry) string {
	return e.Server + "\x00" + e.Session + "\x00" + string(e.ID) + "\x00" + e.Tool
}

func summarise(entries []audit.Entry, pol Policy) *summary {
	s := &summary{
		verdicts: map[string]int{}, byTool: map[string]map[string]int{}, byRule: map[string]map[string]int{},
		denied: map[string]int{}, reasons: map[string]int{}, asked: map[string]int{}, outcomes: map[string]int{},
		sessions: map[string]bool{}, servers: map[string]bool{},
	}
	add := func(m map[string]map[string]int, k, v string) {
		if m[k] == nil {
			m[k] = map[string]int{}
		}
		m[k][v]++
	}
	open := map[string]int{} // callKey → open asks
	for _, e := range entries {
		s.total++
		s.verdicts[e.Verdict]++
		add(s.byTool, e.Tool, e.Verdict)
		add(s.byRule, ruleName(e.Rule), e.Verdict)
		if e.Session != "" {
			s.sessions[e.Session] = true
		}
		s.servers[e.Server] = true
		if e.Verdict == "deny" {
			s.reasons[e.Tool+"\x00"+ruleName(e.Rule)+"\x00"+e.Reason]++
		}
		switch {
		case e.Verdict == "ask":
			open[callKey(e)]++
			for _, d := range destinations(e.Reason) {
				s.asked[d]++
			}
		case e.Rule == "approval" && open[callKey(e)] > 0:
			open[callKey(e)]--
			s.outcomes[outcome(e)]++
		case e.Verdict == "deny" && e.Rule == "sink":
			ds := destinations(e.Reason)
			if len(ds) == 0 {
				ds = sinkValues(e, pol)
			}
			for _, d := range ds {
				s.denied[d]++
			}
		}
	}
	for _, n := range open {
		s.outcomes[outcomeOrder[len(outcomeOrder)-1]] += n
	}
	return s
}

func ruleName(r string) string {
	if r == "" {
		return "(none)"
	}
	return r
}

func outcome(e audit.Entry) string {
	r := strings.ToLower(e.Reason)
	switch {
	case e.Verdict == "allow" && e.Code != "":
		return outcomeOrder[1]
	case e.Verdict == "allow":
		return outcomeOrder[0]
	case e.Code != "" || strings.Contains(r, "bouncer approve"):
		return outcomeOrder[2]
	case strings.Contains(r, "declined") || strings.Contains(r, "dismissed"):
		return outcomeOrder[3]
	case strings.Contains(r, "did not answer") || strings.Contains(r, "cancelled") || strings.Contains(r, "session ended"):
		return outcomeOrder[4]
	}
	return outcomeOrder[5]
}

// sinkValues is the fallback when a reason names no destination: the
// string values of the tool's sink arguments in the call.
func sinkValues(e audit.Entry, pol Policy) []string {
	var args map[string]any
	if json.Unmarshal(e.Args, &args) != nil {
		return nil
	}
	var names []string
	for k := range args {
		names = append(names, k)
	}
	sort.Strings(names)
	sinks := names
	if t := pol.For(e.Tool, names); len(t.SinkParams) > 0 {
		sinks = t.SinkParams
	}
	var out []string
	for _, k := range sinks {
		if v, ok := args[k].(string); ok {
			out = append(out, k+"="+v)
		}
	}
	return out
}

// ranked returns the keys of m by count, then by key.
func ranked(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if m[keys[i]] != m[keys[j]] {
			return m[keys[i]] > m[keys[j]]
		}
		return keys[i] < keys[j]
	})
	return keys
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// topN bounds the destination tables.
const topN = 10

func (w *writer) audit(in *Input, entries []audit.Entry, s *summary) {
	w.f("## Audit log\n\n")
	if in.AuditFile == "" {
		w.f("No audit log was given, so there is no evidence of what happened; the controls above are what would apply.\n\n")
		return
	}
	w.f("Hash chain: %s\n\n", chainText(in.Chain))
	if s.total == 0 {
		w.f("No verdicts in the period.\n\n")
		return
	}
	first, last := entries[0].TS.UTC(), entries[len(entries)-1].TS.UTC()
	w.f("%s from %s to %s, in %s of %s.\n\n", plural(s.total, "verdict"), first.Format("2006-01-02 15:04:05Z"), last.Format("2006-01-02 15:04:05Z"),
		plural(len(s.sessions), "session"), joinCodes(sortedKeys(s.servers)))

	w.f("### Verdicts by tool\n\n| Tool | allow | deny | ask |\n|---|---:|---:|---:|\n")
	for _, t := range sortedKeys(s.byTool) {
		v := s.byTool[t]
		w.f("| %s | %d | %d | %d |\n", code(t), v["allow"], v["deny"], v["ask"])
	}
	w.f("\n### Verdicts by rule\n\n| Rule | allow | deny | ask |\n|---|---:|---:|---:|\n")
	for _, r := range sortedKeys(s.byRule) {
		v := s.byRule[r]
		w.f("| %s | %d | %d | %d |\n", code(r), v["allow"], v["deny"], v["ask"])
	}
	w.f("\n")
	w.f("An `ask` line is followed by an `allow` or `deny` line with rule `approval` for the same call, so an approved call counts once as `ask` and once as `allow`.\n\n")

	w.f("### Denials by reason\n\n")
	if len(s.reasons) == 0 {
		w.f("None.\n\n")
	} else {
		w.f("| Tool | Rule | Reason | calls |\n|---|---|---|---:|\n")
		keys := ranked(s.reasons)
		for i, k := range keys {
			if i == topN {
				w.f("| … %d more | | | |\n", len(keys)-topN)
				break
			}
			f := strings.SplitN(k, "\x00", 3)
			w.f("| %s | %s | %s | %d |\n", code(f[0]), code(f[1]), codeN(f[2], 240), s.reasons[k])
		}
		w.f("\n")
	}
	w.f("### Denied destinations (came from untrusted output)\n\n")
	w.destTable(s.denied)
	w.f("### Destinations sent to a human\n\n")
	w.destTable(s.asked)
	w.f("### How the asks ended\n\n")
	if len(s.outcomes) == 0 {
		w.f("No asks.\n\n")
	} else {
		w.f("| Outcome | calls |\n|---|---:|\n")
		for _, o := range outcomeOrder {
			if n := s.outcomes[o]; n > 0 {
				w.f("| %s | %d |\n", o, n)
			}
		}
		w.f("\n")
	}
}

func (w *writer) destTable(m map[string]int) {
	if len(m) == 0 {
		w.f("None.\n\n")
		return
	}
	w.f("| Argument = destination | calls |\n|---|---:|\n")
	keys := ranked(m)
	for i, k := range keys {
		if i == topN {
			w.f("| … %d more | |\n", len(keys)-topN)
			break
		}
		w.f("| %s | %d |\n", code(k), m[k])
	}
	w.f("\n")
}

func joinCodes(s []string) string {
	q := make([]string, len(s))
	for i, v := range s {
		q[i] = code(v)
	}
	if len(q) == 0 {
		return "no server"
	}
	return strings.Join(q, ", ")
}

// count of deny lines by rule, for evidence cells.
func (s *summary) denies(rule string) int { return s.byRule[rule]["deny"] }

func (s *summary) evidence(rules ...string) string {
	var parts []string
	for _, r := range rules {
		n, suffix := s.denies(r), "s"
		if n == 1 {
			suffix = ""
		}
		parts = append(parts, fmt.Sprintf("%d `%s` denial%s", n, r, suffix))
	}
	return strings.Join(parts, ", ")
}

// plural writes "1 thing" or "N things".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
