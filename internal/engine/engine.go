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

	"github.com/bouncer-mcp/bouncer/internal/policy"
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
)

// Call is one tools/call: the tool's name and its arguments as sent (a JSON
// object; null or absent is an empty object).
type Call struct {
	Tool string
	Args json.RawMessage
}

// Destination is one destination value the sink gate looked at.
type Destination struct {
	Param string // the argument it came from ("to", "recipients[1].email")
	Value string // the value as sent
}

// Decision is the engine's answer for one call.
type Decision struct {
	Verdict Verdict
	Reason  string // empty for a plain allow
	Rule    Rule
	// Asks lists every destination that needs a human (Verdict Ask, rule
	// sink): approving all of them allows the call.
	Asks []Destination
}

// Options are what the caller hands the engine from the outside world.
type Options struct {
	// Resolve resolves symlinks in the existing part of a path (see
	// fsresolve.Existing). Nil means lexical checks only.
	Resolve func(path string) (string, error)
	// WorkDir resolves relative path arguments (the upstream's working
	// directory). Empty means a relative path argument is denied.
	WorkDir string
}

// Engine decides calls for one session of one server. It is safe for
// concurrent use: budgets are counted under a lock, so two calls racing for
// the last slot can't both get it.
type Engine struct {
	pol   *policy.Policy
	store *taint.Store
	opts  Options
}

// New returns an engine over a policy and a taint store. Until Pin or PinAll
// is called, every tool is refused with rule pinning.
func New(pol *policy.Policy, store *taint.Store, opts Options) *Engine {
	return &Engine{pol: pol, store: store, opts: opts}
}

// Pin records the tool list seen at startup: each element is one tool
// definition object from tools/list, as sent. Only these tools, unchanged,
// can be called.
func (e *Engine) Pin(tools []json.RawMessage) error { return nil }

// Observe takes a later tools/list: tools that are new, or whose definition
// differs from the pinned one, are refused from now on with a reason saying
// what changed. It returns a person-readable line per changed tool.
func (e *Engine) Observe(tools []json.RawMessage) []string { return nil }

// PinAll makes every tool count as pinned (bouncer check without --tools).
func (e *Engine) PinAll() {}

// Decide decides a call and uses a slot of the tool's budget.
func (e *Engine) Decide(c Call) Decision {
	return Decision{Verdict: Deny, Rule: RuleDefault, Reason: "not implemented"}
}

// Recheck decides a call again after a human approved destinations, without
// using another budget slot.
func (e *Engine) Recheck(c Call) Decision { return e.Decide(c) }

// Approve records a human's yes for one destination of one tool argument for
// the rest of the session. An approval never wins over taint.
func (e *Engine) Approve(tool, param, dest string) {}
