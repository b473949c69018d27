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
