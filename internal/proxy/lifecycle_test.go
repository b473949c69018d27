package proxy

import (
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/bouncer-mcp/bouncer/internal/engine"
)

// The stages only move forward, along the transitions next lists; any other
// move is refused and leaves the stage as it was.
func TestStageTransitions(t *testing.T) {
	all := []stage{stageNew, stageInitializing, stageListing, stagePinned, stageRefusing, stageDraining, stageClosed}
	allowed := map[[2]stage]bool{}
	for from, tos := range next {
		for _, to := range tos {
			allowed[[2]stage{from, to}] = true
		}
	}
	for _, from := range all {
		for _, to := range all {
			p := &Proxy{stage: from}
			moved := p.advanceLocked(to)
			if moved != allowed[[2]stage{from, to}] {
				t.Errorf("%v → %v: moved = %v", from, to, moved)
			}
			if !moved && p.stage != from {
				t.Errorf("%v → %v refused but the stage became %v", from, to, p.stage)
			}
			if moved && to <= from {
				t.Errorf("%v → %v goes backwards", from, to)
			}
		}
	}
	// Every stage but closed can end, and closed is final.
	for _, s := range all[:len(all)-1] {
		if !allowed[[2]stage{s, stageClosed}] {
			t.Errorf("%v can't close", s)
		}
	}
	if len(next[stageClosed]) != 0 {
		t.Error("closed is not final")
	}
}

// Once the upstream is gone, no request is registered as forwarded (it
// would wait for an answer that can't come), and the proxy's own waiters
// are woken.
func TestRoutesClose(t *testing.T) {
	r := newRoutes()
	one, _ := jsonrpc.MakeID(float64(1))
	two, _ := jsonrpc.MakeID(float64(2))
	mine, _ := jsonrpc.MakeID("bouncer-1")
	if !r.send(one, "tools/call", "search_contacts") {
		t.Fatal("send refused before close")
	}
	ch := r.askUp(mine)
	ids := r.close()
	if len(ids) != 1 || ids[0] != one {
		t.Fatalf("close returned %v, want [1]", ids)
	}
	if _, ok := <-ch; ok {
		t.Fatal("the proxy's waiter got an answer instead of being woken")
	}
	if r.send(two, "tools/call", "") {
		t.Fatal("send accepted after close")
	}
	if r.askUp(mine) != nil {
		t.Fatal("askUp accepted after close")
	}
	if a := r.answered(one); a.known || a.tool != "" {
		t.Fatalf("answer after close = %+v", a)
	}
}

// A held call is let go by its id (a cancellation withdraws it, without
// the call's lock) while the engine's verdict may be replacing the request
// it forwards, under that lock: the id must not be read from that request
// (go test -race tells).
func TestUnholdWhileJudged(t *testing.T) {
	id, _ := jsonrpc.MakeID("call-1")
	c := newCall(&jsonrpc.Request{ID: id, Method: "tools/call", Params: json.RawMessage(`{"name":"echo"}`)}, engine.Call{Tool: "echo"})
	r := newRoutes()
	r.hold(c)
	judged := make(chan struct{})
	go func() {
		defer close(judged)
		c.judged(engine.Decision{Forward: json.RawMessage(`{"name":"echo","arguments":{}}`)})
	}()
	r.unhold(c) // as cancelHeld does once the call is withdrawn
	<-judged
	if _, held := r.holding(id); held {
		t.Fatal("the call is still held")
	}
	if c.req.ID != id {
		t.Fatalf("the judged request's id = %v, want %v", c.req.ID, id)
	}
}
