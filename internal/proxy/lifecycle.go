package proxy

import (
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// stage is where a session is in its life. It used to be implied by half a
// dozen flags under one mutex, which let a reader combine them into states
// that can't happen; now one value says it, and advanceLocked is the only
// place it changes, so every transition the pump makes is one of those
// listed in next.
type stage int

const (
	// stageNew: the client has not sent initialize. Only requests that
	// need no session pass; a tools/call is denied (nothing is pinned).
	stageNew stage = iota
	// stageInitializing: the client's initialize is with the upstream.
	// Calls wait for its answer and the pin.
	stageInitializing
	// stageListing: the upstream accepted initialize; the pin is taken
	// once the client says it is initialized (or sends a call). Calls
	// wait for it.
	stageListing
	// stagePinned: the tool list is pinned, and calls are decided (after
	// any re-list a list_changed asked for; see pin.go).
	stagePinned
	// stageRefusing: nothing could be pinned (the upstream refused
	// initialize, or the first tools/list failed), so every call is
	// denied with rule pinning, for the whole session.
	stageRefusing
	// stageDraining: the client closed its side and what it asked was
	// answered (or the drain deadline passed); the upstream has been told
	// to finish, and what it still says is relayed.
	stageDraining
	// stageClosed: the upstream is gone. Nothing more is forwarded, and
	// whatever was owed an answer from it has been failed.
	stageClosed
)

func (s stage) String() string {
	switch s {
	case stageNew:
		return "new"
	case stageInitializing:
		return "initializing"
	case stageListing:
		return "listing"
	case stagePinned:
		return "pinned"
	case stageRefusing:
		return "refusing"
	case stageDraining:
		return "draining"
	case stageClosed:
		return "closed"
	}
	return fmt.Sprintf("stage(%d)", int(s))
}

// next lists the transitions the lifecycle allows. Stages only move
// forward: a second initialize does not make a pinned session new again,
// and a pin that completes after the drain began does not undo it.
var next = map[stage][]stage{
	stageNew:          {stageInitializing, stageDraining, stageClosed},
	stageInitializing: {stageListing, stageRefusing, stageDraining, stageClosed},
	stageListing:      {stagePinned, stageRefusing, stageDraining, stageClosed},
	stagePinned:       {stageDraining, stageClosed},
	stageRefusing:     {stageDraining, stageClosed},
	stageDraining:     {stageClosed},
}

// advanceLocked moves the session to stage to, if the lifecycle allows that
// from where it is, and reports whether it moved. p.mu is held.
func (p *Proxy) advanceLocked(to stage) bool {
	for _, s := range next[p.stage] {
		if s == to {
			p.stage = to
			return true
		}
	}
	return false
}

// pinOverLocked reports whether the first listing is over: the tool list
// is pinned, or nothing will ever be. p.mu is held.
func (p *Proxy) pinOverLocked() bool {
	return p.stage >= stagePinned
}

// routes is where every message in flight is owed: the client's requests
// the upstream has (and which of those the proxy already answered), the
// proxy's own requests to either side, and the calls the proxy holds. It
// has its own lock, and knows when the upstream is gone, so that a request
// is never registered as forwarded after the pending ones were failed.
type routes struct {
	mu       sync.Mutex
	fwd      map[jsonrpc.ID]string                 // client requests sent upstream, by ID → method
	tools    map[jsonrpc.ID]string                 // the tool each forwarded tools/call calls
	dropUp   map[jsonrpc.ID]bool                   // forwarded requests answered by the proxy (cancelled in a batch): the upstream's answer is dropped
	waitUp   map[jsonrpc.ID]chan *jsonrpc.Response // the proxy's own requests to the upstream
	waitDown map[jsonrpc.ID]chan *jsonrpc.Response // the proxy's own requests to the client
	held     map[jsonrpc.ID]*call                  // calls not yet forwarded or answered (asking, or waiting for the tool list)
	shut     bool                                  // the upstream is gone
}

func newRoutes() *routes {
	return &routes{
		fwd:      map[jsonrpc.ID]string{},
		tools:    map[jsonrpc.ID]string{},
		dropUp:   map[jsonrpc.ID]bool{},
		waitUp:   map[jsonrpc.ID]chan *jsonrpc.Response{},
		waitDown: map[jsonrpc.ID]chan *jsonrpc.Response{},
		held:     map[jsonrpc.ID]*call{},
	}
}

// send registers a client request about to be sent upstream. It reports
// false, registering nothing, when the upstream is gone.
func (r *routes) send(id jsonrpc.ID, method, tool string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.shut {
		return false
	}
	r.fwd[id] = method
	if tool != "" {
		r.tools[id] = tool
	}
	return true
}

// unsend forgets a request whose write failed, and reports whether it was
// still owed an answer (the caller then answers it).
func (r *routes) unsend(id jsonrpc.ID) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, owed := r.fwd[id]
	delete(r.fwd, id)
	delete(r.tools, id)
	return owed
}

// answer is what routes knows of an upstream answer to a client request.
type answer struct {
	method  string // the request's method
	known   bool   // it answers a request sent upstream and still owed
	dropped bool   // it answers one the proxy answered itself
	tool    string // for a tools/call, the tool it called
}

// answered takes the upstream's answer to id off the books.
func (r *routes) answered(id jsonrpc.ID) answer {
	r.mu.Lock()
	defer r.mu.Unlock()
	method, known := r.fwd[id]
	a := answer{method: method, known: known, dropped: r.dropUp[id], tool: r.tools[id]}
	delete(r.fwd, id)
	delete(r.dropUp, id)
	delete(r.tools, id)
	return a
}

// cancel marks a forwarded request as answered by the proxy (it was
// cancelled in a batch): the upstream's answer, if one comes, is dropped.
// It reports whether id was forwarded and still owed.
func (r *routes) cancel(id jsonrpc.ID, inBatch func(jsonrpc.ID) bool) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.fwd[id]; !ok || !inBatch(id) {
		return false
	}
	delete(r.fwd, id)
	delete(r.tools, id)
	r.dropUp[id] = true
	return true
}

// dropping reports whether the upstream still has a request the proxy
// answered itself (its id can't be used again until the upstream answers).
func (r *routes) dropping(id jsonrpc.ID) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.dropUp[id]
}

// owed is how many client requests the upstream still has to answer.
func (r *routes) owed() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.fwd)
}

// askUp registers one of the proxy's own requests to the upstream; nil
// when the upstream is gone.
func (r *routes) askUp(id jsonrpc.ID) chan *jsonrpc.Response {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.shut {
		return nil
	}
	ch := make(chan *jsonrpc.Response, 1)
	r.waitUp[id] = ch
	return ch
}

// askDown registers one of the proxy's own requests to the client.
func (r *routes) askDown(id jsonrpc.ID) chan *jsonrpc.Response {
	r.mu.Lock()
	defer r.mu.Unlock()
	ch := make(chan *jsonrpc.Response, 1)
	r.waitDown[id] = ch
	return ch
}

// forgetUp and forgetDown withdraw the proxy's own request: an answer
// that comes later goes nowhere.
func (r *routes) forgetUp(id jsonrpc.ID) {
	r.mu.Lock()
	delete(r.waitUp, id)
	r.mu.Unlock()
}

func (r *routes) forgetDown(id jsonrpc.ID) {
	r.mu.Lock()
	delete(r.waitDown, id)
	r.mu.Unlock()
}

// deliverUp and deliverDown hand an answer to the proxy's own request to
// its waiter; an answer to nothing the proxy still waits for is dropped.
func (r *routes) deliverUp(m *jsonrpc.Response) {
	r.mu.Lock()
	ch, ok := r.waitUp[m.ID]
	delete(r.waitUp, m.ID)
	r.mu.Unlock()
	if ok {
		ch <- m
	}
}

func (r *routes) deliverDown(m *jsonrpc.Response) {
	r.mu.Lock()
	ch, ok := r.waitDown[m.ID]
	delete(r.waitDown, m.ID)
	r.mu.Unlock()
	if ok {
		ch <- m
	}
}

// hold keeps a call the proxy has not forwarded or answered yet.
func (r *routes) hold(c *call) {
	r.mu.Lock()
	r.held[c.id] = c
	r.mu.Unlock()
}

// holding returns the call held under id, if any.
func (r *routes) holding(id jsonrpc.ID) (*call, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.held[id]
	return c, ok
}

// unhold forgets a held call, unless its id is held by a newer call.
func (r *routes) unhold(c *call) {
	r.mu.Lock()
	if r.held[c.id] == c {
		delete(r.held, c.id)
	}
	r.mu.Unlock()
}

// close marks the upstream gone: it returns the client requests it still
// owed answers to (the caller fails them), and wakes the proxy's own
// requests to it, which then fail.
func (r *routes) close() []jsonrpc.ID {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.shut = true
	ids := make([]jsonrpc.ID, 0, len(r.fwd))
	for id := range r.fwd {
		ids = append(ids, id)
	}
	r.fwd = map[jsonrpc.ID]string{}
	r.tools = map[jsonrpc.ID]string{}
	r.dropUp = map[jsonrpc.ID]bool{}
	for id, ch := range r.waitUp {
		close(ch)
		delete(r.waitUp, id)
	}
	return ids
}
