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
	names, every := sinkNames(t, args)
	cands := candidates(t, schema, args, names)
	var d Decision
	if t.Exfiltrating {
		d = e.sinkDecision(t, schema, args, names, every, cands, how)
	} else {
		d = e.valueDecision(t, cands, how)
	}
	if len(cands) > maxDests {
		cands = cands[:maxDests]
	}
	if d.Verdict == Allow && !t.Exfiltrating {
		// A tool that doesn't send lists no destination on an allowed
		// line: nothing vouched for them, and none was needed.
		return d
	}
	d.Dests = cands
	if d.Verdict == Allow {
		for i, x := range d.Dests {
			d.Dests[i].Vouch = how[x]
		}
	}
	return d
}

// maxDests bounds the destinations a decision lists for the audit line.
const maxDests = 16

// candidates lists the destinations the sink gate judges in a call, each
// once, for the decision and the audit line (bouncer log shows them;
// policy suggest counts them):
//
//   - in a tool that sends, each value of its sink arguments (names);
//   - in a tool no pack or policy names, every value at any depth that is
//     a destination by what it is (dest.IsDestination), whatever its key;
//   - in a tool that sends, every destination a mail library would read
//     in a header line after a CR or LF of any of its strings
//     (dest.HeaderDestinations);
//
// and a value that is a list of addresses in one string is judged as its
// addresses, where nodemailer and Python's getaddresses split it alike
// (dest.AddressList); where they don't, as one value, which nothing can
// vouch for.
func candidates(t *policy.Tool, schema map[string]any, args map[string]any, names []string) []Destination {
	var out []Destination
	var seen map[Destination]bool // made at the first destination (most calls have none)
	add := func(param, v string) {
		parts, ok := dest.AddressList(v)
		if !ok {
			parts = []string{v}
		}
		if seen == nil {
			seen = map[Destination]bool{}
		}
		for _, p := range parts {
			d := Destination{Param: param, Value: p}
			if !seen[d] {
				seen[d] = true
				out = append(out, d)
			}
		}
	}
	if t.Exfiltrating {
		props := properties(schema)
		for _, param := range names {
			for _, v := range flatten(args[param], props[param], nil) {
				add(param, v)
			}
		}
	}
	all := make([]string, 0, len(args))
	for name := range args {
		all = append(all, name)
	}
	sort.Strings(all)
	for _, param := range all {
		eachString(args[param], policy.IsPathName(param), func(s string, pathNamed bool) {
			if t.Fallback && dest.IsDestination(s) && !(pathNamed && hostOnly(s)) {
				add(param, s)
			}
			if t.Exfiltrating {
				for _, h := range dest.HeaderDestinations(s) {
					add(param, h)
				}
			}
		})
		if t.Fallback {
			eachKey(args[param], func(k string) {
				if dest.IsDestination(k) {
					add(param, k)
				}
			})
		}
	}
	return out
}

// eachString calls fn on each string in v (list elements and object
// values, at any depth, objects in key order), with whether it sits under
// a path-shaped argument or key.
func eachString(v any, pathNamed bool, fn func(s string, pathNamed bool)) {
	switch x := v.(type) {
	case string:
		fn(x, pathNamed)
	case []any:
		for _, el := range x {
			eachString(el, pathNamed, fn)
		}
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			eachString(x[k], pathNamed || policy.IsPathName(k), fn)
		}
	}
}

// hostOnly reports whether s reads as a host, or a host and a path, with
// no scheme: in a path-shaped argument such a value ("notes.md",
// "docs.example/x") is a file name, as the path check reads it.
func hostOnly(s string) bool {
	d, err := dest.Parse(s)
	return err == nil && (d.Kind == dest.Host || d.Kind == dest.URL && strings.HasPrefix(d.Canon, "//"))
}

// eachKey calls fn on each object key in v, at any depth: a recipient can
// be a key ({"x@evil.example": "Bob"}).
func eachKey(v any, fn func(string)) {
	switch x := v.(type) {
	case []any:
		for _, el := range x {
			eachKey(el, fn)
		}
	case map[string]any:
		for k, el := range x {
			fn(k)
			eachKey(el, fn)
		}
	}
}

// valueDecision judges the destinations of a call to a tool that no pack
// or policy names and whose name says it doesn't send: one that untrusted
// output held, and that nothing winning over taint vouches for, is asked
// about (a search for a tainted address costs a question and never
// leaks); a human's yes to it holds for the session. Nothing else is
// asked: a destination the agent brought from elsewhere, or a value that
// is no destination at all ("Alice" in a relation), makes no call a send.
func (e *Engine) valueDecision(t *policy.Tool, cands []Destination, how map[Destination]string) Decision {
	var asks []Destination
	var first Decision
	for _, c := range cands {
		wc := wayCheck{t: t, param: c.Param, dest: c.Value, session: e.vouched(c.Value)}
		if way, _, ok := e.vouchFor(&wc, true); ok {
			how[c] = way
			continue
		}
		src, ok := e.taintedAny(c.Value)
		if !ok {
			continue
		}
		if e.approved(t.Name, c.Param, c.Value) {
			how[c] = vouch.Approval
			continue
		}
		if len(asks) == 0 {
			first = Decision{Verdict: Ask, Rule: RuleSink,
				Reason: fmt.Sprintf("destination %s=%s came from untrusted data (it appeared in %s), and %s says nothing of sending (no pack or policy names it), so a human must confirm this call",
					c.Param, quote(c.Value), outputOf(src), quote(t.Name)),
				Tainted: &Destination{Param: c.Param, Value: c.Value}, Source: src}
		}
		asks = append(asks, c)
	}
	if len(asks) == 0 {
		return Decision{Verdict: Allow, Rule: RuleDefault}
	}
	if len(asks) > 1 {
		first.Reason += fmt.Sprintf(" (and %d more)", len(asks)-1)
	}
	first.Asks = asks
	return first
}

func (e *Engine) sinkDecision(t *policy.Tool, schema map[string]any, args map[string]any, names []string, every bool, cands []Destination, how map[Destination]string) Decision {
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
	for _, c := range cands {
		param, dest := c.Param, c.Value
		sawDestination = true
		wc := wayCheck{t: t, param: param, dest: dest, anchored: anchored[param], session: e.vouched(dest)}
		if way, why, ok := e.vouchFor(&wc, true); ok {
			record(param, dest, way, why)
			continue
		}
		if src, ok := e.taintedAny(dest); ok {
			return Decision{Verdict: Deny, Rule: RuleSink, Reason: taintReason(param, dest, src),
				Tainted: &Destination{Param: param, Value: dest}, Source: src}
		}
		if way, why, ok := e.vouchFor(&wc, false); ok {
			record(param, dest, way, why)
			continue
		}
		asks = append(asks, Destination{Param: param, Value: dest})
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
	return fmt.Sprintf("destination %s=%s came from untrusted data (it appeared in %s). "+
		"If you, the human, know this recipient from elsewhere, review it in your own terminal with: bouncer trust add",
		param, quote(dest), outputOf(server))
}

// outputOf names the output a tainted destination appeared in.
func outputOf(server string) string {
	if server == "" {
		return "this session's tool output"
	}
	return fmt.Sprintf("the output of server %s", quote(server))
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

// taintedAny reports whether d appeared in untrusted output, or, when d
// is a list in one string that can't be split as its receivers split it,
// any element of it cut at its commas and semicolons (taint may over-match:
// a match only denies or asks).
func (e *Engine) taintedAny(d string) (string, bool) {
	if src, ok := e.tainted(d); ok {
		return src, true
	}
	if !strings.ContainsAny(d, ",;") {
		return "", false
	}
	for _, p := range strings.FieldsFunc(d, func(r rune) bool { return r == ',' || r == ';' }) {
		if p = strings.Trim(p, " \t"); p != "" {
			if src, ok := e.tainted(p); ok {
				return src, true
			}
		}
	}
	return "", false
}

// ImplicitParam is the argument name under which a call's implicit
// destination is asked about and approved (see implicitDest), and
// CallParam the one under which a call of a tool whose policy says
// approval: always is. No real argument is named so: a tool's argument
// names are identifiers.
const (
	ImplicitParam = "(implicit)"
	CallParam     = "(call)"
)

// implicitDest stands for the destination a call's server picks: the call
// itself (callValue), so that an approval holds for this very call, and a
// reply to another message asks again.
func implicitDest(args map[string]any) Destination {
	return Destination{Param: ImplicitParam, Value: callValue(args)}
}

// callValue is a call's arguments in the audit line's form (long strings
// as their digests): what a human approves when a yes must hold for this
// very call.
func callValue(args map[string]any) string {
	b, err := encodeValue(nil, elide(args))
	if err != nil {
		b = []byte("(arguments that can't be shown)")
	}
	return string(b)
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
