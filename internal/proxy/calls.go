package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/bouncer-mcp/bouncer/internal/approval"
	"github.com/bouncer-mcp/bouncer/internal/audit"
	"github.com/bouncer-mcp/bouncer/internal/engine"
	"github.com/bouncer-mcp/bouncer/internal/transport"
	"github.com/bouncer-mcp/bouncer/internal/vouch"
)

// BlockedPrefix starts the first text block of every refused call's result.
const BlockedPrefix = "[bouncer blocked] "

// call states
const (
	stateHeld      = iota // not yet forwarded or answered
	stateForwarded        // sent upstream; the upstream answers it
	stateAnswered         // the proxy answered it (denied)
	stateWithdrawn        // the client cancelled it while the proxy held it
)

// call is one tools/call from the client.
type call struct {
	// id is req's id, which never changes: routes keys held calls by it
	// without taking mu, while judged may replace req under mu.
	id   jsonrpc.ID
	req  *jsonrpc.Request
	tool string
	args json.RawMessage // as judged (re-encoded) once decided; as sent before
	// argsForm is the audit line's args_form for args ("" or elided).
	argsForm string
	ec       engine.Call // the parsed call the engine judges

	mu     sync.Mutex // held while forwarding or answering, so a cancellation can't slip in between
	state  int
	cancel context.CancelFunc // stops the human question, if one is open
}

// newCall is the call req, whose params parsed as ec.
func newCall(req *jsonrpc.Request, ec engine.Call) *call {
	return &call{id: req.ID, req: req, tool: ec.Tool, args: ec.Args, ec: ec}
}

// withdraw marks a held call cancelled by the client. It reports whether
// the cancellation is consumed (false when the call already left the
// proxy: the cancellation must then go upstream), and whether this
// withdrew the call (its answer is then the caller's business).
func (c *call) withdraw() (consumed, withdrawn bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch c.state {
	case stateHeld:
		c.state = stateWithdrawn
		if c.cancel != nil {
			c.cancel()
		}
		return true, true
	case stateWithdrawn, stateAnswered:
		return true, false // nothing more to do, and nothing for the upstream
	}
	return false, false
}

// clientCall handles a tools/call from the client. It runs in the read loop,
// so the decision (and its audit line) happens before the next message is
// read: a cancellation can never overtake the call it cancels.
func (p *Proxy) clientCall(m *jsonrpc.Request) error {
	ec, perr := engine.ParseCall(m.Params)
	tool, args := ec.Tool, ec.Args
	if !m.IsCall() || perr != nil {
		// Not the common case: the calls decided before it go first.
		p.commit()
	}
	if !m.IsCall() {
		// A tools/call without an ID gets no answer, so it can't be told
		// it was refused; it is never forwarded (but in observe mode).
		p.auditLine(&call{req: m, tool: tool, args: args}, engine.Deny, "tools/call sent as a notification (no id) is never forwarded", engine.RuleDefault, "")
		if p.cfg.Observe {
			p.relay(m)
			return nil
		}
		p.logf("refused a tools/call notification for %q", tool)
		return nil
	}
	c := newCall(m, ec)
	if perr != nil {
		reason := "malformed tools/call: " + perr.Error()
		var ce *engine.CallError
		invalid := errors.As(perr, &ce) && ce.Invalid
		if p.cfg.Tape != nil && !invalid {
			p.cfg.Tape.Call(m.Params) // check refuses it the same way
		}
		p.auditLine(c, engine.Deny, reason, engine.RuleDefault, "")
		if p.cfg.Observe {
			p.forward(c) // as the client sent it: observe mode enforces nothing
			return nil
		}
		if invalid {
			// Broken params are a JSON-RPC error, as a server gives them.
			c.mu.Lock()
			c.state = stateAnswered
			c.mu.Unlock()
			p.writeDown(&jsonrpc.Response{ID: m.ID, Error: &jsonrpc.Error{
				Code: jsonrpc.CodeInvalidParams, Message: "bouncer: " + reason,
			}})
			return nil
		}
		p.block(c, reason)
		return nil
	}
	p.mu.Lock()
	if p.stage == stageClosed || p.stage == stageNew || !p.listCurrentLocked() {
		p.mu.Unlock()
		p.commit()
		p.mu.Lock()
	}
	switch {
	case p.stage == stageClosed:
		// The upstream is gone and Run is returning (bouncer run then
		// closes the audit log): the call is not judged. Its line (while
		// the log is open) and its answer give the reason the upstream
		// went, not an error of the audit log.
		p.mu.Unlock()
		gone := p.goneText()
		_ = p.auditLine(c, engine.Deny, "not sent: "+gone, engine.RuleDefault, "")
		p.writeDown(&jsonrpc.Response{ID: m.ID, Error: &jsonrpc.Error{
			Code: jsonrpc.CodeInternalError, Message: "bouncer: " + gone,
		}})
		return nil
	case p.stage == stageNew:
		p.mu.Unlock()
		reason := "the session is not initialized, so no tool list is pinned"
		p.auditLine(c, engine.Deny, reason, engine.RulePinning, "")
		p.refuse(c, reason)
		return nil
	case !p.listCurrentLocked():
		// Hold the call until the tool list is pinned, or re-read after a
		// list_changed (pin.go); the lister decides held calls in the
		// order they came.
		start := p.queueLocked(c)
		p.mu.Unlock()
		if start {
			p.startLister()
		}
		return nil
	}
	p.mu.Unlock()
	p.decideStaged(c)
	return nil
}

// refuse answers a call the proxy refused before the engine could judge
// it (its audit line is written): blocked, or, in observe mode, forwarded
// as it came.
func (p *Proxy) refuse(c *call, reason string) {
	if p.cfg.Observe {
		p.forward(c)
		return
	}
	p.block(c, reason)
}

// judged takes what the engine judged: the arguments as re-encoded, for the
// audit line, and the params to forward. The upstream gets those bytes, not
// the ones the client sent.
func (c *call) judged(d engine.Decision) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if d.Args != nil {
		c.args = d.Args
		c.argsForm = ""
		if d.ArgsElided {
			c.argsForm = audit.ArgsElided
		}
	}
	if d.Forward != nil {
		c.req = &jsonrpc.Request{ID: c.req.ID, Method: c.req.Method, Params: d.Forward}
	}
}

// decide runs the engine on a call and acts on the verdict. The audit line
// comes first: if it can't be written, the call is denied.
func (p *Proxy) decide(c *call) {
	d := p.judge(c)
	err := p.cfg.Audit.Append(p.decisionEntry(c, d))
	if err != nil {
		p.logf("audit: %v", err)
	}
	p.act(c, d, err)
}

// judge has the engine decide c, on a history that holds every result the
// client may have seen.
func (p *Proxy) judge(c *call) engine.Decision {
	p.settled()
	if p.cfg.Tape != nil {
		p.cfg.Tape.Call(c.req.Params)
	}
	d := p.cfg.Engine.Decide(c.ec)
	c.judged(d)
	return d
}

// act does what the verdict d on c says, once its audit line is written;
// err says why the line was not, and the call is then denied.
func (p *Proxy) act(c *call, d engine.Decision, err error) {
	if err != nil {
		p.block(c, fmt.Sprintf("the audit log could not be written, so no call is allowed (%v)", err))
		return
	}
	if p.cfg.Observe {
		// Decided and audited as enforcing would; acted on, not.
		p.forward(c)
		return
	}
	switch d.Verdict {
	case engine.Allow:
		p.forward(c)
	case engine.Ask:
		if len(d.Asks) == 0 {
			// Nothing a human could approve: fail closed.
			reason := d.Reason + " (no destination to approve)"
			_ = p.auditLine(c, engine.Deny, reason, engine.RuleApproval, "")
			p.block(c, reason)
			return
		}
		p.ask(c, d)
	default:
		reason := d.Reason
		if reason == "" {
			reason = "denied by rule " + string(d.Rule)
		}
		p.block(c, reason)
	}
}

// The group commit (issue 31). The client's read loop decides each call
// as it reads it, but writes its audit line and acts on it (forwards,
// answers, asks) only when it has read every message the client sent so
// far: then the lines of all the calls decided meanwhile are written
// together, with one lock, one write and one head record, and the calls
// go on in the order they came, each after its line is in the file. A
// message that is not a plain tools/call commits what is staged before
// it is handled, so that nothing overtakes a call read before it.

// maxStaged bounds how many calls wait for one commit.
const maxStaged = 64

// staged is what the read loop decided and has not committed yet. Only
// the client's read loop touches it.
type staged struct {
	lines []audit.Entry
	calls []stagedCall
}

type stagedCall struct {
	c *call
	d engine.Decision
}

// decideStaged decides c in the client's read loop and stages its line
// and its verdict for the next commit.
func (p *Proxy) decideStaged(c *call) {
	d := p.judge(c)
	p.staged.lines = append(p.staged.lines, p.decisionEntry(c, d))
	p.staged.calls = append(p.staged.calls, stagedCall{c, d})
	if len(p.staged.calls) >= maxStaged || !p.batching {
		p.commit()
	}
}

// commit writes the staged lines and then acts on each staged verdict, in
// order: denied all if the lines could not be written.
func (p *Proxy) commit() {
	if len(p.staged.calls) == 0 {
		return
	}
	err := p.cfg.Audit.AppendAll(p.staged.lines)
	if err != nil {
		p.logf("audit: %v", err)
	}
	for _, s := range p.staged.calls {
		p.act(s.c, s.d, err)
	}
	clear(p.staged.lines)
	clear(p.staged.calls)
	p.staged.lines, p.staged.calls = p.staged.lines[:0], p.staged.calls[:0]
}

// auditDecision appends the engine's decision on c.
func (p *Proxy) auditDecision(c *call, d engine.Decision) error {
	err := p.cfg.Audit.Append(p.decisionEntry(c, d))
	if err != nil {
		p.logf("audit: %v", err)
	}
	return err
}

// decisionEntry is the audit line of the engine's decision on c.
func (p *Proxy) decisionEntry(c *call, d engine.Decision) audit.Entry {
	var t *audit.Taint
	if d.Tainted != nil {
		t = &audit.Taint{Param: d.Tainted.Param, Destination: d.Tainted.Value, Source: d.Source}
	}
	return p.entry(c, d.Verdict, d.Reason, d.Rule, "", t, d.Dests)
}

// maxDestAudit bounds a destination's value in the audit line's dests:
// the args hold it (elided when huge), and the line must stay small.
const maxDestAudit = 1024

// auditLine appends one verdict line for c.
func (p *Proxy) auditLine(c *call, v engine.Verdict, reason string, rule engine.Rule, code string) error {
	return p.appendLine(c, v, reason, rule, code, nil, nil)
}

func (p *Proxy) appendLine(c *call, v engine.Verdict, reason string, rule engine.Rule, code string, taint *audit.Taint, dests []engine.Destination) error {
	err := p.cfg.Audit.Append(p.entry(c, v, reason, rule, code, taint, dests))
	if err != nil {
		p.logf("audit: %v", err)
	}
	return err
}

// entry is one verdict line for c.
func (p *Proxy) entry(c *call, v engine.Verdict, reason string, rule engine.Rule, code string, taint *audit.Taint, dests []engine.Destination) audit.Entry {
	var ds []audit.Dest
	for _, d := range dests {
		v := d.Value
		if len(v) > maxDestAudit {
			v = strings.ToValidUTF8(v[:maxDestAudit], "") + "…"
		}
		ds = append(ds, audit.Dest{Param: d.Param, Value: v, Vouch: d.Vouch})
	}
	var enforced *bool
	if p.cfg.Observe {
		enforced = new(bool)
	}
	var id json.RawMessage
	if c.req.IsCall() {
		id = transport.AppendID(nil, c.req.ID)
	}
	args := c.args
	if len(args) == 0 {
		args = c.ec.Arguments()
	}
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	return audit.Entry{
		TS:       p.cfg.Now().UTC(),
		Server:   p.cfg.Server,
		Tool:     c.tool,
		Args:     args,
		Verdict:  string(v),
		Reason:   reason,
		Rule:     string(rule),
		Session:  p.cfg.Session,
		ID:       id,
		Code:     code,
		Taint:    taint,
		Dests:    ds,
		Policy:   p.cfg.Policy,
		Enforced: enforced,
	}
}

// forward sends an allowed call upstream, unless the client withdrew it.
func (p *Proxy) forward(c *call) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p.unhold(c)
	if c.state != stateHeld {
		return
	}
	c.state = stateForwarded
	if !p.routes.send(c.req.ID, "tools/call", c.tool) {
		p.writeDown(&jsonrpc.Response{ID: c.req.ID, Error: &jsonrpc.Error{
			Code: jsonrpc.CodeInternalError, Message: "bouncer: " + p.goneText(),
		}})
		return
	}
	if err := p.writeUp(c.req); err != nil {
		p.logf("%v", err)
		p.routes.unsend(c.req.ID)
		p.writeDown(&jsonrpc.Response{ID: c.req.ID, Error: &jsonrpc.Error{
			Code: jsonrpc.CodeInternalError, Message: "bouncer: " + err.Error(),
		}})
	}
}

// blockedResult is the tool result of a refused call.
func blockedResult(reason string) json.RawMessage {
	type text struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	b, _ := json.Marshal(struct {
		Content []text `json:"content"`
		IsError bool   `json:"isError"`
	}{[]text{{"text", BlockedPrefix + reason}}, true})
	return b
}

// block answers a call as refused, unless it was already answered or
// withdrawn.
func (p *Proxy) block(c *call, reason string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p.unhold(c)
	if c.state != stateHeld || !c.req.IsCall() {
		return
	}
	c.state = stateAnswered
	p.writeDown(&jsonrpc.Response{ID: c.req.ID, Result: blockedResult(reason)})
}

// ask puts a call to a human: through the client's elicitation when the
// session has it, else with one-time codes for `bouncer approve`.
func (p *Proxy) ask(c *call, d engine.Decision) {
	p.mu.Lock()
	// told, not negotiated: a bridged session has elicitation whatever the
	// server speaks (bridge.go).
	elicit := p.clientElicit && p.told >= ElicitVersion
	p.mu.Unlock()
	if !elicit {
		p.askByCode(c, d, p.whyNotAsked())
		return
	}
	ctx, cancel := context.WithTimeout(p.ctx, p.cfg.ElicitTimeout)
	c.mu.Lock()
	c.cancel = cancel
	c.mu.Unlock()
	p.routes.hold(c)
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		defer cancel()
		p.askByElicitation(ctx, c, d)
	}()
}

// whyNotAsked says why the human can't be asked through the client, for
// the text of a call blocked with a code. It names the side that lacks
// elicitation: a client that offers it is never blamed for a protocol
// version the server chose.
func (p *Proxy) whyNotAsked() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case !p.clientElicit:
		return "this client can't ask for it (it did not offer MCP elicitation when it connected)"
	case p.requested == "":
		return fmt.Sprintf("this client named no MCP protocol version, so it can't be asked (elicitation needs %s or later)", ElicitVersion)
	case p.requested < ElicitVersion:
		return fmt.Sprintf("this client asked for MCP protocol version %s, which has no way to ask (elicitation needs %s or later)", p.requested, ElicitVersion)
	}
	return fmt.Sprintf("the client can ask, but server %q speaks MCP protocol version %q, which has no way to ask and which bouncer can't bridge "+
		"(elicitation needs %s or later; bouncer bridges only from %s). A release of the server that speaks %s or later would let the client ask",
		p.cfg.Server, p.negotiated, ElicitVersion, bridgeVersions(), ElicitVersion)
}

// askByCode allows the call if the approval store redeems an approved code
// for every destination, else issues codes for those without one and
// denies with instructions that say why the client was not asked (why).
func (p *Proxy) askByCode(c *call, d engine.Decision, why string) {
	deny := func(reason, code string) {
		_ = p.auditLine(c, engine.Deny, reason, engine.RuleApproval, code)
		p.block(c, reason)
	}
	if p.cfg.Approvals == nil {
		deny(fmt.Sprintf("%s; this needs a human's approval, %s, and no approval store is configured", d.Reason, why), "")
		return
	}
	reqs := make([]approval.Request, len(d.Asks))
	for i, a := range d.Asks {
		reqs[i] = approval.Request{Server: p.cfg.Server, Tool: c.tool, Param: a.Param, Destination: a.Value}
	}
	// The store takes the call's codes all at once or none: a call is
	// never denied with some of them used up.
	used, missing, err := p.cfg.Approvals.Redeem(reqs)
	if err != nil {
		deny(fmt.Sprintf("%s; the approval store can't be used, so nothing is approved (%v)", d.Reason, err), "")
		return
	}
	if len(missing) == 0 {
		codes, reason := p.redeemed(c, used)
		if err := p.appendLine(c, engine.Allow, reason, engine.RuleApproval, codes, nil, approvedDests(d)); err != nil {
			p.block(c, fmt.Sprintf("the audit log could not be written, so no call is allowed (%v)", err))
			return
		}
		p.forward(c)
		return
	}
	var lines, issued []string
	var codes []string
	for _, i := range missing {
		r := reqs[i]
		code, err := p.cfg.Approvals.Issue(r, p.seen(r.Destination))
		if err != nil {
			deny(fmt.Sprintf("%s; no approval code could be issued (%v)", d.Reason, err), strings.Join(codes, ","))
			return
		}
		codes = append(codes, code)
		what := fmt.Sprintf("%s=%q", r.Param, r.Destination)
		if r.NoDestination() {
			what = "no destination"
		}
		lines = append(lines, fmt.Sprintf("bouncer approve %s   (%s)", code, what))
		issued = append(issued, fmt.Sprintf("bouncer approve %s (%s)", code, what))
	}
	// The agent gets the instructions laid out for a person to copy; the
	// audit line gets them on one line, so that log and report show them
	// as text, not as escaped newlines.
	reason := fmt.Sprintf("%s. This needs a human's approval, and %s. "+
		"The human, in their own terminal and not through the agent, runs:\n%s\n"+
		"then the agent retries the same call within five minutes.",
		strings.TrimSuffix(d.Reason, "."), why, strings.Join(lines, "\n"))
	line := fmt.Sprintf("%s. This needs a human's approval, and %s; waiting for: %s",
		strings.TrimSuffix(d.Reason, "."), why, strings.Join(issued, "; "))
	_ = p.auditLine(c, engine.Deny, line, engine.RuleApproval, strings.Join(codes, ","))
	p.block(c, reason)
}

// elicitResult is the client's answer to elicitation/create.
type elicitResult struct {
	Action  string `json:"action"`
	Content struct {
		Remember bool `json:"remember"`
	} `json:"content"`
}

// readElicitResult reads the client's answer to Bouncer's question with
// the engine's strict reader and its members by their exact names: an
// answer a lenient reader would read as a yes only by folding a key's case
// or keeping the last of two ({"Action":"accept"},
// {"action":"decline","action":"accept"}) is no yes. Anything but a plain
// answer reads as an empty action, which denies.
func readElicitResult(raw json.RawMessage) elicitResult {
	var res elicitResult
	v, err := engine.DecodeStrict(raw)
	if err != nil {
		return res
	}
	m, _ := v.(map[string]any)
	res.Action, _ = m["action"].(string)
	if content, ok := m["content"].(map[string]any); ok {
		res.Content.Remember, _ = content["remember"].(bool)
	}
	return res
}

// askByElicitation asks the human through the client and acts on the
// answer. It runs in its own goroutine so other calls carry on meanwhile.
func (p *Proxy) askByElicitation(ctx context.Context, c *call, d engine.Decision) {
	deny := func(reason string) {
		_ = p.auditLine(c, engine.Deny, reason, engine.RuleApproval, "")
		p.block(c, reason)
	}
	msg := p.question(c.tool, d)
	props := map[string]any{}
	if p.cfg.Remember != nil {
		props["remember"] = map[string]any{
			"type":        "boolean",
			"title":       "Remember these recipients for server " + p.cfg.Server,
			"description": "Always allow them through this server, even when a tool's output holds them too.",
			"default":     false,
		}
	}
	params := map[string]any{
		"message":         msg,
		"requestedSchema": map[string]any{"type": "object", "properties": props},
	}
	p.mu.Lock()
	if p.told >= "2025-11-25" {
		params["mode"] = "form"
	}
	p.mu.Unlock()
	raw, _ := json.Marshal(params)
	id := p.newID()
	ch := p.routes.askDown(id)
	p.writeDownAbout(c.req.ID, &jsonrpc.Request{ID: id, Method: "elicitation/create", Params: raw})

	withdrawQuestion := func(why string) {
		p.routes.forgetDown(id)
		b, _ := json.Marshal(map[string]any{"requestId": id.Raw(), "reason": why})
		p.writeDownAbout(c.req.ID, &jsonrpc.Request{Method: "notifications/cancelled", Params: b})
	}

	var resp *jsonrpc.Response
	select {
	case resp = <-ch:
	case <-ctx.Done():
		c.mu.Lock()
		withdrawn := c.state == stateWithdrawn
		c.mu.Unlock()
		switch {
		case withdrawn:
			withdrawQuestion("the client cancelled the call")
			// A cancelled request gets no answer.
			_ = p.auditLine(c, engine.Deny, "the client cancelled the call while a human was being asked", engine.RuleApproval, "")
		case errors.Is(ctx.Err(), context.DeadlineExceeded):
			withdrawQuestion("no answer in time")
			deny(fmt.Sprintf("%s; the human did not answer within %v", d.Reason, p.cfg.ElicitTimeout))
		default:
			withdrawQuestion("the proxy is shutting down")
			deny(d.Reason + "; the session ended before the human answered")
		}
		return
	}
	if resp.Error != nil {
		// The client declared elicitation but could not ask: fall back to
		// a code, which the human can still give.
		p.logf("elicitation failed (%v); falling back to an approval code", resp.Error)
		p.askByCode(c, d, fmt.Sprintf("this client offered MCP elicitation but answered bouncer's question with an error (%s)", clip(resp.Error.Error(), 200)))
		return
	}
	res := readElicitResult(resp.Result)
	switch res.Action {
	case "accept":
	case "decline":
		deny(d.Reason + audit.DeclinedSuffix)
		return
	case "cancel":
		deny(d.Reason + audit.DismissedSuffix)
		return
	default:
		deny(fmt.Sprintf("%s; the client's answer %q is not an approval", d.Reason, res.Action))
		return
	}
	for _, a := range d.Asks {
		p.cfg.Engine.Approve(c.tool, a.Param, a.Value)
		if p.cfg.Tape != nil {
			p.cfg.Tape.Approve(c.tool, a.Param, a.Value)
		}
		// A yes to a call itself (an implicit destination, approval:
		// always) holds for that call: there is no destination to remember.
		if res.Content.Remember && p.cfg.Remember != nil && a.Value != "" && a.Param != engine.ImplicitParam && a.Param != engine.CallParam {
			if err := p.cfg.Remember(a.Value); err != nil {
				p.logf("could not remember %q for server %q: %v", a.Value, p.cfg.Server, err)
			}
		}
	}
	// A list_changed may have come while the human was asked.
	if err := p.awaitList(ctx); err != nil {
		reason := "approved, but the tool list changed and could not be re-read: " + err.Error()
		_ = p.auditLine(c, engine.Deny, reason, engine.RulePinning, "")
		p.block(c, reason)
		return
	}
	p.settled()
	d2 := p.cfg.Engine.Recheck(c.ec)
	c.judged(d2)
	if d2.Verdict != engine.Allow {
		reason := d2.Reason
		if reason == "" {
			reason = "refused after approval by rule " + string(d2.Rule)
		}
		d2.Verdict, d2.Reason = engine.Deny, reason
		_ = p.auditDecision(c, d2)
		p.block(c, reason)
		return
	}
	if err := p.appendLine(c, engine.Allow, "approved by the human through the client", engine.RuleApproval, "", nil, d2.Dests); err != nil {
		p.block(c, fmt.Sprintf("the audit log could not be written, so no call is allowed (%v)", err))
		return
	}
	p.forward(c)
}

// approvedDests is the destinations of d, an ask whose every question a
// human said yes to, as the line allowing the call lists them: what was
// asked about is vouched for by that approval, the rest as d found them.
func approvedDests(d engine.Decision) []engine.Destination {
	ds := append([]engine.Destination(nil), d.Dests...)
	for i := range ds {
		for _, a := range d.Asks {
			if ds[i].Param == a.Param && ds[i].Value == a.Value {
				ds[i].Vouch = vouch.Approval
			}
		}
	}
	return ds
}

// clip shortens s to at most n bytes of valid UTF-8, marking a cut with "…".
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}
