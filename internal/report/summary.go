package report

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/bouncer-mcp/bouncer/internal/audit"
	"github.com/bouncer-mcp/bouncer/internal/vouch"
)

// summary counts the audit lines of the period, from their structured
// fields (server, verdict, rule, dests, taint, policy), never from the
// text of their reasons.
type summary struct {
	total    int
	verdicts map[string]int
	byServer map[string]verdicts        // server → its lines' verdicts
	byTool   map[tuple]verdicts         // {server, tool} → verdicts
	byRule   map[tuple]verdicts         // {server, rule} → verdicts
	enforced map[string]int             // rule → enforced deny lines, for the evidence cells
	denied   map[tuple]int              // {server, param=value, source} of taint denials → count
	cross    int                        // taint denials of a destination another server returned
	noTaint  int                        // sink denials that name no destination (older lines)
	asked    map[tuple]int              // {server, param=value} of the calls put to a human → count
	askNone  int                        // asks that name no destination
	vouches  map[string]int             // vouch kind → destinations allowed by it
	vouchBy  map[string]int             // vouch kind → calls
	noVouch  int                        // allowed destinations whose line names no vouch
	outcomes map[string]int             // how asks ended
	reasons  map[tuple]int              // {server, tool, rule, reason} of deny lines → count
	sessions map[string]map[string]bool // server → sessions
	digests  map[string]map[string]bool // server → policy digests
	servers  map[string]bool
}

// verdicts counts lines by verdict.
type verdicts map[string]int

func (v verdicts) total() int { return v["allow"] + v["deny"] + v["ask"] }

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

// callKey identifies one tools/call across its ask line and the approval
// line that ends it.
func callKey(e audit.Entry) tuple {
	return tuple{e.Server, e.Session, string(e.ID), e.Tool}
}

// tuple keys a count by several values, any of which may hold any text
// (a destination can hold a NUL), so they are never joined into one string.
type tuple [4]string

func (a tuple) less(b tuple) bool { return slices.Compare(a[:], b[:]) < 0 }

func summarise(entries []audit.Entry) *summary {
	s := &summary{
		verdicts: map[string]int{}, byServer: map[string]verdicts{}, byTool: map[tuple]verdicts{}, byRule: map[tuple]verdicts{},
		enforced: map[string]int{}, denied: map[tuple]int{}, reasons: map[tuple]int{}, asked: map[tuple]int{}, outcomes: map[string]int{},
		vouches: map[string]int{}, vouchBy: map[string]int{},
		sessions: map[string]map[string]bool{}, digests: map[string]map[string]bool{}, servers: map[string]bool{},
	}
	add := func(m map[tuple]verdicts, k tuple, v string) {
		if m[k] == nil {
			m[k] = verdicts{}
		}
		m[k][v]++
	}
	mark := func(m map[string]map[string]bool, k, v string) {
		if m[k] == nil {
			m[k] = map[string]bool{}
		}
		m[k][v] = true
	}
	open := map[tuple]int{} // callKey → open asks
	for _, e := range entries {
		s.total++
		s.verdicts[e.Verdict]++
		s.servers[e.Server] = true
		if s.byServer[e.Server] == nil {
			s.byServer[e.Server] = verdicts{}
		}
		s.byServer[e.Server][e.Verdict]++
		add(s.byTool, tuple{e.Server, e.Tool}, e.Verdict)
		add(s.byRule, tuple{e.Server, ruleName(e.Rule)}, e.Verdict)
		if e.Session != "" {
			mark(s.sessions, e.Server, e.Session)
		}
		mark(s.digests, e.Server, e.Policy)
		if e.Verdict == "deny" {
			s.reasons[tuple{e.Server, e.Tool, ruleName(e.Rule), e.Reason}]++
			if !e.Observed() {
				s.enforced[ruleName(e.Rule)]++
			}
		}
		switch {
		case e.Verdict == "ask":
			open[callKey(e)]++
			if len(e.Dests) == 0 {
				s.askNone++
			}
			for _, d := range e.Dests {
				s.asked[tuple{e.Server, d.Param + "=" + d.Value}]++
			}
		case e.Rule == "approval" && open[callKey(e)] > 0:
			open[callKey(e)]--
			s.outcomes[outcome(e)]++
		case e.Verdict == "deny" && e.Rule == "sink":
			if e.Taint == nil {
				s.noTaint++
				break
			}
			s.denied[tuple{e.Server, e.Taint.Param + "=" + e.Taint.Destination, e.Taint.Source}]++
			if e.Taint.Source != "" && e.Taint.Source != e.Server {
				s.cross++
			}
		}
		if e.Verdict == "allow" {
			kinds := map[string]bool{}
			for _, d := range e.Dests {
				if d.Vouch == "" {
					s.noVouch++
					continue
				}
				v := d.Vouch
				if w, ok := vouch.Lookup(v); ok {
					v = w.Name // the name an older Bouncer wrote, as this one names it
				}
				s.vouches[v]++
				kinds[v] = true
			}
			for k := range kinds {
				s.vouchBy[k]++
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

// outcome says how an ask ended, from the approval line that ended it: its
// verdict, its code, and the ending the proxy wrote after the engine's
// reason. Only that ending is read, never the reason's text as a whole:
// the reason quotes destinations the agent chose, and one named
// "declined@x" must not count as a human declining.
func outcome(e audit.Entry) string {
	r := e.Reason
	switch {
	case e.Verdict == "allow" && e.Code != "":
		return outcomeOrder[1]
	case e.Verdict == "allow":
		return outcomeOrder[0]
	case e.Code != "":
		return outcomeOrder[2]
	case e.Declined():
		return outcomeOrder[3]
	case strings.HasSuffix(r, "; the session ended before the human answered") ||
		r == "the client cancelled the call while a human was being asked" || timedOut(r):
		return outcomeOrder[4]
	}
	return outcomeOrder[5]
}

// timedOut reports whether an approval line ends as the proxy ends one
// whose human did not answer: "; the human did not answer within 2m0s".
func timedOut(r string) bool {
	const mark = "; the human did not answer within "
	i := strings.LastIndex(r, mark)
	if i < 0 {
		return false
	}
	_, err := time.ParseDuration(r[i+len(mark):])
	return err == nil
}

// ranked returns the keys of m by count, then by key.
func ranked(m map[tuple]int) []tuple {
	keys := make([]tuple, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if m[keys[i]] != m[keys[j]] {
			return m[keys[i]] > m[keys[j]]
		}
		return keys[i].less(keys[j])
	})
	return keys
}

// sortedTuples returns the keys of m in order.
func sortedTuples[V any](m map[tuple]V) []tuple {
	keys := make([]tuple, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].less(keys[j]) })
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
	nsess := 0
	for _, ss := range s.sessions {
		nsess += len(ss)
	}
	w.f("%s from %s to %s, in %s of %s.\n\n", plural(s.total, "verdict"), first.Format("2006-01-02 15:04:05Z"), last.Format("2006-01-02 15:04:05Z"),
		plural(nsess, "session"), plural(len(s.servers), "server"))

	w.f("### By server\n\n| Server | Policy digests | Sessions | allow | deny | ask |\n|---|---|---:|---:|---:|---:|\n")
	for _, sv := range slices.Sorted(maps.Keys(s.servers)) {
		var ds []string
		for _, d := range slices.Sorted(maps.Keys(s.digests[sv])) {
			if d == "" {
				ds = append(ds, "none recorded")
			} else {
				ds = append(ds, code(shortDigest(d)))
			}
		}
		v := s.byServer[sv]
		w.f("| %s | %s | %d | %d | %d | %d |\n", serverName(sv), strings.Join(ds, ", "), len(s.sessions[sv]), v["allow"], v["deny"], v["ask"])
	}
	w.f("\n")

	w.f("### Verdicts by tool\n\n| Server | Tool | allow | deny | ask |\n|---|---|---:|---:|---:|\n")
	for _, k := range sortedTuples(s.byTool) {
		v := s.byTool[k]
		w.f("| %s | %s | %d | %d | %d |\n", serverName(k[0]), code(k[1]), v["allow"], v["deny"], v["ask"])
	}
	w.f("\n### Verdicts by rule\n\n| Server | Rule | allow | deny | ask |\n|---|---|---:|---:|---:|\n")
	for _, k := range sortedTuples(s.byRule) {
		v := s.byRule[k]
		w.f("| %s | %s | %d | %d | %d |\n", serverName(k[0]), code(k[1]), v["allow"], v["deny"], v["ask"])
	}
	w.f("\n")
	w.f("An `ask` line is followed by an `allow` or `deny` line with rule `approval` for the same call, so an approved call counts once as `ask` and once as `allow`.\n\n")

	w.f("### Denials by reason\n\n")
	if len(s.reasons) == 0 {
		w.f("None.\n\n")
	} else {
		w.f("| Server | Tool | Rule | Reason | calls |\n|---|---|---|---|---:|\n")
		keys := ranked(s.reasons)
		for i, k := range keys {
			if i == topN {
				w.f("| … %d more | | | | |\n", len(keys)-topN)
				break
			}
			w.f("| %s | %s | %s | %s | %d |\n", serverName(k[0]), code(k[1]), code(k[2]), codeN(k[3], 240), s.reasons[k])
		}
		w.f("\n")
	}

	w.f("### Denied destinations (came from untrusted output)\n\n")
	if len(s.denied) == 0 {
		w.f("None.\n\n")
	} else {
		w.f("| Sent through | Argument = destination | Read through | calls |\n|---|---|---|---:|\n")
		keys := ranked(s.denied)
		for i, k := range keys {
			if i == topN {
				w.f("| … %d more | | | |\n", len(keys)-topN)
				break
			}
			src := "not recorded"
			if k[2] != "" {
				src = code(k[2])
			}
			w.f("| %s | %s | %s | %d |\n", serverName(k[0]), code(k[1]), src, s.denied[k])
		}
		w.f("\n")
	}
	if s.cross > 0 {
		w.f("%s a destination one server returned and the agent then tried to send through another: the proxies of one client share one session, so what any of its servers returned is denied to all of them.\n\n", crossText(s.cross))
	}
	if s.noTaint > 0 {
		w.f("%s name no destination in the line's `taint` field (lines from a Bouncer that didn't record it); their reasons are under \"Denials by reason\".\n\n", plural(s.noTaint, "`sink` denial"))
	}

	w.f("### What vouched for the destinations allowed\n\n")
	w.vouchTable(s)

	w.f("### Destinations in the calls put to a human\n\n")
	w.f("Every destination the sink gate checked in a call that was asked about (the reason names the first one nothing vouched for).\n\n")
	if len(s.asked) == 0 && s.askNone == 0 {
		w.f("None.\n\n")
	} else {
		w.f("| Server | Argument = destination | calls |\n|---|---|---:|\n")
		keys := ranked(s.asked)
		for i, k := range keys {
			if i == topN {
				w.f("| … %d more | | |\n", len(keys)-topN)
				break
			}
			w.f("| %s | %s | %d |\n", serverName(k[0]), code(k[1]), s.asked[k])
		}
		if s.askNone > 0 {
			w.f("| | none named (the server picks the destination, or the line predates `dests`) | %d |\n", s.askNone)
		}
		w.f("\n")
	}
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

func crossText(n int) string {
	if n == 1 {
		return "1 denial was of"
	}
	return fmt.Sprintf("%d denials were of", n)
}

// vouchTable counts the destinations of allowed calls by what vouched for
// them (the lines' dests[].vouch), so a reviewer sees which ways to allow
// were used, and how often.
func (w *writer) vouchTable(s *summary) {
	if len(s.vouches) == 0 && s.noVouch == 0 {
		w.f("None: no allowed call named a destination the sink gate checked.\n\n")
		return
	}
	w.f("| Vouch | What it means | destinations | calls |\n|---|---|---:|---:|\n")
	known := map[string]bool{}
	for _, v := range vouch.Ways {
		known[v.Name] = true
		if n := s.vouches[v.Name]; n > 0 {
			w.f("| %s | %s | %d | %d |\n", code(v.Name), v.Means, n, s.vouchBy[v.Name])
		}
	}
	for _, k := range slices.Sorted(maps.Keys(s.vouches)) {
		if !known[k] {
			w.f("| %s | not known to this Bouncer | %d | %d |\n", code(k), s.vouches[k], s.vouchBy[k])
		}
	}
	if s.noVouch > 0 {
		w.f("| not recorded | a line from a Bouncer that didn't record vouches | %d | |\n", s.noVouch)
	}
	w.f("\n")
}

// vouchText counts the allowed destinations by what vouched for them, for
// evidence cells: "destinations allowed: 2 `prompt`, 1 `directory`".
func (s *summary) vouchText() string {
	if len(s.vouches) == 0 {
		return "no allowed destination in the log"
	}
	var parts []string
	done := map[string]bool{}
	for _, v := range vouch.Ways {
		done[v.Name] = true
		if n := s.vouches[v.Name]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, code(v.Name)))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(s.vouches)) {
		if !done[k] {
			parts = append(parts, fmt.Sprintf("%d %s", s.vouches[k], code(k)))
		}
	}
	return "destinations allowed, by vouch: " + strings.Join(parts, ", ")
}

// shortDigest cuts a policy digest for a table cell; the full digest is in
// "Which policy decided the lines".
func shortDigest(d string) string {
	if h, ok := strings.CutPrefix(d, "sha256:"); ok && len(h) > 12 {
		return "sha256:" + h[:12] + "…"
	}
	return d
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

// denies counts the enforced deny lines of a rule, for evidence cells: a
// line written in observe mode denied nothing.
func (s *summary) denies(rule string) int { return s.enforced[rule] }

func (s *summary) evidence(rules ...string) string {
	var parts []string
	for _, r := range rules {
		n := s.denies(r)
		parts = append(parts, fmt.Sprintf("%d `%s` denial%s", n, r, pluralS(n)))
	}
	return strings.Join(parts, ", ")
}

// pluralS is the plural ending of a count.
func pluralS(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// plural writes "1 thing" or "N things".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
