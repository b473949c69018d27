//go:build linux

package sandbox

import (
	"bufio"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/landlock-lsm/go-landlock/landlock"
	"golang.org/x/sys/unix"

	"github.com/bouncer-mcp/bouncer/internal/testsupport/need"
)

// The tests re-execute the test binary: as a probe that restricts itself
// and reports what it can still do, as the launcher, and as an upstream
// probe started by the launcher. Everything runs against the real kernel.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case LauncherName:
			os.Exit(RunLauncher(os.Args[2:]))
		case "proxy-probe":
			os.Exit(proxyProbe(os.Args[2:]))
		case "upstream-probe":
			os.Exit(upstreamProbe(os.Args[2:]))
		case "bench-child":
			os.Exit(benchChild(os.Args[2:]))
		case "own-probe":
			os.Exit(ownProbe(os.Args[2:]))
		case "exit-probe":
			os.Exit(exitProbe(os.Args[2:]))
		case "bare-probe":
			os.Exit(bareProbe(os.Args[2:]))
		case "bare-proxy":
			os.Exit(bareProxy(os.Args[2:]))
		case "seccomp-proxy":
			os.Exit(seccompProxy(os.Args[2:]))
		case "own-proxy":
			os.Exit(ownProxy(os.Args[2:]))
		case "remote-probe":
			os.Exit(remoteProbe(os.Args[2:]))
		}
	}
	os.Exit(m.Run())
}

// needKernel skips a test on a kernel without the features, unless CI is
// set, where a missing feature is a failure.
func needKernel(t testing.TB) {
	t.Helper()
	c := Probe()
	if c.LandlockABI >= MinStrictABI && c.Seccomp {
		return
	}
	need.Missing(t, fmt.Sprintf("Landlock ABI %d and seccomp (%+v)", MinStrictABI, c), "a Linux 6.7 or newer kernel with Landlock enabled")
}

// result is one probe's finding: what it tried and the error it got.
type result struct {
	Name string `json:"name"`
	Err  string `json:"err"` // "" for success
	No   int    `json:"errno"`
}

func report(name string, err error) {
	r := result{Name: name}
	if err != nil {
		r.Err = err.Error()
		var en syscall.Errno
		if errors.As(err, &en) {
			r.No = int(en)
		}
	}
	b, _ := json.Marshal(r)
	fmt.Println(string(b))
}

// proxyProbe: args are layers ("all", "landlock", "seccomp"), state dir,
// allowed file, denied file, outside dir, TCP port. It starts `cat` and a
// sleeper in their own process group before restricting, as bouncer run
// starts the upstream, then tries things and reports; it then waits for
// stdin to close so the parent can read /proc/PID/status.
func proxyProbe(args []string) int {
	layers, state, allowed, denied, outside, port := args[0], args[1], args[2], args[3], args[4], args[5]
	cat := exec.Command("cat")
	catIn, _ := cat.StdinPipe()
	catOut, _ := cat.StdoutPipe()
	sleeper := exec.Command("sleep", "60")
	sleeper.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cat.Start(); err != nil {
		report("start cat", err)
		return 1
	}
	if err := sleeper.Start(); err != nil {
		report("start sleep", err)
		return 1
	}
	var err error
	switch layers {
	case "all":
		var r Report
		r, err = Restrict(Strict, Config{StateDir: state, ReadPaths: []string{allowed}, ListDirs: []string{outside}, Upstream: sleeper.Process.Pid})
		report("report "+r.String(), nil)
	case "landlock":
		var rules = mustRules(state, allowed)
		err = proxyLandlock().Restrict(rules...)
	case "seccomp":
		var prog []unix.SockFilter
		info, _ := nativeArch()
		if prog, err = proxyFilter(info, os.Getpid(), sleeper.Process.Pid); err == nil {
			err = loadFilter(prog)
		}
	}
	report("restrict", err)
	if err != nil {
		return 1
	}

	_, err = os.ReadFile(allowed)
	report("read allowed", err)
	_, err = os.ReadFile(denied)
	report("read denied", errnoOf(err))
	report("create in state", os.WriteFile(filepath.Join(state, "x"), []byte("x"), 0o600))
	report("create outside", errnoOf(os.WriteFile(filepath.Join(outside, "x"), []byte("x"), 0o600)))
	if layers == "all" {
		// outside is a ListDirs entry: listed, but not read, and nothing
		// beside it is listed.
		_, err = os.ReadDir(outside)
		report("list listed dir", err)
		_, err = os.ReadFile(filepath.Join(outside, "inner.txt"))
		report("read in listed dir", errnoOf(err))
		_, err = os.ReadDir(filepath.Dir(outside))
		report("list unlisted dir", errnoOf(err))
	}
	// What the pending file does: lock, temp file, fsync, rename.
	report("pending cycle", pendingCycle(state))
	b := make([]byte, 16)
	_, err = rand.Read(b)
	report("getrandom", err)

	report("tcp connect", errnoOf(dialRaw(unix.AF_INET, 0, port)))
	report("mptcp connect", errnoOf(dialRaw(unix.AF_INET, ipprotoMPTCP, port)))
	// The protocol's high bits set: the kernel reads the low 32 bits.
	report("mptcp high bits", errnoOf(socketRaw(unix.AF_INET, unix.SOCK_STREAM, 1<<32|ipprotoMPTCP)))
	report("tcp bind", errnoOf(bindRaw()))
	report("exec", errnoOf(exec.Command("/bin/true").Run()))
	report("ptrace", errnoOf(ptraceAttach(os.Getppid())))
	report("kill other", errnoOf(syscall.Kill(os.Getppid(), 0)))
	report("kill cat", errnoOf(syscall.Kill(cat.Process.Pid, 0)))

	// The stdio pump still works: a megabyte through cat.
	report("pump", pump(catIn, catOut))
	// Stopping the upstream: signal its process group, reap it.
	report("kill group", syscall.Kill(-sleeper.Process.Pid, syscall.SIGTERM))
	werr := sleeper.Wait()
	if ee, ok := werr.(*exec.ExitError); ok && ee.Sys().(syscall.WaitStatus).Signaled() {
		werr = nil
	}
	report("wait", werr)
	fmt.Println(`{"name":"ready"}`)
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
	return 0
}

func mustRules(state, allowed string) []landlock.Rule {
	r, err := proxyRules(Config{StateDir: state, ReadPaths: []string{allowed}})
	if err != nil {
		panic(err)
	}
	return r
}

func errnoOf(err error) error {
	if err == nil {
		return nil
	}
	var en syscall.Errno
	if errors.As(err, &en) {
		return en
	}
	return err
}

func socketRaw(domain, typ int, proto uint64) error {
	fd, _, e := unix.Syscall(unix.SYS_SOCKET, uintptr(domain), uintptr(typ), uintptr(proto))
	if e != 0 {
		return e
	}
	unix.Close(int(fd))
	return nil
}

func dialRaw(domain, proto int, port string) error {
	fd, err := unix.Socket(domain, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, proto)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var p int
	fmt.Sscan(port, &p)
	return unix.Connect(fd, &unix.SockaddrInet4{Port: p, Addr: [4]byte{127, 0, 0, 1}})
}

func bindRaw() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}})
}

func ptraceAttach(pid int) error {
	_, _, e := unix.Syscall(unix.SYS_PTRACE, unix.PTRACE_ATTACH, uintptr(pid), 0)
	if e != 0 {
		return e
	}
	return nil
}

func pendingCycle(dir string) error {
	lf, err := os.OpenFile(filepath.Join(dir, "pending.json.lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	defer lf.Close()
	if err := unix.Flock(int(lf.Fd()), unix.LOCK_EX); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".pending-*.tmp")
	if err != nil {
		return err
	}
	if _, err := tmp.WriteString("{}"); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	tmp.Close()
	if err := os.Rename(tmp.Name(), filepath.Join(dir, "pending.json")); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return err
	}
	return os.Remove(filepath.Join(dir, "x"))
}

func pump(in interface{ Write([]byte) (int, error) }, out interface{ Read([]byte) (int, error) }) error {
	const n = 1 << 20
	done := make(chan error, 1)
	go func() {
		buf := make([]byte, 32<<10)
		got := 0
		for got < n {
			k, err := out.Read(buf)
			got += k
			if err != nil {
				done <- fmt.Errorf("after %d bytes: %w", got, err)
				return
			}
		}
		done <- nil
	}()
	chunk := []byte(strings.Repeat("x", 1023) + "\n")
	for i := 0; i < n/len(chunk); i++ {
		if _, err := in.Write(chunk); err != nil {
			return err
		}
	}
	select {
	case err := <-done:
		return err
	case <-time.After(20 * time.Second):
		return errors.New("pump timed out")
	}
}

// runProbe runs the test binary with args and returns its findings by
// name, and the child's /proc status lines (every thread) read while it
// waits.
func runProbe(t *testing.T, args ...string) (map[string]result, []string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stdin.Close()
		cmd.Wait()
	}()
	res := map[string]result{}
	var status []string
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		var r result
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("probe said %q", sc.Text())
		}
		res[r.Name] = r
		if strings.HasPrefix(r.Name, "report ") {
			t.Logf("%s", r.Name)
		}
		if r.Name == "ready" {
			status = threadStatus(t, cmd.Process.Pid)
			break
		}
	}
	return res, status
}

// threadStatus returns "Seccomp:\tN" and "NoNewPrivs:\tN" of every thread.
func threadStatus(t *testing.T, pid int) []string {
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/status", pid))
	if err != nil || len(tasks) == 0 {
		t.Fatalf("no tasks for %d: %v", pid, err)
	}
	var out []string
	for _, f := range tasks {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "Seccomp:") || strings.HasPrefix(l, "NoNewPrivs:") {
				out = append(out, strings.Join(strings.Fields(l), " "))
			}
		}
	}
	return out
}

type probeDirs struct{ state, allowed, denied, outside, port string }

func setup(t *testing.T) probeDirs {
	t.Helper()
	root := t.TempDir()
	d := probeDirs{
		state:   filepath.Join(root, "state"),
		allowed: filepath.Join(root, "allowed.txt"),
		denied:  filepath.Join(root, "denied.txt"),
		outside: filepath.Join(root, "outside"),
	}
	for _, dir := range []string{d.state, d.outside} {
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{d.allowed, d.denied, filepath.Join(d.outside, "inner.txt")} {
		if err := os.WriteFile(f, []byte("secret"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ln, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	d.port = fmt.Sprint(ln.Addr().(*net.TCPAddr).Port)
	return d
}

func want(t *testing.T, res map[string]result, name string, errno syscall.Errno) {
	t.Helper()
	r, ok := res[name]
	switch {
	case !ok:
		t.Errorf("%s: probe did not report", name)
	case errno == 0 && r.Err != "":
		t.Errorf("%s: want success, got %s", name, r.Err)
	case errno != 0 && r.No != int(errno):
		t.Errorf("%s: want %v, got %q", name, errno, r.Err)
	}
}

// TestRestrictStrict: the whole proxy sandbox, as bouncer run applies it.
func TestRestrictStrict(t *testing.T) {
	needKernel(t)
	d := setup(t)
	res, status := runProbe(t, "proxy-probe", "all", d.state, d.allowed, d.denied, d.outside, d.port)
	want(t, res, "restrict", 0)
	want(t, res, "read allowed", 0)
	want(t, res, "read denied", unix.EACCES)
	want(t, res, "create in state", 0)
	want(t, res, "create outside", unix.EACCES)
	want(t, res, "list listed dir", 0)
	want(t, res, "read in listed dir", unix.EACCES)
	want(t, res, "list unlisted dir", unix.EACCES)
	want(t, res, "pending cycle", 0)
	want(t, res, "getrandom", 0)
	want(t, res, "tcp connect", unix.EPERM) // seccomp: no socket at all
	want(t, res, "mptcp connect", unix.EPERM)
	want(t, res, "mptcp high bits", unix.EPERM)
	want(t, res, "tcp bind", unix.EPERM)
	want(t, res, "exec", unix.EPERM)
	want(t, res, "ptrace", unix.EPERM)
	want(t, res, "kill other", unix.EPERM)
	want(t, res, "kill cat", unix.EPERM) // not the upstream named in Config
	want(t, res, "pump", 0)
	want(t, res, "kill group", 0)
	want(t, res, "wait", 0)
	if len(status) == 0 {
		t.Fatal("no status")
	}
	for _, l := range status {
		if l != "Seccomp: 2" && l != "NoNewPrivs: 1" {
			t.Errorf("thread status %q, want Seccomp: 2 and NoNewPrivs: 1 on every thread", l)
		}
	}
}

// TestLandlockAlone: each Landlock rule bites without seccomp's help; the
// MPTCP connect shows why the seccomp rule exists.
func TestLandlockAlone(t *testing.T) {
	needKernel(t)
	d := setup(t)
	res, _ := runProbe(t, "proxy-probe", "landlock", d.state, d.allowed, d.denied, d.outside, d.port)
	want(t, res, "restrict", 0)
	want(t, res, "read allowed", 0)
	want(t, res, "read denied", unix.EACCES)
	want(t, res, "create outside", unix.EACCES)
	want(t, res, "pending cycle", 0)
	want(t, res, "tcp connect", unix.EACCES)
	want(t, res, "tcp bind", unix.EACCES)
	want(t, res, "exec", unix.EACCES)
	want(t, res, "pump", 0)
	want(t, res, "kill group", 0) // no signal scope: the upstream is outside the domain
	if c := Probe(); c.MPTCP {
		if r := res["mptcp connect"]; r.Err != "" {
			t.Logf("MPTCP connect under Landlock alone: %s (kernel may have closed the gap)", r.Err)
		} else {
			t.Logf("MPTCP connect under Landlock alone succeeded: the seccomp rule is needed")
		}
	}
}

// TestSeccompAlone: the allowlist refuses sockets, exec and ptrace by
// itself, and the pump, the state files and signals still work.
func TestSeccompAlone(t *testing.T) {
	needKernel(t)
	d := setup(t)
	res, _ := runProbe(t, "proxy-probe", "seccomp", d.state, d.allowed, d.denied, d.outside, d.port)
	want(t, res, "restrict", 0)
	want(t, res, "read denied", 0) // files are Landlock's job
	want(t, res, "pending cycle", 0)
	want(t, res, "tcp connect", unix.EPERM)
	want(t, res, "mptcp connect", unix.EPERM)
	want(t, res, "mptcp high bits", unix.EPERM)
	want(t, res, "exec", unix.EPERM)
	want(t, res, "ptrace", unix.EPERM)
	want(t, res, "pump", 0)
	want(t, res, "kill group", 0)
	want(t, res, "wait", 0)
}
