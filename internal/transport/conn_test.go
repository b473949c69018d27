package transport

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bouncer-mcp/bouncer/internal/testsupport/need"
)

// readAll reads messages from a connection until an error, returning each
// re-encoded, whether the stream ended cleanly (io.EOF), and how many
// messages Conn refused (and read on after).
func readAll(c mcp.Connection) (out []string, clean bool, refused int) {
	for {
		m, err := c.Read(context.Background())
		var r *RefusedError
		if errors.As(err, &r) {
			refused++
			continue
		}
		if err != nil {
			return out, errors.Is(err, io.EOF), refused
		}
		b, err := jsonrpc.EncodeMessage(m)
		if err != nil {
			return out, false, refused
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
	req2 := `{"jsonrpc":"2.0","id":2,"method":"ping"}`
	for _, tc := range []struct {
		name    string
		input   string
		n       int  // messages read
		clean   bool // ends in io.EOF
		refused int  // messages Conn refused (and answered) where the go-sdk would not
	}{
		{"one line", req + "\n", 1, true, 0},
		{"no final newline", req, 1, true, 0},
		{"CRLF and blank lines", "\r\n\n" + req + "\r\n\r\n" + req2 + "\n", 2, true, 0},
		{"a value over several lines", "{\"jsonrpc\":\"2.0\",\n \"id\":1,\n \"method\":\"ping\"}\n", 1, true, 0},
		{"braces inside strings", `{"jsonrpc":"2.0","id":"}{","method":"x\"}]"}` + "\n", 1, true, 0},
		{"two values on a line", req + req + "\n", 0, false, 0},
		{"space before the newline", req + " \n", 0, false, 0},
		{"cut short", req[:20], 0, false, 0},
		{"not JSON-RPC", `{"hello":1}` + "\n", 0, false, 0},
		{"a bare number", "42\n", 0, false, 0},
		{"too deep", strings.Repeat("[", maxDepth+1) + "\n", 0, false, 0},
		{"response", `{"jsonrpc":"2.0","id":"a","result":{}}` + "\n", 1, true, 0},
		{"response without id", `{"jsonrpc":"2.0","result":{}}` + "\n", 0, false, 0},
		{"batch", "[" + req + `,{"jsonrpc":"2.0","method":"notifications/x"}]` + "\n", 2, true, 0},
		// Keys are case-sensitive: "Method" is no method, so this reads as an
		// (empty) response, as the go-sdk reads it.
		{"case matters", `{"jsonrpc":"2.0","id":1,"Method":"ping"}` + "\n", 1, true, 0},
		// Where the go-sdk would end the stream, or pass a message on
		// rewritten or twice, Conn refuses the message and reads on.
		{"empty batch", "[]\n" + req + "\n", 1, true, 1},
		{"an id still awaiting its answer", req + "\n" + req + "\n" + req2 + "\n", 2, true, 1},
		{"the same id twice in a batch", "[" + req + "," + req + "]\n" + req2 + "\n", 1, true, 1},
		{"a batch reusing an id still owed", req + "\n[" + req2 + "," + req + "]\n", 1, true, 1},
		{"a fractional id", `{"jsonrpc":"2.0","id":1.5,"method":"ping"}` + "\n" + req + "\n", 1, true, 1},
		{"a batch with a fractional id", "[" + req + `,{"jsonrpc":"2.0","id":2.5,"method":"ping"}]` + "\n", 0, true, 1},
		{"a response with a fractional id", `{"jsonrpc":"2.0","id":1.5,"result":{}}` + "\n", 0, true, 1},
		{"a response with id null", `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}` + "\n", 0, true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, clean, refused := readAll(NewConn(strings.NewReader(tc.input), io.Discard))
			if len(got) != tc.n || clean != tc.clean || refused != tc.refused {
				t.Fatalf("read %d messages (clean end %v, %d refused), want %d (%v, %d): %q", len(got), clean, refused, tc.n, tc.clean, tc.refused, got)
			}
			if tc.refused > 0 {
				return
			}
			// The go-sdk's own transport reads the same input the same way.
			want, wantClean, _ := readAll(sdkConn(tc.input))
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

// Frames longer than the read buffer, split across many reads and followed
// by more frames, are read back byte for byte, each one whole.
func TestConnLongFramesExact(t *testing.T) {
	var in strings.Builder
	var want []string
	for i, n := range []int{200 << 10, 10, 64<<10 - 40, 150<<10 + 7, 3} {
		params := `{"name":"write_file","arguments":{"content":"` + strings.Repeat(`ab\"c\n`, n/8) + strings.Repeat("z", n%8) + `"}}`
		want = append(want, params)
		fmt.Fprintf(&in, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":%s}`+"\n", i+1, params)
	}
	c := NewConn(iotest.HalfReader(strings.NewReader(in.String())), io.Discard)
	for i, w := range want {
		m, err := c.Read(context.Background())
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if got := string(m.(*jsonrpc.Request).Params); got != w {
			t.Fatalf("frame %d: params of %d bytes, want %d", i, len(got), len(w))
		}
	}
	if _, err := c.Read(context.Background()); err != io.EOF {
		t.Fatalf("after the last frame: %v, want EOF", err)
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
	// Nothing more is owed: a second answer, or one to an id nobody sent,
	// is not written.
	out.Reset()
	for _, id := range []jsonrpc.ID{id1, id3} {
		if err := c.Write(ctx, &jsonrpc.Response{ID: id, Result: []byte(`3`)}); err == nil {
			t.Errorf("answer to %v, which nothing is waiting for, was accepted", id.Raw())
		}
	}
	if out.Len() != 0 {
		t.Fatalf("wrote %q for answers nothing was waiting for", out.String())
	}
}

// A request that came alone and will get no answer (the client cancelled
// it) is released, and its id may be used again; one in a batch is not,
// since the batch would never go back.
func TestConnRelease(t *testing.T) {
	in := `{"jsonrpc":"2.0","id":1,"method":"a"}` + "\n" +
		`[{"jsonrpc":"2.0","id":2,"method":"b"},{"jsonrpc":"2.0","id":3,"method":"c"}]` + "\n" +
		`{"jsonrpc":"2.0","id":1,"method":"again"}` + "\n"
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
	if c.InBatch(id1) || !c.InBatch(id2) {
		t.Fatalf("InBatch(1) = %v, InBatch(2) = %v", c.InBatch(id1), c.InBatch(id2))
	}
	if c.Release(id1) {
		t.Fatal("Release(1) says it is in a batch")
	}
	if !c.Release(id2) || !c.InBatch(id2) {
		t.Fatal("Release(2) let go of a request in an open batch")
	}
	m, err := c.Read(ctx)
	if err != nil {
		t.Fatalf("reading id 1 again after its release: %v", err)
	}
	if m.(*jsonrpc.Request).Method != "again" {
		t.Fatalf("read %v", m)
	}
	if out.Len() != 0 {
		t.Fatalf("wrote %q", out.String())
	}
}

// What Conn writes when it refuses: -32600, id null where the id can't be
// written back unambiguously, and a refused batch's answers as one array,
// one per request, in order.
func TestConnRefusals(t *testing.T) {
	ping := func(id string) string { return `{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}` }
	for _, tc := range []struct {
		name, input string
		ids         string // the ids of the refusals written, per line, "-" for none
	}{
		{"fractional id", ping("1.5"), "null"},
		{"empty batch", "[]", "null"},
		{"id reused before its answer", ping("1") + "\n" + ping("1"), "null"},
		{"the same id twice in a batch", "[" + ping("1") + "," + ping("1") + `,{"jsonrpc":"2.0","method":"n"},` + ping(`"x"`) + "]", "[null,null,\"x\"]"},
		{"a batch reusing an id still owed", ping("5") + "\n[" + ping("5") + "," + ping("6") + "]", "[null,6]"},
		{"a batch with an id that can't be carried", "[" + ping("1e3") + "," + ping("7") + "]", "[null,7]"},
		{"a response with an id that can't be carried", `{"jsonrpc":"2.0","id":1.0,"result":{}}`, "-"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			_, _, refused := readAll(NewConn(strings.NewReader(tc.input+"\n"), &out))
			if refused != 1 {
				t.Fatalf("%d refused, want 1", refused)
			}
			got := "-"
			if out.Len() > 0 {
				line := strings.TrimSuffix(out.String(), "\n")
				if strings.Contains(line, "\n") {
					t.Fatalf("more than one line: %q", out.String())
				}
				var one []json.RawMessage
				if line[0] == '[' {
					if err := json.Unmarshal([]byte(line), &one); err != nil {
						t.Fatal(err)
					}
				} else {
					one = []json.RawMessage{json.RawMessage(line)}
				}
				var ids []string
				for _, raw := range one {
					var r struct {
						ID    json.RawMessage `json:"id"`
						Error struct {
							Code    int    `json:"code"`
							Message string `json:"message"`
						} `json:"error"`
					}
					if err := json.Unmarshal(raw, &r); err != nil {
						t.Fatal(err)
					}
					if r.Error.Code != jsonrpc.CodeInvalidRequest || !strings.HasPrefix(r.Error.Message, "bouncer: invalid request: ") {
						t.Errorf("refusal %s", raw)
					}
					ids = append(ids, string(r.ID))
				}
				got = strings.Join(ids, ",")
				if line[0] == '[' {
					got = "[" + got + "]"
				}
			}
			if got != tc.ids {
				t.Fatalf("refusal ids %s, want %s (wrote %q)", got, tc.ids, out.String())
			}
		})
	}
}

// Ids pass unchanged or not at all: the go-sdk's jsonrpc.ID would hold
// each refused one rewritten.
func TestParseID(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		want string // re-encoded; "" for refused
	}{
		{`1`, `1`},
		{`0`, `0`},
		{`-7`, `-7`},
		{`9007199254740991`, `9007199254740991`},
		{`-9007199254740991`, `-9007199254740991`},
		{`"abc"`, `"abc"`},
		{`""`, `""`},
		{`"caf\u00e9"`, `"café"`}, // the same string, spelled differently
		{`"\ud83d\ude00"`, `"😀"`},
		{`"1.5"`, `"1.5"`},
		{`1.5`, ``},
		{`1.0`, ``},
		{`1e3`, ``},
		{`1E3`, ``},
		{`-0`, ``},
		{`01`, ``},
		{`9007199254740992`, ``},
		{`9007199254740993`, ``},
		{`9223372036854775808`, ``},
		{`-9223372036854775809`, ``},
		{`1e400`, ``},
		{`null`, ``},
		{`true`, ``},
		{`{}`, ``},
		{`[1]`, ``},
		{`"\ud800"`, ``},
		{`"\udc00\ud800"`, ``},
		{`"\ud800x"`, ``},
		{"\"\xff\"", ``},
	} {
		id, err := ParseID(json.RawMessage(tc.raw))
		got := ""
		if err == nil {
			if !id.IsValid() {
				t.Errorf("%s: no id and no error", tc.raw)
				continue
			}
			b, _ := json.Marshal(id.Raw())
			got = string(b)
		}
		if got != tc.want {
			t.Errorf("ParseID(%s) = %s (%v), want %q", tc.raw, got, err, tc.want)
		}
	}
}

// FuzzConnRead checks Conn against the go-sdk's stdio transport: on any
// input both read the same messages, and both end cleanly or both fail,
// except where Conn refuses a message (then what it wrote must be
// refusals). (Batches that hold notifications are left out: the go-sdk
// refuses a second notification in one batch as a duplicate ID, Conn does
// not.)
func FuzzConnRead(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n",
		"{\"jsonrpc\":\"2.0\",\r\n\"id\":\"x\",\"result\":{\"a\":[1,2]}}\r\n\n",
		`[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","id":2,"result":null}]` + "\n",
		`{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"m","data":{}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"a","params":"\u00e9\\\"}"}` + "\n{",
		// Escapes next to quotes, in keys and values, and a brace inside a
		// string: the scanner looks for a string's quote once per string.
		`{"jsonrpc":"2.0","id":1,"method":"a","params":{"k\\":"v\"\\","x":"\\\\","y":"a\nb\"c}"}}` + "\n" + `{"jsonrpc":"2.0","id":2,"method":"b"}` + "\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, input string) {
		if strings.Contains(input, "[") && strings.Count(input, `"method"`) > 1 {
			need.Skip(t, "input outside the property")
		}
		var out bytes.Buffer
		got, clean, refused := readAll(NewConn(strings.NewReader(input), &out))
		if refused > 0 {
			for _, line := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
				if line != "" && !strings.Contains(line, `"code":-32600`) {
					t.Fatalf("input %q: wrote %q, which is not a refusal", input, line)
				}
			}
			return
		}
		if out.Len() > 0 {
			t.Fatalf("input %q: wrote %q without refusing anything", input, out.String())
		}
		want, wantClean, _ := readAll(sdkConn(input))
		if !clean && len(got) < len(want) && strings.Join(got, "\n") == strings.Join(want[:len(got)], "\n") && emptyMethodRead(input, want[len(got)]) {
			// Where the go-sdk reads a request with an empty or null
			// method as a response with no id, Conn stops: such a line
			// is malformed, and would go upstream as something else.
			return
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") || clean != wantClean {
			t.Fatalf("input %q:\nConn   %q (clean %v)\ngo-sdk %q (clean %v)", input, got, clean, want, wantClean)
		}
	})
}

// emptyMethod finds a method key whose value is "" or null.
var emptyMethod = regexp.MustCompile(`"method"\s*:\s*(""|null)`)

// emptyMethodRead reports whether msg, as the go-sdk encodes what it read,
// is what it makes of a request or notification whose method is empty or
// null (a message with neither method, result nor error), and input holds
// such a method.
func emptyMethodRead(input, msg string) bool {
	var m map[string]json.RawMessage
	if !emptyMethod.MatchString(input) || json.Unmarshal([]byte(msg), &m) != nil {
		return false
	}
	_, method := m["method"]
	_, result := m["result"]
	_, errKey := m["error"]
	return !method && !result && !errKey
}

// The read buffer grows to hold a large frame, keeps what it grew to for
// the next one, and never grows past maxKeptRead: a longer frame is read
// in pieces, whole.
func TestConnReadBufferBounded(t *testing.T) {
	frame := func(id, n int) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{"text":"%s"}}`+"\n", id, strings.Repeat("x", n))
	}
	sizes := []int{200 << 10, 10, 3 << 20, 10, 300 << 10}
	var in strings.Builder
	for i, n := range sizes {
		in.WriteString(frame(i+1, n))
	}
	c := NewConn(iotest.HalfReader(strings.NewReader(in.String())), io.Discard)
	for i, n := range sizes {
		m, err := c.Read(context.Background())
		if err != nil {
			t.Fatalf("frame %d: %v", i+1, err)
		}
		r := m.(*jsonrpc.Response)
		if IDText(r.ID) != fmt.Sprint(i+1) || len(r.Result) != n+len(`{"text":""}`) {
			t.Fatalf("frame %d read as id %v with a result of %d bytes", i+1, r.ID, len(r.Result))
		}
		if got := c.r.Size(); got != maxKeptRead {
			t.Errorf("after frame %d the buffer holds %d bytes, want %d", i+1, got, maxKeptRead)
		}
	}
}
