// Package suggest reads an audit log and proposes the policy that would let
// the observed legitimate work through: the audit2allow of Bouncer.
//
// A team runs `bouncer run --observe` on its machines, ships the audit, and
// feeds it to `bouncer policy suggest`. What comes out is a policy file to
// load beside the current ones, for a person to review, sign and push:
//
//   - a destination asked about or approved in a send becomes one of the
//     tool's trusted_destinations only on positive evidence that it is the
//     user's: the user typed it, a human approved it or remembered it, or
//     a policy allowlists it for another tool (the ways to vouch whose
//     vouch.Way.Evidence is set). Being asked about and never seen in
//     untrusted output is no evidence: an address planted in an earlier
//     session, or re-spelled past taint, is exactly that. A destination a
//     human declined is never suggested;
//   - a destination that appeared in untrusted output is never suggested,
//     however often it was used: that is exactly what an injection looks
//     like. It is listed in a comment that says so;
//   - written paths that the path check refused become allowed_path_prefixes,
//     grouped by directory, never a sensitive one (a home's dot-directories,
//     /etc, /root), and never one that holds Bouncer's own files (the
//     policy, the client's config: Options.Own);
//   - budgets that were exceeded sit above the peak calls that at least two
//     sessions made: one session's burst (a mass deletion) is no need.
//
// Each tool it touches is restated whole, as layering requires (a later
// entry replaces an earlier one), starting from the entry in effect. Every
// suggestion carries its evidence: how many times, first and last seen,
// and which verdicts it changes.
package suggest

import (
	"encoding/json"
	"sort"
	"strings"
	"time"

	"github.com/bouncer-mcp/bouncer/internal/audit"
	"github.com/bouncer-mcp/bouncer/internal/dest"
	"github.com/bouncer-mcp/bouncer/internal/policy"
	"github.com/bouncer-mcp/bouncer/internal/taint"
	"github.com/bouncer-mcp/bouncer/internal/vouch"
)

// Evidence is what the log says about one suggestion.
type Evidence struct {
	Count int       `json:"count"`
	First time.Time `json:"first_seen"`
	Last  time.Time `json:"last_seen"`
	// Verdicts counts the verdicts the suggestion changes ("ask", "deny"),
	// as audited (observe mode's "would" verdicts included).
	Verdicts map[string]int `json:"verdicts"`
	// Servers are the servers the lines came from.
	Servers []string `json:"servers"`
}

func (e *Evidence) add(entry audit.Entry) {
	if e.Count == 0 || entry.TS.Before(e.First) {
		e.First = entry.TS
	}
	if entry.TS.After(e.Last) {
		e.Last = entry.TS
	}
	e.Count++
	if e.Verdicts == nil {
		e.Verdicts = map[string]int{}
	}
	e.Verdicts[entry.Verdict]++
	for _, s := range e.Servers {
		if s == entry.Server {
			return
		}
	}
	e.Servers = append(e.Servers, entry.Server)
	sort.Strings(e.Servers)
}

// Destination is a suggested trusted destination, or one asked about for
// which the log holds no positive evidence (Tool.Unproven).
type Destination struct {
	Param       string `json:"param"`
	Destination string `json:"destination"`
	// Why names the positive evidence: the way to vouch that vouched for
	// it somewhere in the log (vouch.Prompt, vouch.Remembered,
	// vouch.Approval, vouch.Allowlist); "" for none.
	Why      string   `json:"why"`
	Evidence Evidence `json:"evidence"`
}

// Refused is a destination that appeared in untrusted output: never
// suggested.
type Refused struct {
	Destination string   `json:"destination"`
	Sources     []string `json:"sources"` // the servers whose output held it
	Evidence    Evidence `json:"evidence"`
}

// Prefix is a suggested allowed path prefix.
type Prefix struct {
	Prefix   string   `json:"prefix"`
	Paths    []string `json:"paths"` // the paths it admits, as written
	Evidence Evidence `json:"evidence"`
}

// Budget is a suggested max_calls.
type Budget struct {
	Was     int `json:"was"`
	Suggest int `json:"suggest"`
	// Peak is the most calls that at least two sessions untrusted output
	// did not steer (no taint deny in them) made: the suggestion sits
	// above it.
	Peak int `json:"peak"`
	// Burst is the most calls of one such session, when more than Peak:
	// one session's burst sets no budget.
	Burst int `json:"burst,omitempty"`
	// SteeredPeak is the most calls in one steered session, which the
	// suggestion ignores (an attack's mass deletion is not a need).
	SteeredPeak int      `json:"steered_peak,omitempty"`
	Evidence    Evidence `json:"evidence"`
}

// Tool is everything suggested for one tool.
type Tool struct {
	Name         string        `json:"tool"`
	Source       string        `json:"entry_was"` // where the entry in effect came from
	Destinations []Destination `json:"trusted_destinations,omitempty"`
	Refused      []Refused     `json:"refused_destinations,omitempty"`
	// Unproven are destinations asked about with no positive evidence,
	// or declined by a human: not suggested.
	Unproven []Destination `json:"unproven_destinations,omitempty"`
	Prefixes []Prefix      `json:"allowed_path_prefixes,omitempty"`
	Unplaced []string      `json:"paths_not_suggested,omitempty"` // sensitive or unplaceable paths
	Budget   *Budget       `json:"max_calls,omitempty"`

	entry *policy.Tool
}

// Result is a suggestion: per tool, in name order.
type Result struct {
	Lines int    `json:"lines"` // audit lines read in the period
	Tools []Tool `json:"tools"`
}

// Options are what Suggest needs from the outside world.
type Options struct {
	// Resolve resolves a path as the kernel does (fsresolve.Existing): a
	// prefix it would place elsewhere, through a symlink, is not
	// suggested. Nil skips that check.
	Resolve func(path string) (string, error)
	// Homes are home directories that no prefix may be or hold, beside
	// the /home/USER and /Users/USER shapes (the caller's own home, where
	// it lies elsewhere: /export/home/u, /srv/u).
	Homes []string
	// Own are Bouncer's own files (the policy and trust files, the state
	// directory, the client configs that launch it): no suggested prefix
	// may be, hold or lie in one.
	Own []string
}

// Suggest reads entries (already limited to the period) against the
// policy in effect.
func Suggest(pol *policy.Policy, entries []audit.Entry, opts Options) *Result {
	tools := map[string]*Tool{}
	get := func(name string) *Tool {
		t := tools[name]
		if t == nil {
			e := pol.For(name, nil)
			t = &Tool{Name: name, Source: e.Source, entry: e}
			tools[name] = t
		}
		return t
	}

	// Every destination that appeared in untrusted output, in any session:
	// the taint denies say so. A destination is compared with them as
	// taint compares (folded, in its other spellings too: punycode, a
	// trailing dot, a quoted local part), never as a vouch compares: an
	// attacker who re-spelled its address so that a call was only asked
	// about must not be suggested.
	tainted := newTaintIndex(entries)
	// Sessions in which the agent tried to send to such a destination were
	// steered by untrusted output: their calls don't set the peak a budget
	// is suggested from.
	steered := map[string]bool{}
	for _, e := range entries {
		if e.Taint != nil {
			steered[e.Session] = true
		}
	}

	// Positive evidence, by destination (dest.Exact): what vouched for it
	// in an allowed call, by a way whose vouch.Way.Evidence is set, or a
	// policy's allowlist for any tool. And the destinations a human said
	// no to, by the ask each answer ends.
	positive := evidenceOf(pol, entries)
	declined := declinedIn(entries)

	dests := map[string]map[string]*Destination{} // tool → param\x00key → suggestion
	refused := map[string]map[string]*Refused{}
	paths := map[string][]pathUse{}
	calls := map[string]map[string]map[string]bool{} // tool → session → call ids
	budgetHit := map[string]*Evidence{}

	for _, e := range entries {
		// Calls per session, counting each call once (an ask and the
		// line that ends it share an id).
		if calls[e.Tool] == nil {
			calls[e.Tool] = map[string]map[string]bool{}
		}
		if calls[e.Tool][e.Session] == nil {
			calls[e.Tool][e.Session] = map[string]bool{}
		}
		callKey := string(e.ID)
		if callKey == "" {
			callKey = e.TS.String()
		}
		calls[e.Tool][e.Session][callKey] = true

		if e.Taint != nil && e.Verdict == "deny" {
			// Sent to a destination from untrusted output: listed as
			// refused, however often it was tried.
			k := key(e.Taint.Destination)
			if refused[e.Tool] == nil {
				refused[e.Tool] = map[string]*Refused{}
			}
			r := refused[e.Tool][k]
			if r == nil {
				r = &Refused{Destination: strings.TrimSpace(e.Taint.Destination), Sources: tainted.sources(e.Taint.Destination)}
				refused[e.Tool][k] = r
			}
			r.Evidence.add(e)
			continue
		}
		switch {
		case e.Rule == "budget" && e.Verdict == "deny":
			if budgetHit[e.Tool] == nil {
				budgetHit[e.Tool] = &Evidence{}
			}
			budgetHit[e.Tool].add(e)
		case e.Rule == "path" && e.Verdict == "deny":
			t := get(e.Tool)
			for _, p := range writePaths(t.entry, e.Args) {
				paths[e.Tool] = append(paths[e.Tool], pathUse{path: p, entry: e})
			}
		case e.Verdict == "ask" && e.Rule == "sink", e.Verdict == "allow" && e.Rule == "approval":
			for _, d := range e.Dests {
				k := key(d.Value)
				if k == "" {
					continue
				}
				if srcs, bad := tainted.match(d.Value); bad {
					if refused[e.Tool] == nil {
						refused[e.Tool] = map[string]*Refused{}
					}
					r := refused[e.Tool][k]
					if r == nil {
						r = &Refused{Destination: strings.TrimSpace(d.Value), Sources: srcs}
						refused[e.Tool][k] = r
					}
					r.Evidence.add(e)
					continue
				}
				if dests[e.Tool] == nil {
					dests[e.Tool] = map[string]*Destination{}
				}
				dk := d.Param + "\x00" + k
				s := dests[e.Tool][dk]
				if s == nil {
					s = &Destination{Param: d.Param, Destination: strings.TrimSpace(d.Value)}
					dests[e.Tool][dk] = s
				}
				s.Evidence.add(e)
			}
		}
	}

	for name, m := range dests {
		t := get(name)
		for _, d := range m {
			if t.entry.Trusts(d.Destination) {
				continue
			}
			if _, ok := dest.Canon(d.Destination); !ok {
				// It could never match: suggesting it would only look
				// like a vouch.
				continue
			}
			k := key(d.Destination)
			if declined[k] {
				d.Why = "declined"
				t.Unproven = append(t.Unproven, *d)
				continue
			}
			if d.Why = positive[k]; d.Why == "" {
				t.Unproven = append(t.Unproven, *d)
				continue
			}
			t.Destinations = append(t.Destinations, *d)
		}
		sort.Slice(t.Destinations, func(i, j int) bool { return t.Destinations[i].Destination < t.Destinations[j].Destination })
		sort.Slice(t.Unproven, func(i, j int) bool { return t.Unproven[i].Destination < t.Unproven[j].Destination })
	}
	for name, m := range refused {
		t := get(name)
		for _, r := range m {
			t.Refused = append(t.Refused, *r)
		}
		sort.Slice(t.Refused, func(i, j int) bool { return t.Refused[i].Destination < t.Refused[j].Destination })
	}
	for name, uses := range paths {
		t := get(name)
		t.Prefixes, t.Unplaced = groupPaths(uses, opts.Resolve, opts.Homes, opts.Own)
	}
	for name, ev := range budgetHit {
		t := get(name)
		// The peak is what at least two unsteered sessions reached: the
		// second highest count. One session's count alone, however high,
		// may be a burst (a hijacked mass deletion that no taint deny
		// marked), and sets no budget.
		burst, peak, steeredPeak := 0, 0, 0
		for session, ids := range calls[name] {
			n := len(ids)
			switch {
			case steered[session]:
				steeredPeak = max(steeredPeak, n)
			case n > burst:
				burst, peak = n, burst
			case n > peak:
				peak = n
			}
		}
		if peak == 0 {
			// Only sessions steered by untrusted output, or one session,
			// hit the budget: nothing shows a legitimate need for more.
			continue
		}
		if burst == peak {
			burst = 0
		}
		was := 0
		if t.entry.MaxCalls != nil {
			was = *t.entry.MaxCalls
		}
		if above(peak) <= was {
			continue
		}
		t.Budget = &Budget{Was: was, Peak: peak, Burst: burst, SteeredPeak: steeredPeak, Suggest: above(peak), Evidence: *ev}
	}

	res := &Result{Lines: len(entries)}
	for _, t := range tools {
		if len(t.Destinations)+len(t.Refused)+len(t.Unproven)+len(t.Prefixes)+len(t.Unplaced) == 0 && t.Budget == nil {
			continue
		}
		res.Tools = append(res.Tools, *t)
	}
	sort.Slice(res.Tools, func(i, j int) bool { return res.Tools[i].Name < res.Tools[j].Name })
	return res
}

// evidenceOf returns, by destination (key), the first way in the table's
// order that gives positive evidence for it: a way to vouch whose Evidence
// is set that vouched for it in an allowed call of the log (a line of an
// older Bouncer that names no vouch counts as approved when a human's
// approval allowed it), or the allowlist of any tool of the policy.
func evidenceOf(pol *policy.Policy, entries []audit.Entry) map[string]string {
	rank := map[string]int{}
	for i, w := range vouch.Ways {
		rank[w.Name] = i + 1
	}
	out := map[string]string{}
	add := func(d, way string) {
		w, ok := vouch.Lookup(way)
		if !ok || !w.Evidence {
			return
		}
		k := key(d)
		if k == "" {
			return
		}
		if old := out[k]; old == "" || rank[w.Name] < rank[old] {
			out[k] = w.Name
		}
	}
	for _, e := range entries {
		if e.Verdict != "allow" {
			continue
		}
		for _, d := range e.Dests {
			way := d.Vouch
			if way == "" && e.Rule == "approval" {
				way = vouch.Approval
			}
			add(d.Value, way)
		}
	}
	for _, name := range pol.Names() {
		t, _ := pol.Lookup(name)
		for _, d := range t.TrustedDestinations {
			add(d, vouch.Allowlist)
		}
	}
	return out
}

// declinedIn returns the destinations (key) of every ask a human said no
// to: the destinations of the ask line whose call a declined line ends.
func declinedIn(entries []audit.Entry) map[string]bool {
	asked := map[string][]audit.Dest{}
	out := map[string]bool{}
	for _, e := range entries {
		id := e.Session + "\x00" + string(e.ID)
		switch {
		case e.Verdict == "ask":
			asked[id] = e.Dests
		case e.Declined():
			for _, d := range append(asked[id], e.Dests...) {
				if k := key(d.Value); k != "" {
					out[k] = true
				}
			}
		}
	}
	return out
}

// above is the budget suggested for an observed peak: half again as much,
// and at least one more, so that a legitimate session at its busiest still
// fits while a mass deletion does not.
func above(peak int) int {
	s := (peak*3 + 1) / 2
	if s <= peak {
		s = peak + 1
	}
	return s
}

// key groups the destinations of suggestions: the same destination as a
// vouch compares it (dest.Exact), so one suggestion is one entry of
// trusted_destinations.
func key(s string) string {
	if strings.TrimSpace(s) == "" {
		return ""
	}
	return dest.Exact(s)
}

// taintIndex holds the destinations of the log's taint denies, matched as
// the engine's taint matcher matches (package taint) with each
// destination's other spellings (dest.Variants): it may over-match, which
// only keeps a destination out of the suggestion.
type taintIndex struct {
	all  *taint.Store
	each map[string]*taint.Store // by source server
}

func newTaintIndex(entries []audit.Entry) *taintIndex {
	ix := &taintIndex{all: taint.NewStore(), each: map[string]*taint.Store{}}
	for _, e := range entries {
		if e.Taint == nil {
			continue
		}
		st := ix.each[e.Taint.Source]
		if st == nil {
			st = taint.NewStore()
			ix.each[e.Taint.Source] = st
		}
		for _, form := range append([]string{e.Taint.Destination}, dest.Variants(e.Taint.Destination)...) {
			ix.all.Record(form)
			st.Record(form)
		}
	}
	return ix
}

// match reports whether d was tainted in any session, and by whose output.
func (ix *taintIndex) match(d string) ([]string, bool) {
	forms := append([]string{d}, dest.Variants(d)...)
	seen := false
	for _, f := range forms {
		if ix.all.Seen(f) {
			seen = true
			break
		}
	}
	if !seen {
		return nil, false
	}
	return ix.sources(d), true
}

// sources names the servers whose output held d, in name order.
func (ix *taintIndex) sources(d string) []string {
	forms := append([]string{d}, dest.Variants(d)...)
	var out []string
	for src, st := range ix.each {
		for _, f := range forms {
			if st.Seen(f) {
				out = append(out, src)
				break
			}
		}
	}
	sort.Strings(out)
	return out
}

func appendOnce(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

// writePaths picks the path values out of a call's audited arguments: the
// tool's write_params, as strings, lists, or objects with a path field.
func writePaths(t *policy.Tool, args json.RawMessage) []string {
	var m map[string]any
	if json.Unmarshal(args, &m) != nil {
		return nil
	}
	var out []string
	var collect func(v any)
	collect = func(v any) {
		switch x := v.(type) {
		case string:
			out = append(out, x)
		case []any:
			for _, el := range x {
				collect(el)
			}
		case map[string]any:
			for _, k := range []string{"path", "file_path", "filepath", "filename", "file", "dest", "destination", "source", "target", "dir", "directory"} {
				if el, ok := x[k]; ok {
					collect(el)
				}
			}
		}
	}
	for _, p := range t.WriteParams {
		collect(m[p])
	}
	return out
}
