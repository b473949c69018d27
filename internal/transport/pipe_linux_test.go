package transport

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"testing"

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

// The server's stdin and stdout are pipes of pipeSize bytes, so that a
// large message crosses them in one write and one read.
func TestStartGrowsPipes(t *testing.T) {
	p, err := Start(Command{Path: "/bin/sh", Args: []string{"-c", "cat >/dev/null"}}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop(0)
	if got := pipeCap(t, p.stdin); got != pipeSize {
		t.Errorf("the server's stdin holds %d bytes, want %d", got, pipeSize)
	}
	if got := pipeCap(t, p.stdout); got != pipeSize {
		t.Errorf("the server's stdout holds %d bytes, want %d", got, pipeSize)
	}
}

// envStdioChild makes the test binary call Stdio and say so
// (TestStdioGrowsPipes).
const envStdioChild = "BOUNCER_TEST_STDIO_CHILD"

// Stdio grows the client's pipes too: the client's ends, which this test
// holds, are the same pipes.
func TestStdioGrowsPipes(t *testing.T) {
	if os.Getenv(envStdioChild) != "" {
		c := Stdio()
		_, _ = os.Stdout.WriteString("ready\n")
		_, _ = c.r.ReadByte() // wait for the parent to look
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
	cmd := exec.Command(exe, "-test.run", "^TestStdioGrowsPipes$")
	cmd.Env = append(os.Environ(), envStdioChild+"=1")
	cmd.Stdin, cmd.Stdout = inR, outW
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	inR.Close()
	outW.Close()
	if line, err := bufio.NewReader(outR).ReadString('\n'); err != nil || line != "ready\n" {
		t.Fatalf("the child said %q, %v", line, err)
	}
	in, out := pipeCap(t, inW), pipeCap(t, outR)
	inW.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if in != pipeSize || out != pipeSize {
		t.Errorf("the client's pipes hold %d (stdin) and %d (stdout) bytes, want %d", in, out, pipeSize)
	}
}
