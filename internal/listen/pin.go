package listen

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// pin is one wrapped server's tool list for the whole deployment: taken
// once, at start, by a session of the listener's own (warm), and held to
// by every session after.
type pin struct {
	mu    sync.Mutex
	tools []json.RawMessage // nil until taken
	ready chan struct{}     // closed once taken
}

func newPin() *pin { return &pin{ready: make(chan struct{})} }

func (p *pin) taken() bool {
	select {
	case <-p.ready:
		return true
	default:
		return false
	}
}

// hold holds a session's engine e to the pin, given the tool list the
// session's upstream listed (and e pinned). It returns why the session
// must be refused, or "". Before the pin is taken (the listener's own
// session), the list becomes the pin.
func (p *pin) hold(e Pinner, listed []json.RawMessage) string {
	p.mu.Lock()
	if p.tools == nil {
		p.tools = append([]json.RawMessage{}, listed...)
		close(p.ready)
		p.mu.Unlock()
		return ""
	}
	deploy := p.tools
	p.mu.Unlock()
	if slices.EqualFunc(listed, deploy, func(a, b json.RawMessage) bool { return bytes.Equal(a, b) }) {
		// e pinned listed, the deployment's definitions byte for byte:
		// pinning them again would give it the same pin, and nothing
		// differs. Any other list, however slight the difference, is
		// read below.
		return ""
	}
	// The session is judged on the deployment's pin, not on what its own
	// upstream said.
	if err := e.Pin(deploy); err != nil {
		why := fmt.Sprintf("the deployment's pin could not be applied: %v", err)
		e.Refuse("the session was refused: " + why)
		return why
	}
	differs := e.Differs(listed)
	if len(differs) == 0 {
		return ""
	}
	// Refused whole, before any call is decided: the calls the session
	// sent while its tools were listed are denied, none is forwarded.
	why := "its upstream lists tools other than those pinned for the deployment at start (" + strings.Join(differs, "; ") + "); restart the listener to pin a new tool list"
	e.Refuse("the session was refused: " + why)
	return why
}

// pinTimeout bounds the listener's own session that takes a pin.
const pinTimeout = 90 * time.Second

// takePin runs a session of the listener's own against a new upstream of
// b, through the same judge every session has, so that the pin is what a
// session's pump pins: initialize, every page of tools/list. It returns
// once the pin is taken, or why not.
func (l *Listener) takePin(ctx context.Context, b *backend) error {
	ctx, cancel := context.WithTimeout(ctx, pinTimeout)
	defer cancel()
	up, err := b.Start(ctx)
	if err != nil {
		l.metrics.upstreamFailures.Add(1)
		return err
	}
	l.metrics.upstreamStarts.Add(1)
	defer closeUpstream(up)
	pinned := make(chan string, 1)
	// What the pump says once the pin is taken is of no use: the session
	// is torn down then, and a list_changed the server sends after its
	// list meets a closed client.
	log := &mutable{w: l.opts.Log}
	judge, err := l.opts.NewJudge(SessionSpec{
		Server: b.Name, ID: l.opts.Replica + ".pin-" + b.Name, User: "", Log: log,
		Audit: scopedAudit{l.opts.Audit, "", l.opts.Replica, l.metrics},
		Pinned: func(e Pinner, tools []json.RawMessage) {
			why := b.pin.hold(e, tools)
			select {
			case pinned <- why:
			default:
			}
		},
	})
	if err != nil {
		return err
	}
	defer judge.Close()
	clientT, serverT := mcp.NewInMemoryTransports()
	down, err := serverT.Connect(ctx)
	if err != nil {
		return err
	}
	runDone := make(chan error, 1)
	go func() { runDone <- judge.Pump().Run(ctx, down, up) }()
	client := mcp.NewClient(&mcp.Implementation{Name: "bouncer-listen-pin", Version: "1"}, nil)
	cs, err := client.Connect(ctx, clientT, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	defer cs.Close()
	select {
	case why := <-pinned:
		log.mute()
		if why != "" {
			return fmt.Errorf("%s", why)
		}
		return nil
	case err := <-runDone:
		return fmt.Errorf("the server ended before its tools were listed: %v", err)
	case <-ctx.Done():
		return fmt.Errorf("no tool list within %v (bouncer's stderr says why)", pinTimeout)
	}
}

// Start takes the pin of every server in the background, retrying each
// until it is taken (readiness waits for all of them), and starts the
// idle reaper. It returns at once.
func (l *Listener) Start() {
	for _, b := range l.backends {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			wait := time.Second
			for {
				err := l.takePin(l.ctx, b)
				if err == nil {
					l.log("server %q: tool list pinned for the deployment", b.Name)
					return
				}
				if l.ctx.Err() != nil {
					return
				}
				l.log("server %q: could not pin its tool list (%v); retrying in %v, and the listener is not ready until it is pinned", b.Name, err, wait)
				select {
				case <-time.After(wait):
				case <-l.ctx.Done():
					return
				}
				wait = min(2*wait, 30*time.Second)
			}
		}()
	}
	for _, b := range l.backends {
		if b.warm != nil {
			l.wg.Add(1)
			go func() {
				defer l.wg.Done()
				select { // the pool fills once the server is pinned
				case <-b.pin.ready:
					l.keepWarm(b)
				case <-l.ctx.Done():
				}
			}()
		}
	}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		t := time.NewTicker(time.Minute)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				l.reap()
			case <-l.ctx.Done():
				return
			}
		}
	}()
}

// Pinned reports whether every server's tool list is pinned.
func (l *Listener) Pinned() bool {
	for _, b := range l.backends {
		if !b.pin.taken() {
			return false
		}
	}
	return true
}

// mutable is a writer that drops everything once muted.
type mutable struct {
	mu    sync.Mutex
	w     io.Writer
	muted bool
}

func (m *mutable) Write(p []byte) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.muted || m.w == nil {
		return len(p), nil
	}
	return m.w.Write(p)
}

func (m *mutable) mute() {
	m.mu.Lock()
	m.muted = true
	m.mu.Unlock()
}
