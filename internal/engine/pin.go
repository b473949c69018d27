package engine

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/bouncer-mcp/bouncer/internal/policy"
)

// pinnedTool is a tool definition as seen at startup: a hash of each of its
// top-level fields, so a later list can say which field changed.
type pinnedTool struct {
	fields map[string][32]byte
	params []string                  // inputSchema property names, for the fallback policy
	schema map[string]any            // the inputSchema, for the names declared at each depth
	props  map[string]map[string]any // properties(schema): the names declared at the top
	traits policy.Traits             // what the fallback policy reads from the name and description
}

// parseTool canonicalises one tools/list element.
func parseTool(raw json.RawMessage) (string, *pinnedTool, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil {
		return "", nil, fmt.Errorf("tool definition is not a JSON object: %w", err)
	}
	name, ok := obj["name"].(string)
	if !ok || name == "" {
		return "", nil, fmt.Errorf("tool definition has no name")
	}
	p := &pinnedTool{fields: map[string][32]byte{}}
	for k, v := range obj {
		// encoding/json sorts map keys, so equal values hash equally
		// whatever order the server wrote them in.
		b, err := json.Marshal(v)
		if err != nil {
			return "", nil, fmt.Errorf("tool %s: %w", quote(name), err)
		}
		p.fields[k] = sha256.Sum256(b)
	}
	desc, _ := obj["description"].(string)
	p.traits = policy.TraitsOf(name, desc)
	if schema, ok := obj["inputSchema"].(map[string]any); ok {
		p.schema = schema
		p.props = properties(schema)
		if props, ok := schema["properties"].(map[string]any); ok {
			for k := range props {
				p.params = append(p.params, k)
			}
			sort.Strings(p.params)
		}
	}
	return name, p, nil
}

// Pin records the tool list seen at startup: each element is one tool
// definition object from tools/list, as sent. Only these tools, unchanged,
// can be called. A definition that can't be read is an error and pins
// nothing, so every call is refused.
func (e *Engine) Pin(tools []json.RawMessage) error {
	pins := map[string]*pinnedTool{}
	dup := map[string]string{}
	for i, raw := range tools {
		name, p, err := parseTool(raw)
		if err != nil {
			return fmt.Errorf("tools/list element %d: %w", i, err)
		}
		if old, ok := pins[name]; ok {
			if diff := diffFields(old, p); len(diff) > 0 {
				dup[name] = fmt.Sprintf("tool %s is listed twice with different definitions (%s)", quote(name), strings.Join(diff, ", "))
			}
			continue
		}
		pins[name] = p
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.pinned = pins
	for name, why := range dup {
		e.changed[name] = why
	}
	return nil
}

// Observe takes a later tools/list: tools that are new, or whose definition
// differs from the pinned one, are refused from now on (even if the
// definition changes back) with a reason saying what changed. It returns a
// person-readable line per tool that is new or changed.
func (e *Engine) Observe(tools []json.RawMessage) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var notes []string
	for i, raw := range tools {
		name, p, err := parseTool(raw)
		if err != nil {
			notes = append(notes, fmt.Sprintf("tools/list element %d ignored: %v", i, err))
			continue
		}
		old, ok := e.pinned[name]
		if !ok {
			if !e.pinAll {
				notes = append(notes, fmt.Sprintf("tool %s appeared after startup and stays refused", quote(name)))
			}
			continue
		}
		diff := diffFields(old, p)
		if len(diff) == 0 {
			continue
		}
		if _, already := e.changed[name]; already {
			continue
		}
		why := fmt.Sprintf("definition of %s changed since startup (%s)", quote(name), strings.Join(diff, ", "))
		e.changed[name] = why
		notes = append(notes, why+"; it is refused from now on")
	}
	return notes
}

// Differs reports how tools, a whole tools/list, differs from the list
// pinned at startup, one person-readable line each: an element that can't
// be read, a tool that is new, one defined otherwise (which fields), one
// that is missing. Nil means it is the pinned list exactly, field by field
// (the order of keys and of tools aside). Unlike Observe it records
// nothing: a list that comes back after the server forgot the session is
// held to the pin exactly before anything judged on the old one is sent.
func (e *Engine) Differs(tools []json.RawMessage) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	seen := map[string]bool{}
	for i, raw := range tools {
		name, p, err := parseTool(raw)
		if err != nil {
			out = append(out, fmt.Sprintf("tools/list element %d can't be read: %v", i, err))
			continue
		}
		seen[name] = true
		old, ok := e.pinned[name]
		if !ok {
			out = append(out, fmt.Sprintf("tool %s is new", quote(name)))
			continue
		}
		if diff := diffFields(old, p); len(diff) > 0 {
			out = append(out, fmt.Sprintf("definition of %s differs (%s)", quote(name), strings.Join(diff, ", ")))
		}
	}
	var missing []string
	for name := range e.pinned {
		if !seen[name] {
			missing = append(missing, name)
		}
	}
	sort.Strings(missing)
	for _, name := range missing {
		out = append(out, fmt.Sprintf("tool %s is missing", quote(name)))
	}
	return out
}

func diffFields(old, cur *pinnedTool) []string {
	var diff []string
	for k, h := range old.fields {
		if ch, ok := cur.fields[k]; !ok {
			diff = append(diff, k+" removed")
		} else if ch != h {
			diff = append(diff, k)
		}
	}
	for k := range cur.fields {
		if _, ok := old.fields[k]; !ok {
			diff = append(diff, k+" added")
		}
	}
	sort.Strings(diff)
	return diff
}

// Refuse refuses every tool from now on, for why, with rule pinning: the
// session's upstream can no longer be held to the pin (bouncer listen: it
// lists other tools than those pinned for the whole deployment).
func (e *Engine) Refuse(why string) {
	e.mu.Lock()
	e.refused = why
	e.mu.Unlock()
}

// checkPinned returns the pinned schema and its parameter names, or a deny.
func (e *Engine) checkPinned(tool string) (pinnedTool, Decision, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.refused != "" {
		return pinnedTool{}, Decision{Verdict: Deny, Rule: RulePinning, Reason: e.refused}, false
	}
	if why, ok := e.changed[tool]; ok {
		return pinnedTool{}, Decision{Verdict: Deny, Rule: RulePinning, Reason: why}, false
	}
	p, ok := e.pinned[tool]
	if !ok {
		if e.pinAll {
			return pinnedTool{traits: policy.TraitsOf(tool, "")}, Decision{}, true
		}
		return pinnedTool{}, Decision{Verdict: Deny, Rule: RulePinning,
			Reason: fmt.Sprintf("tool %s was not in the tool list pinned at startup", quote(tool))}, false
	}
	// A pin is never changed, only replaced whole (Pin): its parts are
	// shared, not copied.
	return *p, Decision{}, true
}

// Entry returns the policy entry a call of tool with args is judged by:
// the pack's or policy's, or the fallback derived from the pinned tool's
// name, description and schema and the call's arguments.
func (e *Engine) Entry(tool string, args map[string]any) *policy.Tool {
	p, _, _ := e.checkPinned(tool)
	if p.traits == (policy.Traits{}) {
		p.traits = policy.TraitsOf(tool, "") // refused: no pin to read
	}
	return e.pol.ForPinned(p.traits, p.params, args)
}
