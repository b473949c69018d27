package transport

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// answer is an answer line whose result is a string of n bytes of fill.
func answer(id, n int, fill string) string {
	return `{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"result":"` + strings.Repeat(fill, n/len(fill)) + `"}` + "\n"
}

// A large answer given back is read into again; one not given back, a
// small one, or one given back twice is never overwritten.
func TestGiveBack(t *testing.T) {
	ctx := context.Background()
	read := func(t *testing.T, c *Conn) *jsonrpc.Response {
		t.Helper()
		m, err := c.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return m.(*jsonrpc.Response)
	}
	t.Run("given back", func(t *testing.T) {
		c := NewConn(strings.NewReader(answer(1, 40<<10, "a")+answer(2, 40<<10, "b")+answer(3, 40<<10, "c")), nil)
		first := read(t, c)
		c.GiveBack(first)
		c.GiveBack(first) // a second time: passed over
		second := read(t, c)
		if !bytes.Equal(second.Result, []byte(`"`+strings.Repeat("b", 40<<10)+`"`)) {
			t.Fatalf("the second answer reads %.20q…", second.Result)
		}
		if !bytes.Contains(first.Result, []byte("bbbb")) {
			t.Fatal("the frame given back was not read into again")
		}
		third := read(t, c) // nothing given back: a new frame
		if bytes.Contains(second.Result, []byte("c")) || !bytes.Contains(third.Result, []byte("cccc")) {
			t.Fatal("a frame not given back was read into")
		}
	})
	t.Run("kept", func(t *testing.T) {
		c := NewConn(strings.NewReader(answer(1, 40<<10, "a")+answer(2, 40<<10, "b")), nil)
		first := read(t, c)
		read(t, c)
		if bytes.Contains(first.Result, []byte("b")) {
			t.Fatal("a frame not given back was read into")
		}
	})
	t.Run("small", func(t *testing.T) {
		c := NewConn(strings.NewReader(answer(1, 1<<10, "a")+answer(2, 40<<10, "b")), nil)
		first := read(t, c)
		c.GiveBack(first)
		read(t, c)
		if bytes.Contains(first.Result, []byte("b")) {
			t.Fatal("a small frame was lent")
		}
	})
	t.Run("error", func(t *testing.T) {
		data := strings.Repeat("d", 40<<10)
		c := NewConn(strings.NewReader(`{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"x","data":"`+data+`"}}`+"\n"+answer(2, 40<<10, "b")), nil)
		first := read(t, c)
		c.GiveBack(first)
		read(t, c)
		e, ok := first.Error.(*jsonrpc.Error)
		if !ok || e.Message != "x" || bytes.Contains(e.Data, []byte("b")) {
			t.Fatalf("the error answer reads %v", first.Error)
		}
	})
	t.Run("forgotten", func(t *testing.T) {
		// More loans than are remembered: the oldest is forgotten, and
		// giving it back does nothing.
		var in strings.Builder
		for i := range lendSlots + 2 {
			in.WriteString(answer(i, 40<<10, "a"))
		}
		in.WriteString(answer(99, 40<<10, "z"))
		c := NewConn(strings.NewReader(in.String()), nil)
		first := read(t, c)
		for range lendSlots + 1 {
			read(t, c)
		}
		c.GiveBack(first)
		read(t, c)
		if bytes.Contains(first.Result, []byte("z")) {
			t.Fatal("a forgotten loan was read into")
		}
	})
}

// A Write keeps none of the bytes it was given: an answer held back in a
// batch until the batch's last one is in is a copy.
func TestWriteKeepsNoBytes(t *testing.T) {
	ctx := context.Background()
	var out bytes.Buffer
	c := NewConn(strings.NewReader(`[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","id":2,"method":"b"}]`+"\n"), &out)
	for range 2 {
		if _, err := c.Read(ctx); err != nil {
			t.Fatal(err)
		}
	}
	result := []byte(`"first"`)
	if err := c.Write(ctx, &jsonrpc.Response{ID: mustID(t, 1), Result: result}); err != nil {
		t.Fatal(err)
	}
	copy(result, `"later"`) // the caller reuses its bytes
	if err := c.Write(ctx, &jsonrpc.Response{ID: mustID(t, 2), Result: []byte(`"second"`)}); err != nil {
		t.Fatal(err)
	}
	if got, want := out.String(), `[{"jsonrpc":"2.0","id":1,"result":"first"},{"jsonrpc":"2.0","id":2,"result":"second"}]`+"\n"; got != want {
		t.Fatalf("the batch's answers went out as %s, want %s", got, want)
	}
}

func mustID(t *testing.T, n int64) jsonrpc.ID {
	t.Helper()
	id, err := jsonrpc.MakeID(float64(n))
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// countingWriter counts the writes made to it.
type countingWriter struct {
	bytes.Buffer
	writes int
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.writes++
	return w.Buffer.Write(p)
}

// writeHolding stops before a hold's byte only while the hold is not
// ready: one that is ready when the write comes costs no write of its own.
func TestWriteHoldingReady(t *testing.T) {
	buf := []byte("first held|second held|rest")
	ready, waiting := make(chan struct{}), make(chan struct{})
	close(ready)
	for _, tc := range []struct {
		name   string
		holds  []hold
		writes int
	}{
		{"none", nil, 1},
		{"ready", []hold{{at: 10, ready: ready}, {at: 22, ready: ready}}, 1},
		{"one waits", []hold{{at: 10, ready: ready}, {at: 22, ready: waiting}}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &countingWriter{}
			done := make(chan error, 1)
			go func() { done <- writeHolding(w, buf, tc.holds) }()
			if tc.writes > 1 {
				select {
				case err := <-done:
					t.Fatalf("the write went past a hold that is not ready: %v", err)
				case <-time.After(50 * time.Millisecond):
				}
				close(waiting)
			}
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if w.String() != string(buf) || w.writes != tc.writes {
				t.Fatalf("%d writes of %q, want %d of %q", w.writes, w.String(), tc.writes, buf)
			}
		})
	}
}
