// Package engine decides one tool call: allow, deny or ask, with a reason a
// person can read and the rule that fired.
//
// The order is fixed: is the tool pinned and unchanged, is it within its
// budget, do its paths and patterns pass, and then the sink gate on its
// destinations: allowlisted → allow; seen in untrusted output → deny; approved
// → allow; anything else → ask. No model takes part and no file, pipe or
// clock is touched here except through what the caller hands in, so the same
// call with the same history always gets the same verdict.
package engine

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/bouncer-mcp/bouncer/internal/dest"
	"github.com/bouncer-mcp/bouncer/internal/policy"
	"github.com/bouncer-mcp/bouncer/internal/session"
	"github.com/bouncer-mcp/bouncer/internal/taint"
)

// Verdict is the outcome of a decision.
type Verdict string

// The three verdicts.
const (
	Allow Verdict = "allow"
	Deny  Verdict = "deny"
	Ask   Verdict = "ask"
)

// Rule names what decided a call, as written in audit lines.
type Rule string

// The rules, in the order the engine applies them.
const (
	RulePinning  Rule = "pinning"
	RuleBudget   Rule = "budget"
	RulePath     Rule = "path"
	RulePattern  Rule = "pattern"
	RuleSink     Rule = "sink"
	RuleApproval Rule = "approval"
	RuleDefault  Rule = "default"
	// RuleConfirm: the policy says every call of the tool needs a human
	// (approval: always).
	RuleConfirm Rule = "confirm"
)

// Destination is one destination value the sink gate looked at.
type Destination struct {
	Param string // the argument it came from ("to", "recipients[1].email")
	Value string // the value as sent
	// Vouch names the way that vouched for it (package vouch), on an
	// allowed destination; empty otherwise.
	Vouch string
}

// Decision is the engine's answer for one call.
type Decision struct {
	Verdict Verdict
	Reason  string // empty for a plain allow
	Rule    Rule
	// Asks lists every destination that needs a human (Verdict Ask, rule
	// sink): approving all of them allows the call.
	Asks []Destination
	// Tainted is the destination of a taint deny, and Source the server
	// whose output held it ("" when unknown).
	Tainted *Destination
	Source  string
	// Dests lists the destinations the sink gate checked (at most 16), for
	// the audit line.
	Dests []Destination
	// Args is the arguments as judged, re-encoded (with the paths the
	// path check canonicalised): what the audit line records. Nil when the
	// arguments could not be read.
	Args []byte
	// ArgsElided says Args holds long strings elided (see MaxAuditArgs):
	// the audit line's args_form is then "elided".
	ArgsElided bool
	// Forward is the tools/call params to send upstream when the call is
	// allowed: the name, Args and the protocol members that were read, and
	// nothing else. A proxy forwards these bytes, never the ones the client
	// sent, so the server reads exactly what was judged.
	Forward []byte
}

// Options are what the caller hands the engine from the outside world.
type Options struct {
	// Resolve resolves an absolute path the way the kernel does: symlinks
	// in its existing part followed, ".." applied to where they point (see
	// fsresolve.Existing). It fails on a path it can't place, and on a
	// name a server could match to another entry; an error that has an
	// OnDisk() string method names that entry. Nil means lexical checks
	// only.
	Resolve func(path string) (string, error)
	// WorkDir is the upstream's working directory, against which a tool
	// with relative_paths: workdir resolves relative path arguments.
	// Empty or relative means such a path is denied.
	WorkDir string
	// Session, when set, is the client session this server belongs to:
	// the engine asks it, not the store, whether a destination appeared in
	// untrusted output (any server's) and whether something vouches for
	// it (the user's prompt, a human's remembered yes, trusted output).
	Session *session.Session
	// Server is this server's name in the session.
	Server string
	// Own answers which paths are Bouncer's own state: the state
	// directory, the policy and trust files, the audit log, the client's
	// config and hook files (each also as its symlinks resolve). No
	// argument may name them (see ownstate.go). Nil protects nothing.
	Own OwnState
	// Home is the home directory a server expands "~" to.
	Home string
	// Budget, when set, counts each tool's calls beyond this engine's own
	// count (bouncer listen: one user's calls across sessions, in a time
	// window), and max_calls holds for both counts: a new session does
	// not start a new budget.
	Budget Budget
}

// Budget is a count of calls kept outside one engine (see Options.Budget).
// Take counts one attempt at tool when count is set, and returns the
// attempts counted so far.
type Budget interface {
	Take(tool string, count bool) int
}

// Engine decides calls for one session of one server. It is safe for
// concurrent use: budgets are counted under a lock, so two calls racing for
// the last slot can't both get it.
type Engine struct {
	pol   *policy.Policy
	store *taint.Store
	opts  Options
	own   atomic.Pointer[ownSet] // Own as last compiled

	mu        sync.Mutex
	pinAll    bool
	pinned    map[string]*pinnedTool
	changed   map[string]string // tool → why it is refused since startup
	refused   string            // why every tool is refused (Refuse), or ""
	calls     map[string]int    // tool → attempts so far
	approvals map[approvalKey]bool
}

type approvalKey struct{ tool, param, dest string }

// New returns an engine over a policy and a taint store. Until Pin or PinAll
// is called, every tool is refused with rule pinning.
func New(pol *policy.Policy, store *taint.Store, opts Options) *Engine {
	return &Engine{
		pol:       pol,
		store:     store,
		opts:      opts,
		pinned:    map[string]*pinnedTool{},
		changed:   map[string]string{},
		calls:     map[string]int{},
		approvals: map[approvalKey]bool{},
	}
}

// PinAll makes every tool count as pinned (bouncer check without --tools).
func (e *Engine) PinAll() {
	e.mu.Lock()
	e.pinAll = true
	e.mu.Unlock()
}

// Approve records a human's yes for one destination of one tool argument for
// the rest of the session: the same destination (dest.Exact), nothing
// folded. An approval never wins over taint.
func (e *Engine) Approve(tool, param, d string) {
	e.mu.Lock()
	e.approvals[approvalKey{tool, param, dest.Exact(d)}] = true
	e.mu.Unlock()
}

// Policy is the policy the engine judges by: the user files' entries over
// the pack of its server (policy.Policy.ForServer).
func (e *Engine) Policy() *policy.Policy { return e.pol }

// DomainSeen reports whether the domain of d (dest.Domains: its host, or
// the registrable part of it) appeared as a whole token in untrusted
// output of the session (a link, a host, the domain named on its own),
// which form, and whose output held it. It is a hint for the human asked
// about d, never a decision, and Decide does not call it: output is
// recorded as tokens, not their domains, so an address at that domain in
// the output is not found this way, and a domain is far wider than d.
func (e *Engine) DomainSeen(d string) (domain, server string, ok bool) {
	for _, dom := range dest.Domains(d) {
		if server, ok := e.tainted(dom); ok {
			return dom, server, true
		}
	}
	return "", "", false
}

func (e *Engine) approved(tool, param, d string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.approvals[approvalKey{tool, param, dest.Exact(d)}]
}

// TrustedOutput reports whether the policy marks tool's output as the
// user's own data (trusted_output), which vouches instead of tainting.
func (e *Engine) TrustedOutput(tool string) bool {
	t, ok := e.pol.Lookup(tool)
	return ok && t.TrustedOutput
}

// Directory returns the kind of entry the policy says tool lists
// (directory: KIND), or "".
func (e *Engine) Directory(tool string) string {
	t, ok := e.pol.Lookup(tool)
	if !ok {
		return ""
	}
	return t.Directory
}

// AnchorRecords reports whether the policy opts tool's records in to
// anchoring (anchor_records: true or text_json), and whether text blocks
// that are wholly JSON count as records too (text_json).
func (e *Engine) AnchorRecords(tool string) (on, text bool) {
	t, ok := e.pol.Lookup(tool)
	return ok && t.AnchorRecords, ok && t.AnchorText
}

// Decide decides a call and uses a slot of the tool's budget.
func (e *Engine) Decide(c Call) Decision { return e.decide(c, true) }

// Recheck decides a call again after a human approved destinations, without
// using another budget slot.
func (e *Engine) Recheck(c Call) Decision { return e.decide(c, false) }

func (e *Engine) decide(c Call, countBudget bool) Decision {
	args, err := c.parsed()
	if err != nil {
		return Decision{Verdict: Deny, Rule: RuleDefault,
			Reason: fmt.Sprintf("arguments of %s are not a JSON object Bouncer can judge: %v", quote(c.Tool), err)}
	}
	d := e.judge(c, args, countBudget)
	fwdArgs, params, err := c.forward(args)
	if err != nil {
		return Decision{Verdict: Deny, Rule: RuleDefault,
			Reason: fmt.Sprintf("arguments of %s can't be re-encoded for the server: %v", quote(c.Tool), err)}
	}
	d.Args = fwdArgs
	if len(fwdArgs) > MaxAuditArgs {
		// The audit line keeps the arguments' shape and every short
		// value, and a digest of each long one.
		if b, err := encodeValue(nil, elide(args)); err == nil {
			d.Args, d.ArgsElided = b, true
		}
	}
	if d.Verdict != Deny {
		d.Forward = params
	}
	return d
}

func (e *Engine) judge(c Call, args map[string]any, countBudget bool) Decision {
	pin, d, ok := e.checkPinned(c.Tool)
	if !ok {
		return d
	}
	schema := pin.schema
	t := e.pol.ForPinned(pin.traits, pin.params, args)
	if d, ok := checkDeclared(t, schema, pin.props, args); !ok {
		return d
	}
	if d, ok := e.checkOwnState(t, args); !ok {
		return d
	}

	if d, ok := e.checkBudget(t, countBudget); !ok {
		return d
	}
	if d, ok := e.checkCountsAs(t, args, countBudget); !ok {
		return d
	}
	if d, ok := e.checkPaths(t, args); !ok {
		return d
	}
	if d, ok = checkPatterns(t, args); !ok {
		return d
	}
	d = Decision{Verdict: Allow, Rule: RuleDefault}
	if t.Exfiltrating || t.Fallback {
		// A tool no pack or policy names is judged by the destinations
		// its values are, whether or not its name says it sends.
		d = e.sinkGate(t, schema, args)
	}
	if t.AlwaysAsk && d.Verdict != Deny {
		d = e.confirm(t, args, d)
	}
	return d
}

// confirm asks a human about a call of a tool whose policy says every
// call needs one (approval: always), bound to its exact arguments as an
// implicit destination is: a yes holds for this very call, and the same
// tool with other arguments asks again. What the other checks asked is
// asked with it.
func (e *Engine) confirm(t *policy.Tool, args map[string]any, d Decision) Decision {
	c := Destination{Param: CallParam, Value: callValue(args)}
	if e.approved(t.Name, c.Param, c.Value) {
		if d.Verdict == Allow && d.Rule == RuleDefault {
			d.Rule, d.Reason = RuleApproval, "this very call was approved by a human (approval: always)"
		}
		return d
	}
	why := fmt.Sprintf("the policy says every call of %s needs a human (approval: always, %s); a human must confirm this very call", quote(t.Name), t.Source)
	if d.Verdict == Ask {
		d.Reason += "; and " + why
		d.Asks = append(d.Asks, c)
		return d
	}
	return Decision{Verdict: Ask, Rule: RuleConfirm, Reason: why, Asks: []Destination{c}, Dests: d.Dests}
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	}
	return "an object"
}

func (e *Engine) checkBudget(t *policy.Tool, count bool) (Decision, bool) {
	if t.MaxCalls == nil {
		return Decision{}, true
	}
	max := *t.MaxCalls
	n := e.count(t.Name, count)
	if max == 0 {
		return Decision{Verdict: Deny, Rule: RuleBudget,
			Reason: fmt.Sprintf("tool %s is forbidden (max_calls: 0, %s)", quote(t.Name), t.Source)}, false
	}
	if n > max {
		return Decision{Verdict: Deny, Rule: RuleBudget,
			Reason: fmt.Sprintf("call budget %d for %s exceeded (attempt %d)", max, quote(t.Name), n)}, false
	}
	return Decision{}, true
}

// count counts an attempt at tool (when count is set) in this engine and
// in Options.Budget, and returns the larger count.
func (e *Engine) count(tool string, count bool) int {
	e.mu.Lock()
	if count {
		e.calls[tool]++
	}
	n := e.calls[tool]
	e.mu.Unlock()
	if e.opts.Budget != nil {
		n = max(n, e.opts.Budget.Take(tool, count))
	}
	return n
}

// checkCountsAs takes a slot of each other tool's budget that the call
// counts as (counts_as): a relabel to TRASH uses the delete budget, so a
// hijacked agent can't delete mail without limit by relabelling it.
func (e *Engine) checkCountsAs(t *policy.Tool, args map[string]any, count bool) (Decision, bool) {
	for _, ca := range t.CountsAs {
		if !matchesAny(ca.When, args) {
			continue
		}
		other := e.pol.For(ca.Tool, nil)
		if other.MaxCalls == nil {
			continue
		}
		max := *other.MaxCalls
		n := e.count(other.Name, count)
		if n > max {
			return Decision{Verdict: Deny, Rule: RuleBudget,
				Reason: fmt.Sprintf("%s with %s counts as %s, whose call budget %d is used up (attempt %d)",
					quote(t.Name), describeWhen(ca.When), quote(other.Name), max, n)}, false
		}
	}
	return Decision{}, true
}

// matchesAny reports whether some pattern matches its argument: the whole
// scalar value, or any element of a list. A missing argument does not match.
func matchesAny(pats []policy.ArgPattern, args map[string]any) bool {
	for _, ap := range pats {
		if matchesValue(ap, lookup(args, ap.Arg)) {
			return true
		}
	}
	return false
}

// lookup finds an argument by name, or by a dotted path into object
// arguments ("parameters.labelIds") when no argument has the whole name.
func lookup(args map[string]any, name string) any {
	if v, ok := args[name]; ok {
		return v
	}
	head, rest, ok := strings.Cut(name, ".")
	if !ok {
		return nil
	}
	sub, _ := args[head].(map[string]any)
	if sub == nil {
		return nil
	}
	return lookup(sub, rest)
}

func matchesValue(ap policy.ArgPattern, v any) bool {
	if list, ok := v.([]any); ok {
		for _, el := range list {
			if matchesValue(ap, el) {
				return true
			}
		}
		return false
	}
	s, ok := scalarString(v)
	return ok && v != nil && ap.Re != nil && ap.Re.MatchString(s)
}

func describeWhen(pats []policy.ArgPattern) string {
	parts := make([]string, 0, len(pats))
	for _, ap := range pats {
		parts = append(parts, fmt.Sprintf("%s matching /%s/", ap.Arg, ap.Pattern))
	}
	return strings.Join(parts, " or ")
}

func checkPatterns(t *policy.Tool, args map[string]any) (Decision, bool) {
	for _, ap := range t.ArgPatterns {
		v, present := args[ap.Arg]
		if !present {
			continue
		}
		s, ok := scalarString(v)
		if !ok {
			return Decision{Verdict: Deny, Rule: RulePattern,
				Reason: fmt.Sprintf("%s is %s, not a value /%s/ can match", ap.Arg, jsonKind(v), ap.Pattern)}, false
		}
		if ap.Re == nil || !ap.Re.MatchString(s) {
			return Decision{Verdict: Deny, Rule: RulePattern,
				Reason: fmt.Sprintf("%s=%s does not match /%s/", ap.Arg, quote(s), ap.Pattern)}, false
		}
	}
	return Decision{}, true
}

// scalarString renders a JSON scalar the way a pattern or destination sees
// it: strings as they are, numbers as written, booleans and null as their
// JSON words. Arrays and objects are not scalars.
func scalarString(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case json.Number:
		return x.String(), true
	case bool:
		if x {
			return "true", true
		}
		return "false", true
	case nil:
		return "null", true
	}
	return "", false
}
