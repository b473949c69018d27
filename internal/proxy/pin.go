package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/bouncer-mcp/bouncer/internal/transport"

	"github.com/bouncer-mcp/bouncer/internal/engine"
)

// The tool list is taken by one goroutine, the lister, which also decides
// the calls that waited for it, in the order they came. Every listing is
// asked for by bumping listWant: the first (the pin) is asked for from the
// start, and each notifications/tools/list_changed asks for one more. A
// call is decided only when every listing asked for so far has completed
// (listHave == listWant), so a change the upstream announced is known
// before any call that comes after the announcement is decided. Calls that
// come while a listing is due wait for it, bounded by PinTimeout for each
// page.
//
// When the first listing fails, nothing is pinned and the engine denies
// every call, for the whole session. When a later one fails, the calls
// that waited for it are denied with rule pinning rather than decided on
// the old pin; the next call asks for another listing (and waits for it),
// so a passing failure does not stop the session for good.

// listCurrentLocked reports whether a call can be decided now: the tool
// list is pinned and up to date, and no earlier call waits. p.mu is held.
func (p *Proxy) listCurrentLocked() bool {
	l := &p.list
	return p.pinOverLocked() && !l.running && l.have == l.want && len(l.queue) == 0
}

// listerDueLocked is the one place that decides whether the lister must
// start now; if so it marks it running, and the caller calls startLister
// once p.mu is released. The first listing waits until the upstream has
// accepted initialize and the client has said it is initialized (or sent a
// call); later ones start as soon as they are asked for, and the lister
// also starts to decide calls that waited.
func (p *Proxy) listerDueLocked() bool {
	l := &p.list
	if l.running {
		return false // it will see what was asked for before it stops
	}
	var due bool
	switch {
	case p.pinOverLocked():
		due = l.tried < l.want || len(l.queue) > 0
	case p.stage == stageListing:
		due = p.initialized || len(l.queue) > 0
	}
	l.running = due
	return due
}

// queueLocked holds c until the lister decides it, and reports whether the
// lister must be started (see listerDueLocked). A call that finds the last
// re-list failed asks for another. p.mu is held.
func (p *Proxy) queueLocked(c *call) bool {
	if p.relistFailedLocked() {
		p.list.want++
	}
	p.routes.hold(c)
	p.list.queue = append(p.list.queue, c)
	return p.listerDueLocked()
}

// relistFailedLocked reports whether the last listing asked for failed (it
// was a re-list: a failed pin is final). p.mu is held.
func (p *Proxy) relistFailedLocked() bool {
	return p.list.err != nil && p.list.tried == p.list.want
}

// startLister runs the lister; listerDueLocked has marked it running.
func (p *Proxy) startLister() {
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		p.lister()
	}()
}

// lister takes the listings asked for and decides the calls that waited,
// until there is nothing left to do.
func (p *Proxy) lister() {
	for {
		p.mu.Lock()
		l := &p.list
		if first := p.stage == stageListing; first || l.tried < l.want {
			l.tried, l.err = l.want, nil
			gen := l.tried
			p.mu.Unlock()
			err := p.takeList(first)
			p.mu.Lock()
			if err == nil || first {
				l.have = gen
			} else {
				l.err = err
			}
			close(l.done)
			l.done = make(chan struct{})
			p.mu.Unlock()
			continue // a list_changed may have come meanwhile
		}
		if len(l.queue) == 0 {
			l.running = false
			p.mu.Unlock()
			return
		}
		c := l.queue[0]
		l.queue = l.queue[1:]
		stale := l.have < l.want // the last re-list failed (the loop re-lists before anything else)
		err := l.err
		p.mu.Unlock()

		c.mu.Lock()
		waiting := c.state == stateHeld
		c.mu.Unlock()
		switch {
		case !waiting:
			p.unhold(c) // withdrawn while it waited
		case stale:
			reason := fmt.Sprintf("the upstream's tool list changed and could not be re-read, so the change is unknown: %v", err)
			_ = p.auditLine(c, engine.Deny, reason, engine.RulePinning, "")
			p.refuse(c, reason)
		default:
			p.decide(c)
		}
	}
}

// takeList lists the upstream's tools: the first time to pin them, later to
// compare them with the pin. A failed first listing is logged, not
// returned: it is final, since nothing is pinned and every call is denied.
func (p *Proxy) takeList(first bool) error {
	tools, err := p.listAll(p.ctx)
	if !first {
		if err != nil {
			if p.ctx.Err() == nil {
				p.logf("re-listing tools after list_changed: %v", err)
			}
			return err
		}
		for _, line := range p.cfg.Engine.Observe(tools) {
			p.logf("tool list changed: %s", line)
		}
		return nil
	}
	if err != nil {
		p.logf("could not get the upstream's tool list, so every tool call will be denied: %v", err)
	} else if err = p.cfg.Engine.Pin(tools); err != nil {
		p.logf("could not pin the upstream's tool list, so every tool call will be denied: %v", err)
	} else if p.cfg.OnPinned != nil {
		p.cfg.OnPinned(tools)
	}
	p.mu.Lock()
	if err == nil {
		p.advanceLocked(stagePinned)
	} else {
		p.advanceLocked(stageRefusing)
	}
	seen := p.list.clientLists
	p.list.clientLists = nil
	p.mu.Unlock()
	if err == nil {
		// What the client was shown while the pin was taken may already
		// differ from it.
		for _, result := range seen {
			p.observe(result, "the client's tools/list (while pinning)")
		}
	}
	return nil
}

// awaitList waits until every listing asked for so far has completed (at
// most PinTimeout), asking for another if the last re-list failed. It
// returns why the list is not current otherwise.
func (p *Proxy) awaitList(ctx context.Context) error {
	t := time.NewTimer(p.cfg.PinTimeout)
	defer t.Stop()
	retried := false
	for {
		p.mu.Lock()
		if p.list.have == p.list.want {
			p.mu.Unlock()
			return nil
		}
		start := false
		if p.relistFailedLocked() {
			if retried {
				err := p.list.err
				p.mu.Unlock()
				return err
			}
			retried = true
			p.list.want++
			start = p.listerDueLocked()
		}
		done := p.list.done
		p.mu.Unlock()
		if start {
			p.startLister()
		}
		select {
		case <-done:
		case <-t.C:
			return fmt.Errorf("no current tool list within %v", p.cfg.PinTimeout)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// listAll fetches every page of the upstream's tools/list with the proxy's
// own requests.
func (p *Proxy) listAll(ctx context.Context) ([]json.RawMessage, error) {
	var tools []json.RawMessage
	seen := map[string]bool{}
	cursor := ""
	for page := 0; ; page++ {
		if page == transport.MaxListPages {
			return nil, fmt.Errorf("tools/list has more than %d pages", transport.MaxListPages)
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
	ch := p.routes.askUp(id)
	if ch == nil {
		return nil, errors.New(p.goneText())
	}
	if err := p.writeUp(&jsonrpc.Request{ID: id, Method: method, Params: params}); err != nil {
		p.routes.forgetUp(id)
		return nil, err
	}
	t := time.NewTimer(p.cfg.PinTimeout)
	defer t.Stop()
	select {
	case resp, ok := <-ch:
		if !ok {
			return nil, errors.New(p.goneText())
		}
		if resp.Error != nil {
			return nil, fmt.Errorf("%s: %w", method, resp.Error)
		}
		return resp.Result, nil
	case <-t.C:
		err := fmt.Errorf("%s: no answer within %v", method, p.cfg.PinTimeout)
		p.routes.forgetUp(id)
		return nil, err
	case <-ctx.Done():
		p.routes.forgetUp(id)
		return nil, ctx.Err()
	}
}

// observeList compares a tools/list result the client gets against the
// pin; what changed is refused from now on by the engine, and said on
// stderr. A result that comes before the pin is kept, and compared once
// the pin is taken, before any call is decided.
func (p *Proxy) observeList(result json.RawMessage, from string) {
	p.mu.Lock()
	if !p.pinOverLocked() {
		p.list.clientLists = append(p.list.clientLists, result)
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	p.observe(result, from)
}

func (p *Proxy) observe(result json.RawMessage, from string) {
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

// relist asks for the whole tool list to be read again, after
// notifications/tools/list_changed. It runs before the notification is
// relayed, so no call the client makes in answer to it is decided before
// the new list is in.
func (p *Proxy) relist() {
	p.mu.Lock()
	p.list.want++
	start := p.listerDueLocked()
	p.mu.Unlock()
	if start {
		p.startLister()
	}
}
