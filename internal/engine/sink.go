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
// them is in the call (the server may call its recipient something else),
// and then every reports true.
func sinkNames(t *policy.Tool, args map[string]any) (names []string, every bool) {
	all := make([]string, 0, len(args))
	for name := range args {
		all = append(all, name)
	}
	sort.Strings(all)
	if len(t.SinkParams) == 0 {
		return all, true
	}
	seen := map[string]bool{}
	for _, s := range t.SinkParams {
		if _, ok := args[s]; ok && !seen[s] {
			seen[s] = true
			names = append(names, s)
		}
	}
	if len(names) == 0 {
		return all, true
	}
	for _, a := range all {
		if !seen[a] && policy.IsDestinationName(a) {
			seen[a] = true
			names = append(names, a)
		}
	}
	return names, false
}

// flatten collects the scalar destinations inside one argument value: each
// element of a list and every field of a structured recipient (its display
// name included: a name can be an address too). Object keys are judged too,
// since a recipient can be a key ({"x@evil.example": "Bob"}), unless the key
// names structure: a property the pinned schema declares at that place, or a
// field name of a recipient record (structureKey). Null and empty strings
// are no destination.
func flatten(v any, schema map[string]any, out []string) []string {
	switch x := v.(type) {
	case nil:
		return out
	case string:
		if strings.TrimSpace(x) == "" {
			return out
		}
		return append(out, x)
	case []any:
		items := subschemas(schema, "items")
		var item map[string]any
		if len(items) == 1 {
			item = items[0]
		}
		for _, el := range x {
			out = flatten(el, item, out)
		}
		return out
	case map[string]any:
		props := properties(schema)
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			sub, declared := props[k]
			if !declared && !structureKey(k) && strings.TrimSpace(k) != "" {
				out = append(out, k)
			}
			out = flatten(x[k], sub, out)
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

// structureWords are field names of recipient records that name a field,
// not a destination: {"email": ..., "name": ..., "type": "cc"}.
var structureWords = map[string]bool{
	"name": true, "names": true, "display_name": true, "displayname": true, "full_name": true, "fullname": true,
	"first_name": true, "last_name": true, "type": true, "kind": true, "role": true, "id": true, "label": true,
	"value": true, "mode": true, "field": true,
}

// structureKey reports whether an object key is a field name rather than
// data: a destination-shaped argument name (email, address, to) or one of
// structureWords.
func structureKey(k string) bool {
	return policy.IsDestinationName(k) || structureWords[strings.ToLower(k)]
}

func (e *Engine) sinkGate(t *policy.Tool, schema map[string]any, args map[string]any) Decision {
	names, _ := sinkNames(t, args)
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
	props := properties(schema)
	for _, param := range names {
		for _, dest := range flatten(args[param], props[param], nil) {
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
