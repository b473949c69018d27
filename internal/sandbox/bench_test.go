//go:build linux

package sandbox

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// benchChild restricts itself (args[0] "strict") or not ("off"), then for
// each line "CALL N" on stdin makes N such system calls and answers "ok".
// The parent times the round trips, so both variants pay the same pipe
// overhead and the difference is the sandbox's.
func benchChild(args []string) int {
	if args[0] == "strict" {
		if _, err := Restrict(Strict, Config{StateDir: args[1]}); err != nil {
			fmt.Println("error", err)
			return 1
		}
	}
	null, err := os.OpenFile("/dev/null", os.O_WRONLY, 0)
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	fd := int(null.Fd())
	one := []byte{0}
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		f := strings.Fields(in.Text())
		n, _ := strconv.Atoi(f[1])
		switch f[0] {
		case "getppid": // allowed unconditionally
			for i := 0; i < n; i++ {
				unix.Getppid()
			}
		case "write":
			for i := 0; i < n; i++ {
				unix.Write(fd, one)
			}
		case "kill": // allowed for some targets only: the filter checks an argument
			self := os.Getpid()
			for i := 0; i < n; i++ {
				unix.Kill(self, 0)
			}
		}
		fmt.Println("ok")
	}
	return 0
}

// BenchmarkSyscall measures what the seccomp filter and Landlock add to a
// system call in the restricted proxy.
func BenchmarkSyscall(b *testing.B) {
	needKernel(b)
	for _, mode := range []string{"off", "strict"} {
		for _, call := range []string{"getppid", "write", "kill"} {
			b.Run("call="+call+"/sandbox="+mode, func(b *testing.B) {
				cmd := exec.Command(os.Args[0], "bench-child", mode, b.TempDir())
				in, _ := cmd.StdinPipe()
				out, _ := cmd.StdoutPipe()
				if err := cmd.Start(); err != nil {
					b.Fatal(err)
				}
				defer func() { in.Close(); cmd.Wait() }()
				rd := bufio.NewReader(out)
				do := func(n int) {
					fmt.Fprintf(in, "%s %d\n", call, n)
					if l, err := rd.ReadString('\n'); err != nil || l != "ok\n" {
						b.Fatalf("child: %q %v", l, err)
					}
				}
				do(1000) // warm up
				b.ResetTimer()
				do(b.N)
			})
		}
	}
}

// BenchmarkRestrictStartup measures what Restrict adds to a process's
// start: each op starts a child that restricts itself (or not) and exits.
func BenchmarkRestrictStartup(b *testing.B) {
	needKernel(b)
	for _, mode := range []string{"off", "strict"} {
		b.Run("sandbox="+mode, func(b *testing.B) {
			dir := b.TempDir()
			for i := 0; i < b.N; i++ {
				cmd := exec.Command(os.Args[0], "bench-child", mode, dir)
				cmd.Stdin = strings.NewReader("") // exits at EOF
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("%v: %s", err, out)
				}
			}
		})
	}
}
