package report

import (
	"fmt"
	"strings"

	"github.com/bouncer-mcp/bouncer/internal/vouch"
)

// vouchLimits says which ways to vouch win over taint, from the one table
// of them (package vouch).
func vouchLimits() string {
	var wins, not []string
	for _, v := range vouch.Ways {
		if v.WinsOverTaint {
			wins = append(wins, fmt.Sprintf("%s, %s", code(v.Name), v.Means))
		} else {
			not = append(not, fmt.Sprintf("%s, %s", code(v.Name), v.Means))
		}
	}
	return "A destination vouched for by what the user controls wins over taint: " + strings.Join(wins, "; ") +
		". These vouch only for a destination no untrusted output holds: " + strings.Join(not, "; ") +
		". \"What vouched for the destinations allowed\" counts each."
}

func (w *writer) limits(s *summary) {
	w.f("## What Bouncer enforces and what it does not\n\n")
	w.f("Enforced, for MCP tool calls that pass through `bouncer run`:\n\n")
	for _, line := range []string{
		"A call that is denied is never forwarded to the server, so it has no side effect there.",
		"The proxies of one MCP client share one session: a destination that appeared in the untrusted output of any of its servers earlier in the session is denied in a sending tool's destination arguments, whichever server the send goes through, after folding case, whitespace, full-width forms and zero-width characters on both sides and decoding common escapes in the output. A server whose policy says `shared_session: false` keeps its own history instead.",
		vouchLimits(),
		"A destination nothing vouches for, and that no untrusted output held, goes to a human; no answer is a deny.",
		"Path arguments are confined to `allowed_path_prefixes` by path component, after `..` and the symbolic links of the existing part of the path are resolved.",
		"`arg_patterns` must match the whole argument value; `max_calls` bounds the calls of a tool per session.",
		"The tool list is pinned at startup: a tool that wasn't there, or whose definition changed, is denied.",
		"Every verdict is appended to the audit log before the call goes on; a line that can't be written denies the call. The log is hash-chained, and each line names the digest of the policy that decided it.",
		"A policy with an error stops the proxy before the server starts.",
	} {
		w.f("- %s\n", line)
	}
	w.f("\nNot enforced:\n\n")
	for _, line := range []string{
		"Prompt injection is not detected. Bouncer limits what a fooled agent can do through MCP; it does not make the agent less foolable.",
		"Anything outside MCP: an agent with a shell, a browser or raw network access can go around Bouncer.",
		"Content: sensitive data sent to a trusted or approved destination goes out. Bouncer is not a data-loss-prevention tool.",
		"Taint lasts one client session: another client, or the same client after it restarts, starts a new one, and a destination read there is asked about, not denied. A server with `shared_session: false`, or a proxy that can't reach the state directory, keeps its own history: a destination another server returned is then asked about when sent through it, not denied.",
		"A way to allow is only as good as what it trusts: a directory entry or an anchored record was written by whoever wrote that listing or record, and a remembered or typed destination is what a person said.",
		"Matching is literal: a destination assembled by the agent, or encoded in a way Bouncer doesn't decode (base64, homoglyphs, words), is asked about, not denied.",
		"Arguments a policy doesn't declare are checked only if their names are destination-shaped; a recipient in an argument like `webhook_target` of an undeclared tool is not.",
		"A budget limits damage; the calls within it run. Use `max_calls: 0` to forbid a tool.",
		"A one-time code approves a destination for one call, not a message: the retry's other arguments may differ.",
		"The server's own code is trusted. Bouncer does not vet servers; a malicious server can do what its process may do.",
		"The audit log is plain text readable by your user, arguments included; the hash chain shows edits, not a log cut short at its end.",
	} {
		w.f("- %s\n", line)
	}
	w.f("\n")
}

// coverage lists the tools with each kind of control, as the policy the
// pack describes sets it or as the enforced audit lines show it: a path
// denial proves paths were confined, whichever policy decided it.
type coverage struct {
	sending, confined, patterned, budgeted, fallback, open []string
	trusted                                                int
}

func cover(ctrls []control, multi bool) coverage {
	var c coverage
	// shown names a tool under a control, saying so when only the log
	// shows that control.
	shown := func(x control, byPolicy bool, logged string) string {
		n := toolLabel(multi, x.server, x.def.Name)
		if !byPolicy {
			n += " (" + logged + "; the policy this pack describes sets none)"
		}
		return n
	}
	for _, x := range ctrls {
		t, ev := x.t, x.ev
		if t.Exfiltrating || ev.sinks > 0 {
			c.sending = append(c.sending, shown(x, t.Exfiltrating, fmt.Sprintf("sink gate on %s in the log", plural(ev.sinks, "call"))))
			c.trusted += len(t.TrustedDestinations)
		}
		if p := len(t.WriteParams) > 0 && len(t.AllowedPathPrefixes) > 0; p || ev.denies["path"] > 0 {
			c.confined = append(c.confined, shown(x, p, plural(ev.denies["path"], "`path` denial")+" in the log"))
		}
		if p := len(t.ArgPatterns) > 0; p || ev.denies["pattern"] > 0 {
			c.patterned = append(c.patterned, shown(x, p, plural(ev.denies["pattern"], "`pattern` denial")+" in the log"))
		}
		if p := t.MaxCalls != nil; p || ev.denies["budget"] > 0 {
			c.budgeted = append(c.budgeted, shown(x, p, plural(ev.denies["budget"], "`budget` denial")+" in the log"))
		}
		if x.listed && t.Fallback {
			c.fallback = append(c.fallback, toolLabel(multi, x.server, x.def.Name))
		}
		if !x.guarded {
			c.open = append(c.open, toolLabel(multi, x.server, x.def.Name))
		}
	}
	return c
}

func names(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

func (w *writer) owasp(ctrls []control, s *summary) {
	c := cover(ctrls, w.multi)
	w.f("## OWASP Top 10 for LLM Applications (2025)\n\n")
	w.f("Only the risks Bouncer's controls bear on are listed. Bouncer reduces impact; none of these risks is removed by it.\n\n")
	w.f("| Risk | What Bouncer does | Evidence | Left to you |\n|---|---|---|---|\n")
	row := func(risk, does, ev, gap string) { w.f("| %s | %s | %s | %s |\n", risk, does, ev, gap) }
	row("LLM01:2025 Prompt Injection",
		"Limits the effect of indirect injection: a destination planted in tool output is denied; an unknown one needs a human.",
		fmt.Sprintf("Sending tools gated: %s. %s.", names(c.sending), s.evidence("sink")),
		"Detecting injection; instructions that need no send, write or delete; channels outside MCP.")
	row("LLM02:2025 Sensitive Information Disclosure",
		"Data can't be sent to a destination taken from untrusted output; sends elsewhere need a vouched or approved destination.",
		fmt.Sprintf("%s; %s; %s; %s.", plural(c.trusted, "trusted destination"), s.evidence("sink", "approval"), plural(s.verdicts["ask"], "ask"), s.vouchText()),
		"What the content is: data sent to a trusted or approved recipient goes out. Use DLP for content.")
	row("LLM05:2025 Improper Output Handling",
		"Arguments the model produces are checked before they reach the tool: paths against prefixes, values against patterns.",
		fmt.Sprintf("Paths confined: %s; patterns: %s; %s.", names(c.confined), names(c.patterned), s.evidence("path", "pattern")),
		"Validating what the tool does with the values (SQL, shell, HTML) is the server's job.")
	row("LLM06:2025 Excessive Agency",
		"Per-tool limits: call budgets, path confinement, patterns, pinning of the tool list, and a human for unknown destinations.",
		fmt.Sprintf("Budgets: %s; %s.", names(c.budgeted), s.evidence("budget", "path", "pattern", "pinning")),
		fmt.Sprintf("Tools with no control beyond pinning: %s. Removing tools the agent doesn't need.", names(c.open)))
	row("LLM10:2025 Unbounded Consumption",
		"`max_calls` caps how often a tool runs in one session.",
		fmt.Sprintf("Budgets: %s; %s.", names(c.budgeted), s.evidence("budget")),
		"Rate limits across sessions, cost and token limits.")
	w.f("\nNot addressed: LLM03 Supply Chain (Bouncer doesn't vet servers or models; signed policy files only protect the policy), LLM04 Data and Model Poisoning, LLM07 System Prompt Leakage, LLM08 Vector and Embedding Weaknesses, LLM09 Misinformation.\n\n")
}

func (w *writer) aiuc(ctrls []control, s *summary, in *Input) {
	c := cover(ctrls, w.multi)
	w.f("## AIUC-1 (mapping by topic)\n\n")
	w.f("This maps Bouncer's controls to AIUC-1 requirement topics by subject, not by control number: check the current AIUC-1 text for the control identifiers before citing them in an audit.\n\n")
	w.f("| Topic | What Bouncer does | Evidence | Left to you |\n|---|---|---|---|\n")
	row := func(topic, does, ev, gap string) { w.f("| %s | %s | %s | %s |\n", topic, does, ev, gap) }
	logEv := "No audit log given."
	if in.AuditFile != "" {
		logEv = fmt.Sprintf("%s in the period; hash chain %s", plural(s.total, "line"), strings.TrimSuffix(chainText(in.Chain), "."))
	}
	row("Security: restricting what an AI agent may do with its tools",
		"Deterministic per-tool rules decide every call before it runs; denied calls never reach the server.",
		fmt.Sprintf("Sending: %s; paths: %s; budgets: %s; %s in all.", names(c.sending), names(c.confined), names(c.budgeted), plural(s.verdicts["deny"], "denial")),
		fmt.Sprintf("Tools with no control beyond pinning: %s. Access outside MCP.", names(c.open)))
	row("Security: resilience to adversarial input (prompt injection)",
		"Impact limitation: destinations from untrusted output are denied, unknown ones need a human.",
		fmt.Sprintf("%s.", s.evidence("sink")),
		"Detection and adversarial testing of the agent itself.")
	row("Data & privacy: preventing leakage of customer or personal data",
		"Blocks sends to destinations an attacker planted in tool output.",
		fmt.Sprintf("%s across %s; %s.", plural(c.trusted, "trusted destination"), plural(len(c.sending), "sending tool"), s.evidence("sink")),
		"Content inspection; data sent to trusted recipients; retention of the audit log, which holds full arguments.")
	row("Accountability: logging of agent actions",
		"Every verdict is a JSON line with time, server, tool, full arguments, verdict, reason and rule, hash-chained.",
		logEv+".",
		"Shipping the log off the machine, retention, and keeping the head hash where the agent can't write.")
	row("Safety and accountability: human oversight of high-risk actions",
		"Unknown destinations go to a human, through the client or a one-time code at a terminal.",
		fmt.Sprintf("%s; outcomes under \"How the asks ended\".", plural(s.verdicts["ask"], "ask")),
		"Deciding which actions need a human beyond sends; keeping the agent away from `bouncer approve`.")
	if len(c.fallback) > 0 {
		w.f("\nTools with no pack or policy entry (%s) rely on the derived fallback; the rows above hold for them only as far as their argument names allow.\n", names(c.fallback))
	}
	w.f("\n")
}
