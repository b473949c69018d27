package proxy

import (
	"fmt"
	"strings"

	"github.com/bouncer-mcp/bouncer/internal/approval"
	"github.com/bouncer-mcp/bouncer/internal/display"
	"github.com/bouncer-mcp/bouncer/internal/engine"
)

// question is the text of the elicitation that asks the human about call
// c of tool, which d asks about: at most two short sentences (what is
// asked, and what a yes does), then the details a line each: each
// destination, why it is asked, where its domain was seen, what
// "remember" does. Values the agent or a server chose are escaped as
// every prompt escapes them (display.Show).
func (p *Proxy) question(tool string, d engine.Decision) string {
	var b strings.Builder
	named := namedAsks(d.Asks)
	switch len(named) {
	case 0:
		fmt.Fprintf(&b, "Allow this call of %s on server %s? A yes lasts this session, for calls with these same arguments.\n\n",
			show(tool), show(p.cfg.Server))
	case 1:
		fmt.Fprintf(&b, "Allow %s on server %s to send to %s? A yes lasts this session, but not once any server's output holds it.\n\n",
			show(tool), show(p.cfg.Server), show(named[0].Value))
	default:
		fmt.Fprintf(&b, "Allow %s on server %s to send to %d destinations? A yes lasts this session, but not once any server's output holds them.\n\n",
			show(tool), show(p.cfg.Server), len(named))
	}
	for _, a := range d.Asks {
		switch a.Param {
		case "":
		case engine.ImplicitParam:
			fmt.Fprintf(&b, "Arguments: %s\n", show(a.Value))
		default:
			fmt.Fprintf(&b, "%s: %s\n", show(a.Param), show(a.Value))
		}
	}
	why, _ := display.Printable(strings.TrimSuffix(d.Reason, "."))
	fmt.Fprintf(&b, "Why asked: %s.\n", why)
	for _, a := range named {
		if s := p.seen(a.Value); s != nil {
			fmt.Fprintf(&b, "Note: the domain %s appeared in the output of server %s: %s may come from there, spelled another way.\n",
				show(s.Domain), show(s.Server), show(a.Value))
		}
	}
	if p.cfg.Remember != nil && len(named) > 0 {
		fmt.Fprintf(&b, "Remember: tick it only for recipients you know; they are then allowed through server %s from now on, even if output holds them.\n", show(p.cfg.Server))
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// namedAsks is the asks that name a destination (not the call's implicit
// one, nor none).
func namedAsks(asks []engine.Destination) []engine.Destination {
	var out []engine.Destination
	for _, a := range asks {
		if a.Param != "" && a.Param != engine.ImplicitParam {
			out = append(out, a)
		}
	}
	return out
}

// seen is where the session's untrusted output named d's domain, for the
// human asked about d, or nil: a hint, never a decision.
func (p *Proxy) seen(d string) *approval.Seen {
	if d == "" {
		return nil
	}
	domain, server, ok := p.cfg.Engine.DomainSeen(d)
	if !ok {
		return nil
	}
	if server == "" {
		server = p.cfg.Server
	}
	return &approval.Seen{Domain: domain, Server: server}
}

// redeemed approves for the rest of the session what the human approved
// so (approval.Code.Session), as a yes through the client does, and
// returns the codes used and the audit reason of the call they allow.
func (p *Proxy) redeemed(c *call, used []approval.Code) (codes, reason string) {
	var all, session []string
	for _, u := range used {
		all = append(all, u.Code)
		if !u.Session {
			continue
		}
		session = append(session, u.Code)
		p.cfg.Engine.Approve(c.tool, u.Param, u.Destination)
		if p.cfg.Tape != nil {
			p.cfg.Tape.Approve(c.tool, u.Param, u.Destination)
		}
	}
	codes = strings.Join(all, ",")
	reason = "approved with bouncer approve " + codes
	if len(session) > 0 {
		reason += " (for the rest of the session: " + strings.Join(session, ",") + ")"
	}
	return codes, reason
}

// show is display.Show without its second result.
func show(s string) string {
	v, _ := display.Show(s)
	return v
}
