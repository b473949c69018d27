package engine

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/bouncer-mcp/bouncer/internal/policy"
)

// sinkNames returns the arguments of a call the sink gate checks: the
// declared sink params plus any destination-shaped argument the policy did
// not declare; all arguments when the tool declares none or when none of
// them is in the call (the server may call its recipient something else).
func sinkNames(t *policy.Tool, args map[string]any) []string {
	all := make([]string, 0, len(args))
	for name := range args {
		all = append(all, name)
	}
	sort.Strings(all)
	if len(t.SinkParams) == 0 {
		return all
	}
	seen := map[string]bool{}
	var names []string
	for _, s := range t.SinkParams {
		if _, ok := args[s]; ok && !seen[s] {
			seen[s] = true
			names = append(names, s)
		}
	}
	if len(names) == 0 {
		return all
	}
	for _, a := range all {
		if !seen[a] && policy.IsDestinationName(a) {
			seen[a] = true
			names = append(names, a)
		}
	}
	return names
}

// flatten collects the scalar destinations inside one argument value: each
// element of a list and every field of a structured recipient (its display
// name included: a name can be an address too). Null and empty strings are
// no destination.
func flatten(v any, out []string) []string {
	switch x := v.(type) {
	case nil:
		return out
	case string:
		if strings.TrimSpace(x) == "" {
			return out
		}
		return append(out, x)
	case []any:
		for _, el := range x {
			out = flatten(el, out)
		}
		return out
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			out = flatten(x[k], out)
		}
		return out
	case json.Number:
		return append(out, x.String())
	case bool:
		if x {
			return append(out, "true")
		}
		return append(out, "false")
	}
	return append(out, fmt.Sprint(v))
}

func (e *Engine) sinkGate(t *policy.Tool, args map[string]any) Decision {
	names := sinkNames(t, args)
	var (
		asks           []Destination
		approvedOne    string
		trustedOne     string
		sawDestination bool
		trusted        = map[string]bool{}
	)
	for _, d := range t.TrustedDestinations {
		trusted[vouchFold(d)] = true
	}
	for _, param := range names {
		for _, dest := range flatten(args[param], nil) {
			sawDestination = true
			switch {
			case trusted[vouchFold(dest)]:
				if trustedOne == "" {
					trustedOne = fmt.Sprintf("%s=%s", param, quote(dest))
				}
			case e.store != nil && e.store.Seen(dest):
				return Decision{Verdict: Deny, Rule: RuleSink,
					Reason: fmt.Sprintf("destination %s=%s came from untrusted data (it appeared in this server's output)", param, quote(dest))}
			case e.approved(t.Name, param, dest):
				if approvedOne == "" {
					approvedOne = fmt.Sprintf("%s=%s", param, quote(dest))
				}
			default:
				asks = append(asks, Destination{Param: param, Value: dest})
			}
		}
	}
	if !sawDestination {
		if e.approved(t.Name, "", "") {
			return Decision{Verdict: Allow, Rule: RuleApproval, Reason: "a call naming no destination was approved by a human this session"}
		}
		return Decision{Verdict: Ask, Rule: RuleSink,
			Reason: fmt.Sprintf("%s sends data but names no destination (checked %s); a human must confirm", quote(t.Name), describeNames(names)),
			Asks:   []Destination{{}}}
	}
	if len(asks) > 0 {
		reason := fmt.Sprintf("destination %s=%s is not a vouched recipient", asks[0].Param, quote(asks[0].Value))
		if len(asks) > 1 {
			reason += fmt.Sprintf(" (and %d more)", len(asks)-1)
		}
		return Decision{Verdict: Ask, Rule: RuleSink, Reason: reason, Asks: asks}
	}
	if approvedOne != "" {
		return Decision{Verdict: Allow, Rule: RuleApproval, Reason: "destination " + approvedOne + " was approved by a human this session"}
	}
	return Decision{Verdict: Allow, Rule: RuleSink, Reason: "destination " + trustedOne + " is in trusted_destinations"}
}

func describeNames(names []string) string {
	if len(names) == 0 {
		return "no arguments"
	}
	return strings.Join(names, ", ")
}
