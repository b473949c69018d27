package transport

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/bouncer-mcp/bouncer/internal/testsupport/testserver"
)

// noisyConn reads input with TolerateNoise and returns the messages read
// (re-encoded), the noise lines reported (each as "size:shown"), how many
// messages were refused, and how the stream ended (nil for a clean end).
func noisyConn(r io.Reader) (msgs, noise []string, refused int, end error) {
	c := NewConn(r, io.Discard)
	c.TolerateNoise(func(line []byte, size int) {
		noise = append(noise, fmt.Sprintf("%d:%s", size, line))
	})
	for {
		m, err := c.Read(context.Background())
		var rf *RefusedError
		if errors.As(err, &rf) {
			refused++
			continue
		}
		if errors.Is(err, io.EOF) {
			return msgs, noise, refused, nil
		}
		if err != nil {
			return msgs, noise, refused, err
		}
		b, _ := jsonrpc.EncodeMessage(m)
		msgs = append(msgs, string(b))
	}
}

// With TolerateNoise a line that is not meant as a JSON-RPC message is
// reported and skipped, and the messages around it are read whole; a
// message that is malformed otherwise ends the stream, or is refused, as
// it is without.
func TestConnNoise(t *testing.T) {
	req := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	resp := `{"jsonrpc":"2.0","id":"a","result":{"content":[{"type":"text","text":"ok"}]}}`
	long := strings.Repeat("log ", 50000) // longer than the read buffer
	bigMsg := `{"jsonrpc":"2.0","id":2,"result":{"text":"` + strings.Repeat("x", 200<<10) + `"}}`
	// n is a noise line as noisyConn reports it.
	n := func(line string) string { return fmt.Sprintf("%d:%s", len(line), line[:min(len(line), maxNoiseShown)]) }
	for _, tc := range []struct {
		name    string
		input   string
		msgs    []string // the messages read, in order
		noise   []string // "size:shown" of each noise line
		fails   string   // the stream ends with this error (empty: a clean end)
		refused int
	}{
		{"no noise", req + "\n" + resp + "\n", []string{req, resp}, nil, "", 0},
		{"a log line first", "starting server\n" + req + "\n", []string{req}, []string{n("starting server")}, "", 0},
		{"log lines among messages", req + "\nlistening\n\n" + resp + "\nbye\n", []string{req, resp}, []string{n("listening"), n("bye")}, "", 0},
		{"CRLF", "hello\r\n" + req + "\r\n", []string{req}, []string{n("hello")}, "", 0},
		{"bracketed", "[INFO] started [1/2]\n" + req + "\n", []string{req}, []string{n("[INFO] started [1/2]")}, "", 0},
		{"structured log", `{"level":"info","msg":"ready"}` + "\n" + req + "\n", []string{req}, []string{n(`{"level":"info","msg":"ready"}`)}, "", 0},
		{"a JSON string", `"just a string"` + "\n" + req + "\n", []string{req}, []string{n(`"just a string"`)}, "", 0},
		{"a number", "42\n" + req + "\n", []string{req}, []string{n("42")}, "", 0},
		{"JSON that is not JSON", "{level: 'info'}\n" + req + "\n", []string{req}, []string{n("{level: 'info'}")}, "", 0},
		{"an array of log values", `["a", 1]` + "\n" + req + "\n", []string{req}, []string{n(`["a", 1]`)}, "", 0},
		{"an open brace", "{ starting\n" + req + "\n", []string{req}, []string{n("{ starting")}, "", 0},
		{"an open quote", `{"msg":"it's open` + "\n" + req + "\n", []string{req}, []string{n(`{"msg":"it's open`)}, "", 0},
		{"an open quote, then quotes on the next line", `{"msg":"open` + "\n" + resp + "\n" + req + "\n", []string{resp, req}, []string{n(`{"msg":"open`)}, "", 0},
		{"an escaped line end", `{"msg":"a\` + "\n" + req + "\n", []string{req}, []string{n(`{"msg":"a\`)}, "", 0},
		{"a message and then text", req + " and more\n" + resp + "\n", []string{resp}, []string{n(req + " and more")}, "", 0},
		{"spaces after a message", req + " \t\r\n" + resp + "\n", []string{req, resp}, nil, "", 0},
		{"a message, a lone CR, a message", req + "\r" + resp + "\n", nil, []string{n(req + "\r" + resp)}, "", 0},
		{"a message over several lines", "{\"jsonrpc\":\"2.0\",\n\"id\":1,\"method\":\"ping\"}\n" + resp + "\n",
			[]string{resp}, []string{n(`{"jsonrpc":"2.0",`), n(`"id":1,"method":"ping"}`)}, "", 0},
		{"too deep", strings.Repeat("[", maxDepth+1) + "\n" + req + "\n", []string{req}, []string{n(strings.Repeat("[", maxDepth+1))}, "", 0},
		{"a long line", long + "\n" + req + "\n", []string{req}, []string{n(long)}, "", 0},
		{"a long line that opens a value", "{" + long + "\n" + req + "\n", []string{req}, []string{n("{" + long)}, "", 0},
		{"a large message after noise", "noise\n" + bigMsg + "\n", []string{bigMsg}, []string{n("noise")}, "", 0},
		{"noise at the end without a line end", req + "\nbye", []string{req}, []string{n("bye")}, "", 0},
		{"an open value at the end", req + "\n{\"a\":", []string{req}, []string{n(`{"a":`)}, "", 0},
		{"a terminal escape", "\x1b[2J\x1b[H\u202e\n" + req + "\n", []string{req}, []string{n("\x1b[2J\x1b[H\u202e")}, "", 0},
		// Meant as JSON-RPC, malformed otherwise: as without TolerateNoise.
		{"a wrong version", `{"jsonrpc":"1.0","id":1,"result":{}}` + "\n" + req + "\n", nil, nil, "invalid message version tag", 0},
		{"a null version", `{"jsonrpc":null,"id":1,"result":{}}` + "\n" + req + "\n", nil, nil, "invalid message version tag", 0},
		{"a response without an id", `{"jsonrpc":"2.0","result":{}}` + "\n" + req + "\n", nil, nil, "without an id", 0},
		{"a method that is not a string", `{"jsonrpc":"2.0","id":1,"method":7}` + "\n" + req + "\n", nil, nil, "unmarshaling jsonrpc message", 0},
		{"a batch with a bad member", "[" + req + `,5]` + "\n" + resp + "\n", nil, nil, "unmarshaling jsonrpc message", 0},
		{"a fractional id", `{"jsonrpc":"2.0","id":1.5,"method":"ping"}` + "\nnoise\n" + req + "\n", []string{req}, []string{n("noise")}, "", 1},
		{"an empty batch", "[]\n" + req + "\n", []string{req}, nil, "", 1},
	} {
		for _, reader := range []struct {
			name string
			r    func(string) io.Reader
		}{
			{"whole", func(s string) io.Reader { return strings.NewReader(s) }},
			{"a byte at a time", func(s string) io.Reader { return iotest.OneByteReader(strings.NewReader(s)) }},
		} {
			t.Run(tc.name+"/"+reader.name, func(t *testing.T) {
				msgs, noise, refused, end := noisyConn(reader.r(tc.input))
				var want []string
				for _, m := range tc.msgs {
					dm, err := jsonrpc.DecodeMessage([]byte(m))
					if err != nil {
						t.Fatalf("bad test message %s: %v", m, err)
					}
					b, _ := jsonrpc.EncodeMessage(dm)
					want = append(want, string(b))
				}
				if strings.Join(msgs, "\n") != strings.Join(want, "\n") {
					t.Errorf("messages:\n%q\nwant\n%q", msgs, want)
				}
				if strings.Join(noise, "\n") != strings.Join(tc.noise, "\n") {
					t.Errorf("noise:\n%q\nwant\n%q", noise, tc.noise)
				}
				switch {
				case tc.fails == "" && end != nil:
					t.Errorf("ended with %v, want a clean end", end)
				case tc.fails != "" && (end == nil || !strings.Contains(end.Error(), tc.fails)):
					t.Errorf("ended with %v, want an error with %q", end, tc.fails)
				}
				if refused != tc.refused {
					t.Errorf("%d refused, want %d", refused, tc.refused)
				}
			})
		}
	}
}

// FuzzConnNoise puts a line of anything between two messages: the messages
// are read whole, in order, whatever the line is, unless the line is itself
// meant as a message. Nothing is read but what was written as a message.
func FuzzConnNoise(f *testing.F) {
	for _, s := range testserver.NoiseLines {
		f.Add(s)
	}
	for _, s := range []string{"", "{", "[", `{"`, `{"a":"\`, `"`, `[{"a":[`, "}", "]]]", "\t{ }", `{"jsonrpc"`} {
		f.Add(s)
	}
	req := `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"s":"a\"b\\"}}`
	resp := `{"jsonrpc":"2.0","id":"x","result":{"content":[]}}`
	f.Fuzz(func(t *testing.T, line string) {
		line = strings.ReplaceAll(line, "\n", " ") // one line
		blank := strings.Trim(line, " \t\r")       // JSON's whitespace
		if t := blank; t != "" && (t[0] == '{' || t[0] == '[') && jsonrpcShaped([]byte(t)) {
			return // meant as JSON-RPC: read, refused or an error
		}
		input := line + "\n" + req + "\n" + line + "\n" + resp + "\n"
		msgs, noise, refused, end := noisyConn(strings.NewReader(input))
		if end != nil || refused != 0 || len(msgs) != 2 {
			t.Fatalf("line %q: read %q, ended %v, %d refused", line, msgs, end, refused)
		}
		if !strings.Contains(msgs[0], `"method":"ping"`) || !strings.Contains(msgs[1], `"id":"x"`) {
			t.Fatalf("line %q: read %q", line, msgs)
		}
		want := 2
		if blank == "" {
			want = 0
		}
		if len(noise) != want {
			t.Fatalf("line %q: %d noise lines reported, want %d: %q", line, len(noise), want, noise)
		}
	})
}

// BenchmarkConnReadLines1MiB is BenchmarkConnRead1MiB on a Conn that
// tolerates noise, as the stdio upstream's is: its line-end checks must
// not slow the reading of a large result.
func BenchmarkConnReadLines1MiB(b *testing.B) {
	for _, c := range []struct{ name, content string }{
		{"dense", strings.Repeat("lorem ipsum dolor sit amet, \"quoted\" and \\ back\n", 1<<20/50)},
		{"prose", strings.Repeat("the quick brown fox jumps over the lazy dog, again and again.\n", 1<<20/62)},
	} {
		b.Run(c.name, func(b *testing.B) {
			params, _ := json.Marshal(map[string]any{"name": "write_file", "arguments": map[string]any{"path": "/srv/out/x", "content": c.content}})
			frame := append([]byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":`), params...)
			frame = append(frame, "}\n"...)
			b.SetBytes(int64(len(frame)))
			b.ReportAllocs()
			r := bytes.NewReader(frame)
			for i := 0; i < b.N; i++ {
				r.Reset(frame)
				c := NewConn(r, io.Discard)
				c.TolerateNoise(func([]byte, int) { b.Fatal("noise") })
				if _, err := c.Read(context.Background()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
