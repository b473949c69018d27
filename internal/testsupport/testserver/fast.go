package testserver

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
)

// Fast runs a JSON-RPC server written for speed, as the fastest real
// servers are: it reads every message already on its stdin before it
// writes, and writes all their answers at once (one write for whatever
// queued up), with no SDK in between. The throughput benchmarks put it
// behind bouncer so that the proxy's own cost is what they see. Tools:
//
//	echo   text → text
//	blob   n:int → n bytes of ASCII prose, the same text every call
//	fresh  n:int → the same, but its first 8 bytes are the number of calls
//	       served: a text that differs on every call
//
// With dir set, the id of every tools/call it reads is appended to
// dir/calls.txt, one a line, before it is answered: what reached the
// server, for tests that kill the proxy under load.
func Fast(dir string) error {
	in := bufio.NewReaderSize(os.Stdin, 64<<10)
	out := bufio.NewWriterSize(os.Stdout, 64<<10)
	var calls io.Writer
	if dir != "" {
		f, err := os.OpenFile(filepath.Join(dir, "calls.txt"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			return err
		}
		defer f.Close()
		calls = f
	}
	var seen []byte // ids read since the last flush, for calls
	served := 0     // tools/call answered, which makes fresh's text differ
	var buf []byte
	for {
		line, err := in.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			var long []byte
			long = append(long, line...)
			for err == bufio.ErrBufferFull {
				line, err = in.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if len(line) == 0 && err != nil {
			out.Flush()
			return nil
		}
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name      string `json:"name"`
				Arguments struct {
					Text string `json:"text"`
					N    int    `json:"n"`
				} `json:"arguments"`
			} `json:"params"`
		}
		if json.Unmarshal(line, &msg) == nil && msg.Method != "" && len(msg.ID) > 0 {
			buf = append(buf[:0], `{"jsonrpc":"2.0","id":`...)
			buf = append(buf, msg.ID...)
			buf = append(buf, `,"result":`...)
			switch msg.Method {
			case "initialize":
				buf = append(buf, `{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"fast","version":"1"}}`...)
			case "tools/list":
				buf = append(buf, `{"tools":[`+
					`{"name":"echo","description":"Echo the text","inputSchema":{"type":"object","properties":{"text":{"type":"string"}}}},`+
					`{"name":"blob","description":"Return n bytes of text","inputSchema":{"type":"object","properties":{"n":{"type":"integer"}}}},`+
					`{"name":"fresh","description":"Return n bytes of new text","inputSchema":{"type":"object","properties":{"n":{"type":"integer"}}}}]}`...)
			case "tools/call":
				served++
				buf = append(buf, `{"content":[{"type":"text","text":`...)
				switch n := msg.Params.Arguments.N; msg.Params.Name {
				case "blob":
					buf = append(buf, blob(n)...)
				case "fresh":
					// The blob with its first line changed: a new text.
					b := blob(n)
					at := len(buf)
					buf = append(buf, b...)
					if len(b) > 10 {
						copy(buf[at+1:at+9], fmt.Sprintf("%08d", served%1e8))
					}
				default:
					t, _ := json.Marshal(msg.Params.Arguments.Text)
					buf = append(buf, t...)
				}
				buf = append(buf, `}]}`...)
				if calls != nil {
					seen = append(append(seen, msg.ID...), '\n')
				}
			case "ping":
				buf = append(buf, `{}`...)
			default:
				buf = append(buf[:0], `{"jsonrpc":"2.0","id":`...)
				buf = append(buf, msg.ID...)
				buf = append(buf, `,"error":{"code":-32601,"message":"Method not found"}`...)
			}
			buf = append(buf, "}\n"...)
			out.Write(buf)
		}
		if in.Buffered() == 0 {
			if len(seen) > 0 {
				if _, err := calls.Write(seen); err != nil {
					return err
				}
				seen = seen[:0]
			}
			if err := out.Flush(); err != nil {
				return err
			}
		}
		if err != nil {
			out.Flush()
			return nil
		}
	}
}

// blobs are the JSON strings of Prose(n, 0), by n, made once.
var blobs = map[int][]byte{}

func blob(n int) []byte {
	b, ok := blobs[n]
	if !ok {
		b, _ = json.Marshal(Prose(n, 0))
		blobs[n] = b
	}
	return b
}

// proseWords are the words Prose writes.
var proseWords = []string{"the", "ticket", "printer", "customer", "report", "meeting", "invoice",
	"shipping", "address", "schedule", "quarterly", "numbers", "please", "review", "attached",
	"before", "friday", "thanks", "regards", "project", "update", "status", "delivery", "contract"}

// Prose returns n bytes of ASCII text: words, sentences and line ends,
// with an address and a URL now and then, as mail and documents are.
// Different seeds give different text.
func Prose(n, seed int) string {
	b := make([]byte, 0, n+64)
	x := uint32(seed)*2654435761 + 12345
	next := func() uint32 { x ^= x << 13; x ^= x >> 17; x ^= x << 5; return x }
	for i := 0; len(b) < n; i++ {
		switch r := next() % 40; {
		case r == 0:
			b = append(b, "mail "...)
			b = strconv.AppendUint(b, uint64(next()%100000), 10)
			b = append(b, "@example.com"...)
		case r == 1:
			b = append(b, "https://docs.example/"...)
			b = append(b, proseWords[next()%uint32(len(proseWords))]...)
			b = append(b, "?id="...)
			b = strconv.AppendUint(b, uint64(next()), 16)
		default:
			b = append(b, proseWords[next()%uint32(len(proseWords))]...)
		}
		switch {
		case i%97 == 96:
			b = append(b, ".\n"...)
		case i%13 == 12:
			b = append(b, ". "...)
		default:
			b = append(b, ' ')
		}
	}
	return string(b[:n])
}
