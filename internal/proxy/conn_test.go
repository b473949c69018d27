package proxy

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// readAll reads messages from a connection until an error, returning each
// re-encoded and whether the stream ended cleanly (io.EOF).
func readAll(c mcp.Connection) ([]string, bool) {
	var out []string
	for {
		m, err := c.Read(context.Background())
		if err != nil {
			return out, errors.Is(err, io.EOF)
		}
		b, err := jsonrpc.EncodeMessage(m)
		if err != nil {
			return out, false
		}
		out = append(out, string(b))
	}
}

func sdkConn(input string) mcp.Connection {
	c, _ := (&mcp.IOTransport{Reader: io.NopCloser(strings.NewReader(input)), Writer: nopWriteCloser{io.Discard}, MaxLineLength: -1}).Connect(context.Background())
	return c
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

func TestConnRead(t *testing.T) {
	req := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	for _, tc := range []struct {
		name  string
		input string
		n     int  // messages read
		clean bool // ends in io.EOF
	}{
		{"one line", req + "\n", 1, true},
		{"no final newline", req, 1, true},
		{"CRLF and blank lines", "\r\n\n" + req + "\r\n\r\n" + req + "\n", 2, true},
		{"a value over several lines", "{\"jsonrpc\":\"2.0\",\n \"id\":1,\n \"method\":\"ping\"}\n", 1, true},
		{"braces inside strings", `{"jsonrpc":"2.0","id":"}{","method":"x\"}]"}` + "\n", 1, true},
		{"two values on a line", req + req + "\n", 0, false},
		{"space before the newline", req + " \n", 0, false},
		{"cut short", req[:20], 0, false},
		{"not JSON-RPC", `{"hello":1}` + "\n", 0, false},
		{"a bare number", "42\n", 0, false},
		{"too deep", strings.Repeat("[", maxDepth+1) + "\n", 0, false},
		{"response", `{"jsonrpc":"2.0","id":"a","result":{}}` + "\n", 1, true},
		{"response without id", `{"jsonrpc":"2.0","result":{}}` + "\n", 0, false},
		{"batch", "[" + req + `,{"jsonrpc":"2.0","method":"notifications/x"}]` + "\n", 2, true},
		{"empty batch", "[]\n", 0, false},
		// Keys are case-sensitive: "Method" is no method, so this reads as an
		// (empty) response, as the go-sdk reads it.
		{"case matters", `{"jsonrpc":"2.0","id":1,"Method":"ping"}` + "\n", 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, clean := readAll(NewConn(strings.NewReader(tc.input), io.Discard))
			if len(got) != tc.n || clean != tc.clean {
				t.Fatalf("read %d messages (clean end %v), want %d (%v): %q", len(got), clean, tc.n, tc.clean, got)
			}
			// The go-sdk's own transport reads the same input the same way.
			want, wantClean := readAll(sdkConn(tc.input))
			if strings.Join(got, "\n") != strings.Join(want, "\n") || clean != wantClean {
				t.Fatalf("Conn read %q (clean %v), the go-sdk %q (clean %v)", got, clean, want, wantClean)
			}
		})
	}
}

// A message larger than the read buffer, and than the go-sdk's default
// 16 MiB frame limit, arrives whole.
func TestConnLargeMessage(t *testing.T) {
	text := strings.Repeat("x", 17<<20)
	in := `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"` + text + `"}]}}` + "\n"
	m, err := NewConn(strings.NewReader(in), io.Discard).Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if r := m.(*jsonrpc.Response); !bytes.Contains(r.Result, []byte(text)) {
		t.Fatalf("result of %d bytes lost its text", len(r.Result))
	}
}

// The answers to a batch's calls go back as one array once the last is in;
// notifications in the batch are owed nothing.
func TestConnBatchAnswers(t *testing.T) {
	in := `[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","method":"n"},{"jsonrpc":"2.0","id":2,"method":"b"}]` + "\n"
	var out bytes.Buffer
	c := NewConn(strings.NewReader(in), &out)
	ctx := context.Background()
	for range 3 {
		if _, err := c.Read(ctx); err != nil {
			t.Fatal(err)
		}
	}
	id1, _ := jsonrpc.MakeID(float64(1))
	id2, _ := jsonrpc.MakeID(float64(2))
	id3, _ := jsonrpc.MakeID(float64(3))
	if err := c.Write(ctx, &jsonrpc.Response{ID: id2, Result: []byte(`"two"`)}); err != nil {
		t.Fatal(err)
	}
	if out.Len() != 0 {
		t.Fatalf("wrote %q before the batch was complete", out.String())
	}
	if err := c.Write(ctx, &jsonrpc.Response{ID: id1, Result: []byte(`"one"`)}); err != nil {
		t.Fatal(err)
	}
	want := `[{"jsonrpc":"2.0","id":1,"result":"one"},{"jsonrpc":"2.0","id":2,"result":"two"}]` + "\n"
	if out.String() != want {
		t.Fatalf("batch answer = %q, want %q", out.String(), want)
	}
	out.Reset()
	if err := c.Write(ctx, &jsonrpc.Response{ID: id3, Result: []byte(`3`)}); err != nil {
		t.Fatal(err)
	}
	if want := `{"jsonrpc":"2.0","id":3,"result":3}` + "\n"; out.String() != want {
		t.Fatalf("answer outside a batch = %q, want %q", out.String(), want)
	}
}

// FuzzConnRead checks Conn against the go-sdk's stdio transport: on any
// input both read the same messages, and both end cleanly or both fail.
// (Batches that hold notifications are left out: the go-sdk refuses a
// second notification in one batch as a duplicate ID, Conn does not.)
func FuzzConnRead(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n",
		"{\"jsonrpc\":\"2.0\",\r\n\"id\":\"x\",\"result\":{\"a\":[1,2]}}\r\n\n",
		`[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","id":2,"result":null}]` + "\n",
		`{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"m","data":{}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"a","params":"\u00e9\\\"}"}` + "\n{",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, input string) {
		if strings.Contains(input, "[") && strings.Count(input, `"method"`) > 1 {
			t.Skip()
		}
		got, clean := readAll(NewConn(strings.NewReader(input), io.Discard))
		want, wantClean := readAll(sdkConn(input))
		if strings.Join(got, "\n") != strings.Join(want, "\n") || clean != wantClean {
			t.Fatalf("input %q:\nConn   %q (clean %v)\ngo-sdk %q (clean %v)", input, got, clean, want, wantClean)
		}
	})
}
