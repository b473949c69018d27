package engine

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/bouncer-mcp/bouncer/internal/dest"
	"github.com/bouncer-mcp/bouncer/internal/policy"
	"github.com/bouncer-mcp/bouncer/internal/vouch"
)

// sinkNames returns the arguments of a call the sink gate checks, and
// whether they are all of them.
//
// A tool whose entry names its sink_params: those present in the call,
// plus every destination-shaped argument (to, recipients, channel_id, ...)
// the entry did not name. A call that leaves out every declared sink has
// no destination, so only its destination-shaped arguments are checked,
// not every word of every argument (a calendar event without participants
// sends nothing to anyone). A tool whose entry names none: every argument.
//
// A tool whose destination is implicit (implicit_destination: true) and
// whose entry names no sink_params: its destination-shaped arguments only,
// since the implicit destination is asked about anyway.
func sinkNames(t *policy.Tool, args map[string]any) (names []string, every bool) {
	all := make([]string, 0, len(args))
	for name := range args {
		all = append(all, name)
	}
	sort.Strings(all)
	if len(t.SinkParams) == 0 && t.Implicit != policy.ImplicitYes {
		return all, true
	}
	seen := map[string]bool{}
	for _, s := range t.SinkParams {
		if _, ok := args[s]; ok && !seen[s] {
			seen[s] = true
			names = append(names, s)
		}
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
	how := map[Destination]string{}
	d := e.sinkDecision(t, schema, args, how)
	d.Dests = checkedDests(t, schema, args)
	if d.Verdict == Allow {
		for i, x := range d.Dests {
			d.Dests[i].Vouch = how[x]
		}
	}
	return d
}

// maxDests bounds the destinations a decision lists for the audit line.
const maxDests = 16

// checkedDests lists the destinations the sink gate checks in a call, for
// the audit line (bouncer log shows them; policy suggest counts them).
func checkedDests(t *policy.Tool, schema map[string]any, args map[string]any) []Destination {
	names, _ := sinkNames(t, args)
	props := properties(schema)
	var out []Destination
	for _, param := range names {
		for _, dest := range flatten(args[param], props[param], nil) {
			if len(out) == maxDests {
				return out
			}
			out = append(out, Destination{Param: param, Value: dest})
		}
	}
	return out
}

func (e *Engine) sinkDecision(t *policy.Tool, schema map[string]any, args map[string]any, how map[Destination]string) Decision {
	names, every := sinkNames(t, args)
	var (
		asks           []Destination
		approvedOne    string
		vouchedOne     string
		vouchedHow     string
		sawDestination bool
	)
	props := properties(schema)
	anchored := e.anchoredParams(names, args, props)
	record := func(param, dest, way, why string) {
		how[Destination{Param: param, Value: dest}] = way
		switch {
		case way == vouch.Approval:
			if approvedOne == "" {
				approvedOne = fmt.Sprintf("%s=%s", param, quote(dest))
			}
		case vouchedOne == "":
			vouchedOne, vouchedHow = fmt.Sprintf("%s=%s", param, quote(dest)), why
		}
	}
	for _, param := range names {
		for _, dest := range flatten(args[param], props[param], nil) {
			sawDestination = true
			c := wayCheck{t: t, param: param, dest: dest, anchored: anchored[param], session: e.vouched(dest)}
			if way, why, ok := e.vouchFor(&c, true); ok {
				record(param, dest, way, why)
				continue
			}
			if src, ok := e.tainted(dest); ok {
				return Decision{Verdict: Deny, Rule: RuleSink, Reason: taintReason(param, dest, src),
					Tainted: &Destination{Param: param, Value: dest}, Source: src}
			}
			if way, why, ok := e.vouchFor(&c, false); ok {
				record(param, dest, way, why)
				continue
			}
			asks = append(asks, Destination{Param: param, Value: dest})
		}
	}
	if t.Implicit == policy.ImplicitYes || (!sawDestination && !every && t.Implicit == policy.ImplicitUnstated) {
		// The server picks a destination the arguments don't name. Only a
		// human can vouch for it, and only for this very call.
		imp := implicitDest(args)
		if e.approved(t.Name, ImplicitParam, imp.Value) {
			how[imp] = vouch.Approval
			if approvedOne == "" {
				approvedOne = fmt.Sprintf("%s=%s", ImplicitParam, quote(imp.Value))
			}
		} else {
			asks = append(asks, imp)
		}
	}
	if !sawDestination && len(asks) == 0 && approvedOne == "" {
		if !every {
			// implicit_destination: false: a call naming none of the
			// tool's destinations sends to no one.
			return Decision{Verdict: Allow, Rule: RuleSink,
				Reason: fmt.Sprintf("%s names no destination (destination arguments checked: %s), and its policy says it then sends to no one (implicit_destination: false)", quote(t.Name), describeNames(names))}
		}
		if e.approved(t.Name, "", "") {
			return Decision{Verdict: Allow, Rule: RuleApproval, Reason: "a call naming no destination was approved by a human this session"}
		}
		return Decision{Verdict: Ask, Rule: RuleSink,
			Reason: fmt.Sprintf("%s sends data but names no destination (checked %s); a human must confirm", quote(t.Name), describeNames(names)),
			Asks:   []Destination{{}}}
	}
	if len(asks) > 0 {
		reason := fmt.Sprintf("destination %s=%s is not a vouched recipient", asks[0].Param, quote(asks[0].Value))
		if asks[0].Param == ImplicitParam {
			reason = implicitReason(t, names)
		}
		if len(asks) > 1 {
			reason += fmt.Sprintf(" (and %d more)", len(asks)-1)
		}
		return Decision{Verdict: Ask, Rule: RuleSink, Reason: reason, Asks: asks}
	}
	if approvedOne != "" {
		return Decision{Verdict: Allow, Rule: RuleApproval, Reason: "destination " + approvedOne + " was approved by a human this session"}
	}
	return Decision{Verdict: Allow, Rule: RuleSink, Reason: "destination " + vouchedOne + " " + vouchedHow}
}

// vouchFor asks the ways to vouch that win over taint (or, with wins
// false, those that don't), in the table's order, and returns the first
// that vouches for c's destination, and why.
func (e *Engine) vouchFor(c *wayCheck, wins bool) (way, why string, ok bool) {
	for _, w := range vouch.Ways {
		if w.WinsOverTaint != wins {
			continue
		}
		if check := wayChecks[w.Name]; check != nil {
			if why, ok := check(e, c); ok {
				return w.Name, why, true
			}
		}
	}
	return "", "", false
}

// wayCheck is one destination the sink gate asks the ways to vouch about.
type wayCheck struct {
	t        *policy.Tool
	param    string
	dest     string
	anchored bool   // param names the people of a record the user named
	session  string // the way the client session vouches for dest, or ""
}

// wayChecks are the engine's checks of the ways to vouch (package vouch),
// by name: each says whether its way vouches for the destination, and
// why, in words for the decision's reason. The table says in which order
// they run and which of them win over taint.
var wayChecks = map[string]func(e *Engine, c *wayCheck) (string, bool){
	vouch.Allowlist: func(_ *Engine, c *wayCheck) (string, bool) {
		return "is in trusted_destinations", c.t.Trusts(c.dest)
	},
	vouch.Prompt: func(_ *Engine, c *wayCheck) (string, bool) {
		return "was typed by the user", c.session == vouch.Prompt
	},
	vouch.Remembered: func(e *Engine, c *wayCheck) (string, bool) {
		return fmt.Sprintf("was vouched for by a human for server %s", quote(e.opts.Server)), c.session == vouch.Remembered
	},
	vouch.Anchor: func(_ *Engine, c *wayCheck) (string, bool) {
		return "is one of the people of the one record the user named, and " + c.param + " names all of them (anchor_records)", c.anchored
	},
	vouch.Directory: func(e *Engine, c *wayCheck) (string, bool) {
		// A whole entry of the user's own listing of that kind (the
		// channels of the workspace), named in an argument of that kind:
		// it wins over taint, as output that echoes an entry
		// ("recipient: random") says nothing new.
		kind := c.t.SinkKinds[c.param]
		if kind == "" || e.opts.Session == nil || !e.opts.Session.InDirectory(kind, c.dest) {
			return "", false
		}
		return fmt.Sprintf("is a whole entry of a %s directory (a tool the policy marks directory: %s listed it)", quote(kind), kind), true
	},
	vouch.TrustedOutput: func(_ *Engine, c *wayCheck) (string, bool) {
		return "came from output the policy trusts (trusted_output) and from no untrusted output", c.session == vouch.TrustedOutput
	},
	vouch.Approval: func(e *Engine, c *wayCheck) (string, bool) {
		return "was approved by a human this session", e.approved(c.t.Name, c.param, c.dest)
	},
}

// taintReason says why a tainted destination is denied, naming the server
// whose output held it, and the way out a person takes in their own
// terminal. It names the command, not a ready-made line with the
// destination in it: an injected agent relays such lines to its user, and
// vouching for the attacker must take a person's own look (see
// docs/approvals.md).
func taintReason(param, dest, server string) string {
	where := "this session's tool output"
	if server != "" {
		where = fmt.Sprintf("the output of server %s", quote(server))
	}
	return fmt.Sprintf("destination %s=%s came from untrusted data (it appeared in %s). "+
		"If you, the human, know this recipient from elsewhere, review it in your own terminal with: bouncer trust add",
		param, quote(dest), where)
}

// anchoredParams lists the arguments whose destinations, all together, are
// the people of a record the user named (see session.Anchored), and not
// the user's own destinations alone.
func (e *Engine) anchoredParams(names []string, args map[string]any, props map[string]map[string]any) map[string]bool {
	if e.opts.Session == nil {
		return nil
	}
	var out map[string]bool
	for _, param := range names {
		vals := flatten(args[param], props[param], nil)
		if len(vals) == 0 {
			continue
		}
		own := true
		for _, v := range vals {
			own = own && e.pol.Own(v)
		}
		if own || !e.opts.Session.Anchored(vals) {
			continue
		}
		if out == nil {
			out = map[string]bool{}
		}
		out[param] = true
	}
	return out
}

// implicitReason says why a call whose server picks its destination is
// asked about, and what the policy author can say instead.
func implicitReason(t *policy.Tool, names []string) string {
	if t.Implicit == policy.ImplicitYes {
		return fmt.Sprintf("%s sends to a destination its arguments don't name (implicit_destination: true: its server picks it, "+
			"as a reply goes to the sender of the message it answers); a human must confirm this very call", quote(t.Name))
	}
	if len(t.SinkParams) > 0 {
		names = t.SinkParams
	}
	return fmt.Sprintf("%s names none of its destinations (%s), so its server may send to one its arguments don't name; "+
		"a human must confirm this very call (if such a call sends to no one, the policy can say implicit_destination: false)",
		quote(t.Name), describeNames(names))
}

// tainted reports whether dest appeared in untrusted output, and whose.
func (e *Engine) tainted(d string) (string, bool) {
	if e.opts.Session != nil {
		return e.opts.Session.Tainted(d)
	}
	if e.store != nil {
		for _, form := range append([]string{d}, dest.Variants(d)...) {
			if e.store.Seen(form) {
				return "", true
			}
		}
	}
	return "", false
}

// ImplicitParam is the argument name under which a call's implicit
// destination is asked about and approved (see implicitDest). No real
// argument is named so: a tool's argument names are identifiers.
const ImplicitParam = "(implicit)"

// implicitDest stands for the destination a call's server picks: the call's
// arguments themselves, in the audit line's form (long strings as their
// digests), so that an approval holds for this very call, and a reply to
// another message asks again.
func implicitDest(args map[string]any) Destination {
	b, err := encodeValue(nil, elide(args))
	if err != nil {
		b = []byte("(arguments that can't be shown)")
	}
	return Destination{Param: ImplicitParam, Value: string(b)}
}

// vouched asks the session which of its ways vouches for dest ("" for
// none).
func (e *Engine) vouched(dest string) string {
	if e.opts.Session == nil {
		return ""
	}
	return e.opts.Session.Vouched(e.opts.Server, dest)
}

func describeNames(names []string) string {
	if len(names) == 0 {
		return "none is given"
	}
	return strings.Join(names, ", ")
}
