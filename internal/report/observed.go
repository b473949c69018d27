package report

import (
	"fmt"
	"sort"

	"github.com/bouncer-mcp/bouncer/internal/audit"
)

// observed writes what observe mode (bouncer run --observe) would have
// blocked: the lines audited with enforced: false whose verdict was deny or
// ask, counted by server, tool and rule. Nothing here was blocked: it is
// the evidence a team tunes its policy from before it enforces.
func (w *writer) observed(entries []audit.Entry) {
	type key struct{ server, tool, verdict, rule string }
	counts := map[key]int{}
	total := 0
	for _, e := range entries {
		if !e.Observed() || e.Verdict == "allow" {
			continue
		}
		counts[key{e.Server, e.Tool, e.Verdict, e.Rule}]++
		total++
	}
	if total == 0 {
		return
	}
	w.f("## What observe mode would have blocked\n\n")
	w.f("%s were audited in observe mode (`bouncer run --observe`, `\"enforced\": false`) with a verdict of deny or ask: the calls went through, and would have been blocked or put to a human had the policy been enforced. `bouncer policy suggest` turns the legitimate ones into a policy to review (docs/rollout.md).\n\n", plural(total, "call"))
	keys := make([]key, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if counts[a] != counts[b] {
			return counts[a] > counts[b]
		}
		return fmt.Sprint(a) < fmt.Sprint(b)
	})
	w.f("| server | tool | would be | rule | calls |\n| --- | --- | --- | --- | --- |\n")
	for _, k := range keys {
		w.f("| %s | %s | %s | %s | %d |\n", code(k.server), code(k.tool), k.verdict, code(k.rule), counts[k])
	}
	w.f("\n")
}
