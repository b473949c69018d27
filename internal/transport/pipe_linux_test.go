package transport

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"golang.org/x/sys/unix"
)

// pipeCap is the capacity of the pipe behind f.
func pipeCap(t *testing.T, f *os.File) int {
	t.Helper()
	n, err := unix.FcntlInt(f.Fd(), unix.F_GETPIPE_SZ, 0)
	if err != nil {
		t.Fatalf("F_GETPIPE_SZ: %v", err)
	}
	return n
}

// intID is the request id n.
func intID(n int64) jsonrpc.ID {
	id, _ := jsonrpc.MakeID(float64(n))
	return id
}

// bigResult is an answer larger than a pipe's default capacity.
func bigResult(id int64) *jsonrpc.Response {
	return &jsonrpc.Response{ID: intID(id), Result: []byte(`{"text":"` + strings.Repeat("x", 100<<10) + `"}`)}
}

// The server's pipes keep the default size until a message larger than it
// crosses them, each way; then they hold pipeSize bytes.
func TestServerPipesGrowForLargeMessages(t *testing.T) {
	// The server answers a line that says "big" with a large line, and
	// any other with a small one.
	script := `while read -r line; do case "$line" in *big*) printf '{"jsonrpc":"2.0","id":2,"result":{"t":"'; head -c 100000 /dev/zero | tr '\0' x; printf '"}}\n';; *) echo '{"jsonrpc":"2.0","id":1,"result":{}}';; esac; done`
	p, err := Start(Command{Path: "/bin/sh", Args: []string{"-c", script}}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop(0)
	ctx := context.Background()
	caps := func() (int, int) { return pipeCap(t, p.stdin), pipeCap(t, p.stdout) }
	if in, out := caps(); in != smallPipe || out != smallPipe {
		t.Fatalf("at the start the pipes hold %d and %d bytes, want %d", in, out, smallPipe)
	}
	small := &jsonrpc.Request{ID: intID(1), Method: "ping"}
	if err := p.Write(ctx, small); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Read(ctx); err != nil {
		t.Fatal(err)
	}
	if in, out := caps(); in != smallPipe || out != smallPipe {
		t.Errorf("after small messages the pipes hold %d and %d bytes, want %d", in, out, smallPipe)
	}
	big := &jsonrpc.Request{ID: intID(2), Method: "big", Params: []byte(`{"s":"` + strings.Repeat("y", 100<<10) + `"}`)}
	if err := p.Write(ctx, big); err != nil {
		t.Fatal(err)
	}
	m, err := p.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := m.(*jsonrpc.Response); !ok || len(r.Result) < 100000 {
		t.Fatalf("read %v, not the large answer", m)
	}
	if in, out := caps(); in != pipeSize || out != pipeSize {
		t.Errorf("after a large message each way the pipes hold %d (stdin) and %d (stdout) bytes, want %d", in, out, pipeSize)
	}
}

// envStdioChild makes the test binary a client-facing Conn on its stdio
// (TestStdioPipesGrow).
const envStdioChild = "BOUNCER_TEST_STDIO_CHILD"

// The client's pipes grow the same way: this test holds their other ends,
// which are the same pipes. The child reads a large message and writes
// one, then waits for its stdin to close.
func TestStdioPipesGrow(t *testing.T) {
	if os.Getenv(envStdioChild) != "" {
		c := Stdio()
		ctx := context.Background()
		if _, err := c.Read(ctx); err != nil {
			os.Exit(3)
		}
		if err := c.Write(ctx, bigResult(1)); err != nil {
			os.Exit(4)
		}
		_, _ = c.Read(ctx) // until the parent has looked and closes stdin
		os.Exit(0)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run", "^TestStdioPipesGrow$")
	cmd.Env = append(os.Environ(), envStdioChild+"=1")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	inR.Close()
	outW.Close()
	if in, out := pipeCap(t, inW), pipeCap(t, outR); in != smallPipe || out != smallPipe {
		t.Errorf("at the start the client's pipes hold %d and %d bytes, want %d", in, out, smallPipe)
	}
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"write","arguments":{"text":"` + strings.Repeat("z", 100<<10) + `"}}}` + "\n"
	if _, err := inW.WriteString(call); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReaderSize(outR, 1<<20).ReadString('\n')
	if err != nil || len(line) < 100<<10 {
		t.Fatalf("the child answered %d bytes, %v", len(line), err)
	}
	in, out := pipeCap(t, inW), pipeCap(t, outR)
	inW.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if in != pipeSize || out != pipeSize {
		t.Errorf("after a large message each way the client's pipes hold %d (stdin) and %d (stdout) bytes, want %d", in, out, pipeSize)
	}
}

// A process grows at most maxGrown pipes: the rest keep the default size.
func TestGrowCap(t *testing.T) {
	before := grown.Load()
	defer grown.Store(before)
	grown.Store(maxGrown - 1)
	var caps []int
	for range 2 {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		defer w.Close()
		growOnce(r)
		caps = append(caps, pipeCap(t, w))
	}
	if caps[0] != pipeSize || caps[1] != smallPipe {
		t.Errorf("the last pipe allowed and the next hold %v bytes, want %d and %d", caps, pipeSize, smallPipe)
	}
}
