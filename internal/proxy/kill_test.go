package proxy

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/bouncer-mcp/bouncer/internal/audit"
	"github.com/bouncer-mcp/bouncer/internal/testsupport/need"
	"github.com/bouncer-mcp/bouncer/internal/testsupport/syncbuf"
	"github.com/bouncer-mcp/bouncer/internal/testsupport/testserver"
)

// TestKill9UnderLoad kills a real `bouncer run` with SIGKILL while a
// client keeps 32 calls in flight through it to a fast server, at three
// points of the stream, and then checks what the group commit must keep:
// `bouncer audit verify` passes on the log the killed process left, and
// every call the server received has its allow line in the log (it was
// written before the call went upstream).
func TestKill9UnderLoad(t *testing.T) {
	need.Long(t, "builds bouncer and drives it under load")
	bin := bouncerBinary(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, after := range []int{300, 1200, 3000} {
		t.Run(strconv.Itoa(after), func(t *testing.T) {
			home, dir := t.TempDir(), t.TempDir()
			cmd := exec.Command(bin, "run", "--sandbox", "off", "--name", "fast", "--", exe)
			cmd.Env = append(os.Environ(), "BOUNCER_HOME="+home,
				testserver.EnvServer+"=fast", testserver.EnvDir+"="+dir)
			stderr := &syncbuf.Buffer{}
			cmd.Stderr = stderr
			in, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			w, r := bufio.NewWriter(in), bufio.NewReader(out)
			w.WriteString(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}` + "\n" +
				`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n")
			w.Flush()
			if line, err := r.ReadBytes('\n'); err != nil || !bytes.Contains(line, []byte(`"result"`)) {
				t.Fatalf("initialize: %s %v\n%s", line, err, stderr)
			}
			// The client: 32 calls in flight, a new one for each answer,
			// until the proxy is killed.
			call := func(id int) string {
				return `{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"tools/call","params":{"name":"echo","arguments":{"text":"call ` + strconv.Itoa(id) + `"}}}` + "\n"
			}
			next := 1
			for ; next <= 32; next++ {
				w.WriteString(call(next))
			}
			w.Flush()
			answered := 0
			for answered < after {
				line, err := r.ReadBytes('\n')
				if err != nil {
					t.Fatalf("after %d answers: %v\n%s", answered, err, stderr)
				}
				if bytes.Contains(line, []byte(BlockedPrefix)) || bytes.Contains(line, []byte(`"error"`)) {
					t.Fatalf("a call failed: %s", line)
				}
				answered++
				w.WriteString(call(next))
				next++
				if buf, _ := r.Peek(r.Buffered()); bytes.IndexByte(buf, '\n') < 0 {
					w.Flush()
				}
			}
			w.Flush()
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			go io.Copy(io.Discard, out)
			_ = cmd.Wait()
			in.Close()

			// The chain verifies, as the killed process left it.
			verify := exec.Command(bin, "audit", "verify")
			verify.Env = append(os.Environ(), "BOUNCER_HOME="+home)
			if out, err := verify.CombinedOutput(); err != nil {
				t.Fatalf("audit verify after kill -9 (%d calls sent, %d answered): %v\n%s", next-1, answered, err, out)
			}
			// Every call the server received has its allow line.
			lines := map[string]string{}
			es, err := audit.ReadFile(filepath.Join(home, "audit.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range es {
				lines[string(e.ID)] = e.Verdict
			}
			// The server writes the ids it read before it answers them.
			got, err := os.ReadFile(filepath.Join(dir, "calls.txt"))
			if err != nil {
				t.Fatal(err)
			}
			received := strings.Fields(string(got))
			if len(received) < after {
				t.Fatalf("the server received %d calls, fewer than the %d answered", len(received), after)
			}
			for _, id := range received {
				if lines[id] != "allow" {
					t.Fatalf("the server received call %s, whose audit line is %q (the log has %d lines)", id, lines[id], len(es))
				}
			}
			t.Logf("killed with %d calls sent, %d answered, %d received by the server, %d audit lines", next-1, answered, len(received), len(es))
		})
	}
}
