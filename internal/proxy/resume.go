package proxy

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/bouncer-mcp/bouncer/internal/engine"
	"github.com/bouncer-mcp/bouncer/internal/transport"
)

// The pump's side of a new upstream session (see transport.Resumer): the
// pin decides whether what was judged on the old session may go to the new
// one, and the audit log says what became of it.

// repinner is the pump's side as the transport sees it
// (transport.Repinner). It is a type of its own so that these methods are
// not part of Proxy's API: only the Upstream that Run was given calls them.
type repinner struct{ p *Proxy }

var _ transport.Repinner = repinner{}

// Repin implements transport.Repinner.
func (r repinner) Repin(tools []json.RawMessage) []string { return r.p.repin(tools) }

// Carry implements transport.Repinner.
func (r repinner) Carry(req *jsonrpc.Request, where string, differs []string) string {
	return r.p.carry(req, where, differs)
}

// RefuseCarried implements transport.Repinner.
func (r repinner) RefuseCarried(req *jsonrpc.Request, reason string) { r.p.refuseCarried(req, reason) }

// Unsent implements transport.Repinner.
func (r repinner) Unsent(req *jsonrpc.Request, why string) { r.p.unsent(req, why) }

// repin is Repin. The list is recorded as untrusted first, as
// every listing the upstream sends is. Before the pin is taken there is
// nothing to compare: the pin is then taken on the new session (its
// tools/list requests are sent there).
func (p *Proxy) repin(tools []json.RawMessage) []string {
	if doc, err := json.Marshal(map[string]any{"tools": tools}); err == nil {
		p.record(doc, "") // a listing, as the first one is recorded
	}
	p.mu.Lock()
	over := p.pinOverLocked()
	p.mu.Unlock()
	if !over {
		return nil
	}
	differs := p.cfg.Engine.Differs(tools)
	if len(differs) > 0 {
		for _, n := range p.cfg.Engine.Observe(tools) {
			p.logf("the new session's tool list: %s", n)
		}
	}
	return differs
}

// carry is Carry. The call's first line said it was allowed on
// the old session; this one says whether it goes to the new one, and why.
func (p *Proxy) carry(req *jsonrpc.Request, where string, differs []string) string {
	c := carried(req)
	if len(differs) > 0 {
		reason := fmt.Sprintf("not sent: the remote server at %s forgot the session this call was judged on (it restarted?), and the new session's tool list differs from the one pinned at startup (%s)", where, strings.Join(differs, "; "))
		_ = p.auditLine(c, engine.Deny, reason, engine.RulePinning, "")
		if p.cfg.Observe {
			return ""
		}
		return reason
	}
	reason := fmt.Sprintf("sent on a new session: the remote server at %s forgot the session this call was judged on (it restarted?) before running it, and the new session's tool list is the one pinned at startup", where)
	if err := p.auditLine(c, engine.Allow, reason, engine.RulePinning, ""); err != nil {
		return fmt.Sprintf("the audit log could not be written, so no call is allowed (%v)", err)
	}
	return ""
}

// refuseCarried is RefuseCarried: the upstream no longer owes the call's
// answer, the proxy gives it.
func (p *Proxy) refuseCarried(req *jsonrpc.Request, reason string) {
	if !p.routes.unsend(req.ID) {
		return // answered meanwhile
	}
	p.writeDown(&jsonrpc.Response{ID: req.ID, Result: blockedResult(reason)})
}

// unsent is Unsent.
func (p *Proxy) unsent(req *jsonrpc.Request, why string) {
	_ = p.auditLine(carried(req), engine.Deny, "not sent: "+why, engine.RuleDefault, "")
}

// carried is the call req as forwarded: its params are the judged ones.
func carried(req *jsonrpc.Request) *call {
	ec, _ := engine.ParseCall(req.Params)
	return newCall(req, ec)
}
