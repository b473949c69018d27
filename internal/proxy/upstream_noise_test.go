package proxy

import (
	"bufio"
	"bytes"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/bouncer-mcp/bouncer/internal/testsupport/testserver"
)

// A server that prints log lines on stdout, before and among its messages,
// works through the proxy: the client gets every message and nothing else,
// the calls are answered, and each line goes to stderr with a warning that
// names the server and shows the line escaped.
func TestUpstreamNoise(t *testing.T) {
	cmd := selfServer(t, "raw-noisy", "")
	cmd.Name = "noisy"
	h := newHarness(t, hopts{cmd: &cmd})
	out := bufio.NewReader(h.clientR)
	send := func(line string) {
		t.Helper()
		if _, err := io.WriteString(h.clientW, line+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	// await reads the client's stream up to the response with id; every
	// line on it must be a JSON-RPC message, and none a noise line.
	await := func(id string) string {
		t.Helper()
		for {
			line, err := out.ReadString('\n')
			if err != nil {
				t.Fatalf("reading the client's stream: %v\n%s", err, h.log.String())
			}
			if _, err := jsonrpc.DecodeMessage([]byte(line)); err != nil {
				t.Fatalf("the client got a line that is not a JSON-RPC message: %q", line)
			}
			for _, n := range testserver.NoiseLines {
				if strings.Contains(line, strings.TrimSpace(n)) {
					t.Fatalf("the client got the noise line %q in %q", n, line)
				}
			}
			if strings.Contains(line, `"id":`+id+`,`) {
				return line
			}
		}
	}
	send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	await("0")
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	for id := 1; id <= 2; id++ {
		send(`{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`)
		if got := await(strconv.Itoa(id)); !strings.Contains(got, `"text":"ok"`) {
			t.Fatalf("call %d: %s", id, got)
		}
	}
	// Each noise line, written before initialize's answer and before each
	// call's, got one warning: a line the proxy could not place would
	// have ended the session instead.
	var warned []string
	deadline := time.Now().Add(10 * time.Second)
	for {
		warned = nil
		for _, l := range strings.Split(h.log.String(), "\n") {
			if strings.HasPrefix(l, `bouncer: warning: server "noisy" wrote a line on its stdout that is not an MCP message; it was not passed to the client: `) {
				warned = append(warned, l)
			}
		}
		if len(warned) >= 3*len(testserver.NoiseLines) || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if len(warned) != 3*len(testserver.NoiseLines) {
		t.Fatalf("%d warnings, want %d:\n%s", len(warned), 3*len(testserver.NoiseLines), h.log.String())
	}
	log := h.log.String()
	for _, want := range []string{
		`client: "noisy server starting on stdio"`,
		`client: "\x1b[31mred alert\x1b[0m\u202e"`,
		`client: "long log line long log line `,
		`… (140000 bytes)`,
	} {
		if !strings.Contains(log, want) {
			t.Errorf("stderr lacks %s:\n%s", want, log)
		}
	}
	if strings.ContainsAny(log, "\x1b\u202e") {
		t.Errorf("stderr holds a raw terminal escape or bidi override:\n%q", log)
	}
	if bytes.Contains([]byte(log), []byte("the upstream server wrote output that is not MCP")) {
		t.Errorf("the session was ended:\n%s", log)
	}
}
