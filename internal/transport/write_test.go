package transport

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// chunkWriter records each Write it gets; with gate set, the first Write
// waits until gate is closed.
type chunkWriter struct {
	mu      sync.Mutex
	chunks  []string
	gate    chan struct{}
	entered chan struct{}
	err     error
}

func (w *chunkWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	first := len(w.chunks) == 0
	w.chunks = append(w.chunks, string(p))
	err := w.err
	w.mu.Unlock()
	if first && w.gate != nil {
		close(w.entered)
		<-w.gate
	}
	if err != nil {
		return 0, err
	}
	return len(p), nil
}

func (w *chunkWriter) got() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.chunks...)
}

func note(n int) *jsonrpc.Request {
	return &jsonrpc.Request{Method: "n" + strings.Repeat("x", n)}
}

// A corked Conn holds what is written and sends it in one write(2) when
// uncorked, in the order it was written; uncorked, each Write writes.
func TestConnCork(t *testing.T) {
	w := &chunkWriter{}
	c := NewConn(strings.NewReader(""), w)
	ctx := context.Background()
	c.Cork()
	for i := range 3 {
		if err := c.Write(ctx, note(i)); err != nil {
			t.Fatal(err)
		}
	}
	if got := w.got(); len(got) != 0 {
		t.Fatalf("corked, yet written: %q", got)
	}
	c.Cork() // nested: the last Uncork writes
	c.Uncork()
	if got := w.got(); len(got) != 0 {
		t.Fatalf("written before the last Uncork: %q", got)
	}
	c.Uncork()
	want := `{"jsonrpc":"2.0","method":"n"}` + "\n" + `{"jsonrpc":"2.0","method":"nx"}` + "\n" + `{"jsonrpc":"2.0","method":"nxx"}` + "\n"
	if got := w.got(); len(got) != 1 || got[0] != want {
		t.Fatalf("uncorked, wrote %q, want one write of %q", got, want)
	}
	if err := c.Write(ctx, note(0)); err != nil {
		t.Fatal(err)
	}
	if got := w.got(); len(got) != 2 {
		t.Fatalf("an uncorked Write did not write at once: %q", got)
	}
}

// Messages written while another goroutine is in write(2) go out together
// in the next write, in order, and the Writes that queued them do not
// wait for it.
func TestConnCoalesces(t *testing.T) {
	w := &chunkWriter{gate: make(chan struct{}), entered: make(chan struct{})}
	c := NewConn(strings.NewReader(""), w)
	ctx := context.Background()
	first := make(chan error)
	go func() { first <- c.Write(ctx, note(0)) }()
	<-w.entered
	for i := 1; i <= 3; i++ {
		done := make(chan error)
		go func() { done <- c.Write(ctx, note(i)) }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a Write waited for the write(2) in progress")
		}
	}
	close(w.gate)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	got := w.got()
	want := []string{
		`{"jsonrpc":"2.0","method":"n"}` + "\n",
		`{"jsonrpc":"2.0","method":"nx"}` + "\n" + `{"jsonrpc":"2.0","method":"nxx"}` + "\n" + `{"jsonrpc":"2.0","method":"nxxx"}` + "\n",
	}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("wrote %q, want %q", got, want)
	}
}

// A failed write fails every Write after it, queued or not.
func TestConnWriteError(t *testing.T) {
	w := &chunkWriter{err: errors.New("broken pipe")}
	c := NewConn(strings.NewReader(""), w)
	ctx := context.Background()
	if err := c.Write(ctx, note(0)); err == nil {
		t.Fatal("a failed write reported no error")
	}
	c.Cork()
	if err := c.Write(ctx, note(1)); err == nil {
		t.Fatal("a Write after a failed one reported no error")
	}
	c.Uncork()
	if n := len(w.got()); n != 1 {
		t.Fatalf("%d writes after the first failed, want none", n-1)
	}
}

// OnIdle's function runs before Read waits for the peer, and not while
// whole messages are still buffered.
func TestConnOnIdle(t *testing.T) {
	pr, pw := io.Pipe()
	c := NewConn(pr, io.Discard)
	idle := make(chan struct{}, 10)
	c.OnIdle(func() { idle <- struct{}{} })
	go pw.Write([]byte(`{"jsonrpc":"2.0","method":"a"}` + "\n" + `{"jsonrpc":"2.0","method":"b"}` + "\n"))
	ctx := context.Background()
	if _, err := c.Read(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(idle); n != 1 {
		t.Fatalf("idle ran %d times before the first read, want 1", n)
	}
	if _, err := c.Read(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(idle); n != 1 {
		t.Fatalf("idle ran while a whole message was buffered (%d times)", n)
	}
	go pw.Close()
	if _, err := c.Read(ctx); !errors.Is(err, io.EOF) {
		t.Fatalf("read %v, want EOF", err)
	}
	if n := len(idle); n != 2 {
		t.Fatalf("idle ran %d times, want 2 (before waiting for the end)", n)
	}
}

// waitWritten waits until w has been handed want, in all.
func waitWritten(t *testing.T, w *chunkWriter, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for strings.Join(w.got(), "") != want {
		if time.Now().After(deadline) {
			t.Fatalf("wrote %q, want %q", strings.Join(w.got(), ""), want)
		}
		time.Sleep(time.Millisecond)
	}
}

// A held message is written but for the last byte of its frame until it
// is ready, whether it came alone or in a batch, corked or not; what is
// written after it waits behind it, in order, and the Writes that queue
// it do not wait.
func TestConnWriteHeld(t *testing.T) {
	ctx := context.Background()
	id := func(n int) jsonrpc.ID { i, _ := jsonrpc.MakeID(float64(n)); return i }
	for _, tc := range []struct {
		name, in string
		corked   bool
		// held answers the first request, held; after it the second is
		// answered plainly (a batch's last answer) or a notification sent.
		before, after string
	}{
		{name: "alone", in: `{"jsonrpc":"2.0","id":1,"method":"a"}`,
			before: `{"jsonrpc":"2.0","id":1,"result":"big"`,
			after:  "}\n" + `{"jsonrpc":"2.0","method":"n"}` + "\n"},
		{name: "alone, corked", in: `{"jsonrpc":"2.0","id":1,"method":"a"}`, corked: true,
			before: `{"jsonrpc":"2.0","id":1,"result":"big"`,
			after:  "}\n" + `{"jsonrpc":"2.0","method":"n"}` + "\n"},
		{name: "batch", in: `[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","id":2,"method":"b"}]`,
			before: `[{"jsonrpc":"2.0","id":1,"result":"big"},{"jsonrpc":"2.0","id":2,"result":"small"}`,
			after:  "]\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &chunkWriter{}
			c := NewConn(strings.NewReader(tc.in+"\n"), w)
			for range strings.Count(tc.in, `"id"`) {
				if _, err := c.Read(ctx); err != nil {
					t.Fatal(err)
				}
			}
			held := &jsonrpc.Response{ID: id(1), Result: []byte(`"big"`)}
			var next jsonrpc.Message = note(0)
			batch := strings.HasPrefix(tc.in, "[")
			if batch {
				next = &jsonrpc.Response{ID: id(2), Result: []byte(`"small"`)}
			}
			ready := make(chan struct{})
			errs := make(chan error, 3)
			switch {
			case tc.corked:
				c.Cork()
				errs <- c.WriteHeld(ctx, held, ready) // returns at once
				errs <- c.Write(ctx, next)
				go func() { c.Uncork(); errs <- nil }() // writes, and waits at the hold
			case batch:
				errs <- c.WriteHeld(ctx, held, ready) // more answers are owed
				go func() { errs <- c.Write(ctx, next) }()
			default:
				go func() { errs <- c.WriteHeld(ctx, held, ready) }()
				waitWritten(t, w, tc.before)
				errs <- c.Write(ctx, next) // queued behind the hold, without waiting
			}
			waitWritten(t, w, tc.before)
			time.Sleep(20 * time.Millisecond)
			if got := strings.Join(w.got(), ""); got != tc.before {
				t.Fatalf("before ready, wrote %q, want %q", got, tc.before)
			}
			close(ready)
			waitWritten(t, w, tc.before+tc.after)
			for range 2 {
				if err := <-errs; err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// A held message whose peer is gone fails without waiting for its hold
// (here never ready): the write before the held byte fails, and ends the
// wait. Every later Write fails at once and queues nothing, held or not.
func TestConnWriteHeldPeerGone(t *testing.T) {
	ctx := context.Background()
	gone := errors.New("gone")
	w := &chunkWriter{err: gone}
	c := NewConn(strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"a"}`+"\n"+`{"jsonrpc":"2.0","id":2,"method":"b"}`+"\n"), w)
	for range 2 {
		if _, err := c.Read(ctx); err != nil {
			t.Fatal(err)
		}
	}
	never := make(chan struct{})
	id := func(n int) jsonrpc.ID { i, _ := jsonrpc.MakeID(float64(n)); return i }
	errs := make(chan error, 1)
	go func() { errs <- c.WriteHeld(ctx, &jsonrpc.Response{ID: id(1), Result: []byte(`"big"`)}, never) }()
	select {
	case err := <-errs:
		if !errors.Is(err, gone) {
			t.Fatalf("WriteHeld to a gone peer = %v, want %v", err, gone)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("WriteHeld to a gone peer waits for its hold")
	}
	if err := c.WriteHeld(ctx, &jsonrpc.Response{ID: id(2), Result: []byte(`"big"`)}, never); !errors.Is(err, gone) {
		t.Fatalf("a later WriteHeld = %v, want %v", err, gone)
	}
	if err := c.Write(ctx, note(0)); !errors.Is(err, gone) {
		t.Fatalf("a later Write = %v, want %v", err, gone)
	}
	c.writeMu.Lock()
	queued, held := len(c.out), len(c.holds)
	c.writeMu.Unlock()
	if queued != 0 || held != 0 || len(w.got()) != 1 {
		t.Fatalf("after the failed write: %d bytes and %d holds queued, %d writes tried; want none, none, 1", queued, held, len(w.got()))
	}
}
