package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// maxPages bounds how many tools/list pages the proxy follows; a server
// that keeps handing out cursors pins nothing.
const maxPages = 1000

// startPin lists the upstream's tools (every page) and pins them, then
// decides the calls that waited, in order. Until it is done, tools/call is
// held; if the list can't be had, nothing is pinned and every call is
// denied with rule pinning.
func (p *Proxy) startPin() {
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		tools, err := p.listAll(p.ctx)
		switch {
		case err != nil:
			p.logf("could not get the upstream's tool list, so every tool call will be denied: %v", err)
		default:
			if err := p.cfg.Engine.Pin(tools); err != nil {
				p.logf("could not pin the upstream's tool list, so every tool call will be denied: %v", err)
			} else if p.cfg.OnPinned != nil {
				p.cfg.OnPinned(tools)
			}
		}
		p.decideQueued()
	}()
}

// decideQueued decides the calls that waited for the pin, in order, and
// then lets later calls be decided as they come.
func (p *Proxy) decideQueued() {
	for {
		p.mu.Lock()
		if len(p.prepin) == 0 {
			p.pinDone = true
			p.mu.Unlock()
			return
		}
		c := p.prepin[0]
		p.prepin = p.prepin[1:]
		p.mu.Unlock()
		c.mu.Lock()
		waiting := c.state == stateHeld
		c.mu.Unlock()
		if waiting {
			p.decide(c)
			continue
		}
		p.mu.Lock()
		delete(p.held, c.req.ID) // withdrawn while it waited
		p.mu.Unlock()
	}
}

// listAll fetches every page of the upstream's tools/list with the proxy's
// own requests.
func (p *Proxy) listAll(ctx context.Context) ([]json.RawMessage, error) {
	var tools []json.RawMessage
	seen := map[string]bool{}
	cursor := ""
	for page := 0; ; page++ {
		if page == maxPages {
			return nil, fmt.Errorf("tools/list has more than %d pages", maxPages)
		}
		params := json.RawMessage(`{}`)
		if cursor != "" {
			params, _ = json.Marshal(map[string]string{"cursor": cursor})
		}
		res, err := p.requestUp(ctx, "tools/list", params)
		if err != nil {
			return nil, err
		}
		var r struct {
			Tools      []json.RawMessage `json:"tools"`
			NextCursor *string           `json:"nextCursor"`
		}
		if err := json.Unmarshal(res, &r); err != nil {
			return nil, fmt.Errorf("tools/list result: %w", err)
		}
		if r.Tools == nil {
			return nil, errors.New("tools/list result has no tools array")
		}
		tools = append(tools, r.Tools...)
		if r.NextCursor == nil || *r.NextCursor == "" {
			return tools, nil
		}
		cursor = *r.NextCursor
		if seen[cursor] {
			return nil, fmt.Errorf("tools/list returned the cursor %q twice", cursor)
		}
		seen[cursor] = true
	}
}

// requestUp sends one request of the proxy's own to the upstream and waits
// for its result (PinTimeout at most).
func (p *Proxy) requestUp(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	id := p.newID()
	ch := make(chan *jsonrpc.Response, 1)
	p.mu.Lock()
	if p.upClosed {
		p.mu.Unlock()
		return nil, errors.New("the upstream server exited")
	}
	p.waitUp[id] = ch
	p.mu.Unlock()
	if err := p.writeUp(&jsonrpc.Request{ID: id, Method: method, Params: params}); err != nil {
		p.mu.Lock()
		delete(p.waitUp, id)
		p.mu.Unlock()
		return nil, err
	}
	t := time.NewTimer(p.cfg.PinTimeout)
	defer t.Stop()
	select {
	case resp, ok := <-ch:
		if !ok {
			return nil, errors.New("the upstream server exited")
		}
		if resp.Error != nil {
			return nil, fmt.Errorf("%s: %w", method, resp.Error)
		}
		return resp.Result, nil
	case <-t.C:
		err := fmt.Errorf("%s: no answer within %v", method, p.cfg.PinTimeout)
		p.mu.Lock()
		delete(p.waitUp, id)
		p.mu.Unlock()
		return nil, err
	case <-ctx.Done():
		p.mu.Lock()
		delete(p.waitUp, id)
		p.mu.Unlock()
		return nil, ctx.Err()
	}
}

// observeList compares a tools/list result against the pin; what changed is
// refused from now on by the engine, and said on stderr.
func (p *Proxy) observeList(result json.RawMessage, from string) {
	p.mu.Lock()
	done := p.pinDone
	p.mu.Unlock()
	if !done {
		return // the pin itself is still being taken
	}
	var r struct {
		Tools []json.RawMessage `json:"tools"`
	}
	if json.Unmarshal(result, &r) != nil {
		return
	}
	for _, line := range p.cfg.Engine.Observe(r.Tools) {
		p.logf("%s: %s", from, line)
	}
}

// relist re-reads the whole tool list after notifications/tools/list_changed.
// Notifications that arrive while a re-list runs are folded into one more.
func (p *Proxy) relist() {
	p.mu.Lock()
	if !p.pinDone {
		p.mu.Unlock()
		return
	}
	if p.relisting {
		p.relistAgain = true
		p.mu.Unlock()
		return
	}
	p.relisting = true
	p.mu.Unlock()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			tools, err := p.listAll(p.ctx)
			if err != nil {
				if p.ctx.Err() == nil {
					p.logf("re-listing tools after list_changed: %v", err)
				}
			} else {
				for _, line := range p.cfg.Engine.Observe(tools) {
					p.logf("tool list changed: %s", line)
				}
			}
			p.mu.Lock()
			if !p.relistAgain || p.ctx.Err() != nil {
				p.relisting = false
				p.mu.Unlock()
				return
			}
			p.relistAgain = false
			p.mu.Unlock()
		}
	}()
}
