//go:build linux

package sandbox

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/bouncer-mcp/bouncer/internal/protect"
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

// BenchmarkOwnStart measures what each own-files form adds to starting an
// upstream, the cost bouncer run pays once per server start: each op
// plans the form, starts /bin/true through the launcher as bouncer run
// does, reads the launcher's word and waits for the exit. The own files
// are a state directory and three read-only files, two directories deep
// in a home directory; "arguments" starts /bin/true directly. cpu-ns/op
// is the CPU time the started process tree used (user and system), which
// a loaded machine inflates less than the elapsed time.
func BenchmarkOwnStart(b *testing.B) {
	needKernel(b)
	root := b.TempDir()
	home := root + "/home"
	for _, d := range []string{home + "/.bouncer", home + "/proj/src", home + "/.config/bouncer"} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			b.Fatal(err)
		}
	}
	ro := []string{home + "/proj/bouncer.yaml", home + "/proj/.mcp.json", home + "/.config/bouncer/trust.yaml"}
	for _, f := range ro {
		if err := os.WriteFile(f, nil, 0o600); err != nil {
			b.Fatal(err)
		}
	}
	for _, form := range []OwnForm{OwnArguments, OwnLandlock, OwnNamespace} {
		if why := formUnavailable(form); why != "" {
			b.Fatalf("%s: %s", form, why)
		}
		b.Run("form="+form.String(), func(b *testing.B) {
			var cpu time.Duration
			for i := 0; i < b.N; i++ {
				l := Direct("/bin/true", nil)
				l.Guard(Guarding{Files: OwnFiles{Hidden: []string{home + "/.bouncer"}, ReadOnly: ro}, Max: form, Dir: home + "/proj", Around: protect.Around})
				path, args, setup, err := l.Command()
				if err != nil {
					b.Fatal(err)
				}
				cmd := exec.Command(path, args...)
				cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
				if setup != nil {
					setup(cmd)
				}
				if err := cmd.Start(); err != nil {
					b.Fatal(err)
				}
				if err := l.Started(); err != nil {
					b.Fatal(err)
				}
				if err := cmd.Wait(); err != nil {
					b.Fatal(err)
				}
				cpu += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
				if l.Form() != form {
					b.Fatalf("ran as %s: %s", l.Form(), l.OwnNote())
				}
			}
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
		})
	}
}
