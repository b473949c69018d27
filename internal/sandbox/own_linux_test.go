//go:build linux

package sandbox

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bouncer-mcp/bouncer/internal/protect"
	"github.com/bouncer-mcp/bouncer/internal/testsupport/need"
	"github.com/bouncer-mcp/bouncer/internal/testsupport/syncbuf"
)

// The own-files forms, tried against the real kernel: a test starts the
// test binary as a proxy ("own-proxy", as root or as another user), which
// starts the launcher the way bouncer run does (Direct, Guard, Command,
// Started, Fallback), which starts the test binary once more as the
// server ("own-probe"), which attacks the own files and says what it got.

// ownTree is a home directory with a state directory and a project whose
// policy is reached through a link too.
type ownTree struct {
	Home, State, Proj, Policy, Link, Remembered string
	// Outside is a process outside the server's namespaces (the test).
	Outside int
}

func newOwnTree(t *testing.T, uid int) ownTree {
	t.Helper()
	root := t.TempDir()
	tr := ownTree{Home: filepath.Join(root, "home"), Outside: os.Getpid()}
	tr.State = filepath.Join(tr.Home, ".bouncer")
	tr.Proj = filepath.Join(tr.Home, "proj")
	tr.Policy = filepath.Join(tr.Proj, "bouncer.yaml")
	tr.Link = filepath.Join(tr.Home, "policy-link.yaml")
	tr.Remembered = filepath.Join(tr.State, "remembered.json")
	for _, d := range []string{tr.State, filepath.Join(tr.Proj, "src")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	must(t, os.WriteFile(tr.Remembered, []byte("secret"), 0o600))
	must(t, os.WriteFile(tr.Policy, []byte("policy"), 0o600))
	must(t, os.Symlink("proj/bouncer.yaml", tr.Link))
	if uid != 0 {
		// Everything from the temporary directory down is the user's.
		must(t, os.Chmod(filepath.Dir(root), 0o755))
		must(t, filepath.Walk(root, func(p string, _ os.FileInfo, err error) error {
			if err != nil {
				return err
			}
			return os.Lchown(p, uid, uid)
		}))
	}
	return tr
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func (tr ownTree) unchanged(t *testing.T) {
	t.Helper()
	for p, want := range map[string]string{tr.Remembered: "secret", tr.Policy: "policy"} {
		if b, err := os.ReadFile(p); err != nil || string(b) != want {
			t.Errorf("%s: %q, %v; want it unchanged", p, b, err)
		}
	}
	if dst, err := os.Readlink(tr.Link); err != nil || dst != "proj/bouncer.yaml" {
		t.Errorf("the link to the policy: %q, %v", dst, err)
	}
}

// ownProbe runs as the server: it attacks the tree (args[0], JSON) and
// prints one result line per attack, then its status.
func ownProbe(args []string) int {
	var tr ownTree
	if err := json.Unmarshal([]byte(args[0]), &tr); err != nil {
		fmt.Println(err)
		return 1
	}
	read := func(p string) error { _, err := os.ReadFile(p); return err }
	writeTo := func(p string) error { return os.WriteFile(p, []byte("forged"), 0o600) }
	wd, _ := os.Getwd()
	report("cwd "+wd, nil)
	report("env "+os.Getenv("OWN_PROBE_ENV"), nil)
	report("read remembered", errnoOf(read(tr.Remembered)))
	report("write remembered", errnoOf(writeTo(tr.Remembered)))
	report("create in state", errnoOf(writeTo(filepath.Join(tr.State, "new"))))
	report("write policy", errnoOf(writeTo(tr.Policy)))
	report("write policy relative", errnoOf(writeTo("bouncer.yaml")))
	report("write policy through link", errnoOf(writeTo(tr.Link)))
	report("truncate policy", errnoOf(os.Truncate(tr.Policy, 0)))
	report("read remembered through /proc/self/root", errnoOf(read("/proc/self/root"+tr.Remembered)))
	report("read remembered through /proc/outside/root", errnoOf(read(fmt.Sprintf("/proc/%d/root%s", tr.Outside, tr.Remembered))))
	report("read remembered through /proc/1/root", errnoOf(read("/proc/1/root"+tr.Remembered)))
	// The parent: the proxy in the landlock form (the same user, no
	// capabilities, the same user namespace), the launcher in the
	// namespace form.
	report("read remembered through /proc/parent/root", errnoOf(read(fmt.Sprintf("/proc/%d/root%s", os.Getppid(), tr.Remembered))))
	report("ptrace 1", errnoOf(ptraceAttach(1)))
	report("hard link policy", errnoOf(os.Link(tr.Policy, filepath.Join(tr.Proj, "src", "hl"))))
	report("write new in project", errnoOf(writeTo(filepath.Join(tr.Proj, "src", "new"))))
	report("remove link", errnoOf(os.Remove(tr.Link)))
	report("remove policy", errnoOf(os.Remove(tr.Policy)))
	report("rename state", errnoOf(os.Rename(tr.State, tr.State+".old")))
	report("rename project", errnoOf(os.Rename(tr.Proj, tr.Proj+".old")))
	report("rename home", errnoOf(os.Rename(tr.Home, tr.Home+".old")))
	b, _ := os.ReadFile("/proc/self/status")
	st := ""
	for _, l := range strings.Split(string(b), "\n") {
		for _, k := range []string{"CapEff:", "CapBnd:", "NoNewPrivs:"} {
			if strings.HasPrefix(l, k) {
				st += strings.Join(strings.Fields(l), " ") + ";"
			}
		}
	}
	report("status "+st, nil)
	return 0
}

// ownRun is how a test starts the proxy helper.
type ownRun struct {
	Form    string   // own_files
	Hidden  []string // OwnFiles
	RO      []string
	Dir     string
	Argv    []string // the server
	Expect2 bool     // the server exits 2 (for the status test)
	// Spawner starts the namespace form through a Spawner, as bouncer
	// listen does.
	Spawner bool
}

// spawner is ownProxy's, for a run with Spawner set.
var spawner Spawner

// execChild is an exec.Cmd started here, as ownProxy's child.
type execChild struct{ cmd *exec.Cmd }

func (c execChild) Pid() int                        { return c.cmd.Process.Pid }
func (c execChild) Signal(sig syscall.Signal) error { return syscall.Kill(-c.cmd.Process.Pid, sig) }
func (c execChild) Wait() error                     { return c.cmd.Wait() }

// ownProxy runs as the proxy: it starts the server (args[0], JSON) as
// bouncer run would, passes its stdio on, says the own-files note on
// stderr and exits with the server's status.
func ownProxy(args []string) int {
	var r ownRun
	if err := json.Unmarshal([]byte(args[0]), &r); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	form, err := ParseOwnForm(r.Form)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	l := Direct(r.Argv[0], r.Argv[1:])
	l.Guard(Guarding{Files: OwnFiles{Hidden: r.Hidden, ReadOnly: r.RO}, Max: form, Dir: r.Dir, Around: protect.Around})
	for {
		path, argv, setup, err := l.Command()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		cmd := exec.Command(path, argv...)
		cmd.Dir = r.Dir
		cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		if setup != nil {
			setup(cmd)
		}
		var child interface {
			Pid() int
			Signal(syscall.Signal) error
			Wait() error
		}
		if r.Spawner && l.Form() == OwnNamespace {
			var c *Child
			if c, err = spawner.Spawn(cmd); err == nil {
				child = c
			}
		} else if err = cmd.Start(); err == nil {
			child = execChild{cmd}
		}
		if err == nil {
			if err = l.Started(); err == nil {
				fmt.Fprintln(os.Stderr, "note:", l.OwnNote())
				fmt.Fprintln(os.Stderr, "pid:", child.Pid())
				go func() {
					// The test's SIGTERM goes on to the launcher's group,
					// as transport.Process.Stop sends it.
					ch := make(chan os.Signal, 1)
					signalNotify(ch)
					for s := range ch {
						_ = child.Signal(s.(syscall.Signal))
					}
				}()
				err = child.Wait()
				var ee interface{ ExitCode() int }
				if errors.As(err, &ee) {
					return ee.ExitCode()
				}
				if err != nil {
					fmt.Fprintln(os.Stderr, err)
					return 1
				}
				return 0
			}
			_ = child.Wait()
		} else {
			l.Abandon()
		}
		if !l.Fallback(err) {
			fmt.Fprintln(os.Stderr, "start:", err)
			return 1
		}
	}
}

// seccompProxy is ownProxy under the upstream's seccomp denylist.
func seccompProxy(args []string) int {
	info, err := nativeArch()
	if err == nil {
		var prog filter
		if prog, err = upstreamFilter(info, false, false); err == nil {
			err = loadFilter(prog)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return ownProxy(args)
}

// startOwn starts the proxy helper as uid (0: as we are) with the server
// argv; the caller reads its stdout and waits for it.
func startOwn(t *testing.T, uid int, r ownRun, env ...string) (*exec.Cmd, io.WriteCloser, *bufio.Reader, *syncbuf.Buffer) {
	t.Helper()
	exe := os.Args[0]
	if uid != 0 {
		exe = userCopy(t)
		for i, a := range r.Argv {
			if a == os.Args[0] {
				r.Argv[i] = exe
			}
		}
	}
	arg, _ := json.Marshal(r)
	cmd := exec.Command(exe, "own-proxy", string(arg))
	cmd.Env = append(os.Environ(), "OWN_PROBE_ENV=kept")
	if uid != 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
		cmd.Env = append(cmd.Env, "HOME=/nonexistent")
	}
	cmd.Env = append(cmd.Env, env...)
	stderr := &syncbuf.Buffer{}
	cmd.Stderr = stderr
	in, err := cmd.StdinPipe()
	must(t, err)
	out, err := cmd.StdoutPipe()
	must(t, err)
	must(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd, in, bufio.NewReader(out), stderr
}

func probeResults(t *testing.T, out *bufio.Reader) map[string]result {
	t.Helper()
	res := map[string]result{}
	for {
		line, err := out.ReadString('\n')
		if line != "" {
			var r result
			if json.Unmarshal([]byte(line), &r) != nil {
				t.Fatalf("probe said %q", line)
			}
			res[r.Name] = r
		}
		if err != nil {
			return res
		}
	}
}

// runOwn runs cmd to its end and reads the probe's results from its
// stdout; it returns them with its stderr.
func runOwn(t *testing.T, cmd *exec.Cmd) (map[string]result, string) {
	t.Helper()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v: %s", err, stderr.String())
	}
	t.Logf("%s\n%s", out, stderr.String())
	return probeResults(t, bufio.NewReader(strings.NewReader(string(out)))), stderr.String()
}

// needUserNamespaces fails or skips where user namespaces are refused.
func needUserNamespaces(t *testing.T) {
	t.Helper()
	if why := formUnavailable(OwnNamespace); why != "" {
		need.Missing(t, "user namespaces ("+why+")", "a kernel and sysctls that allow them (user.max_user_namespaces > 0)")
	}
	if Probe().LandlockABI < 3 {
		need.Missing(t, "Landlock ABI 3", "a Linux 6.2 or newer kernel with Landlock enabled")
	}
}

// TestOwnFormsHold runs the same attacks in each form, as root and as
// another user, and checks what each form refuses, with which error, and
// that the server's working directory, environment and capabilities are as
// they should be.
func TestOwnFormsHold(t *testing.T) {
	needUserNamespaces(t)
	const (
		enoent = int(syscall.ENOENT)
		erofs  = int(syscall.EROFS)
		ebusy  = int(syscall.EBUSY)
		exdev  = int(syscall.EXDEV)
		eacces = int(syscall.EACCES)
		eperm  = int(syscall.EPERM)
	)
	// errno per attack and form: namespace, landlock; -1 is "any error".
	want := map[string][2]int{
		"read remembered":                            {enoent, eacces},
		"write remembered":                           {erofs, eacces},
		"create in state":                            {erofs, eacces},
		"write policy":                               {erofs, eacces},
		"write policy relative":                      {erofs, eacces},
		"write policy through link":                  {erofs, eacces},
		"truncate policy":                            {erofs, eacces},
		"read remembered through /proc/self/root":    {enoent, eacces},
		"read remembered through /proc/outside/root": {enoent, eacces},
		"read remembered through /proc/1/root":       {eacces, eacces},
		"read remembered through /proc/parent/root":  {eacces, eacces},
		"ptrace 1":                                   {eperm, eperm},
		"hard link policy":                           {exdev, exdev},
		"remove link":                                {ebusy, eacces},
		"remove policy":                              {ebusy, eacces},
		"rename state":                               {ebusy, eacces},
		"rename project":                             {ebusy, eacces},
		"rename home":                                {ebusy, eacces},
	}
	// Through the spawner, /proc is the spawner's, which lists only the
	// processes the server may trace: neither the spawner (its PID 1) nor
	// the server's parent, which is outside its namespace.
	spawnerWant := map[string]int{
		"read remembered through /proc/1/root":      enoent,
		"read remembered through /proc/parent/root": enoent,
	}
	for _, uid := range []int{0, 65534} {
		for _, run := range []struct {
			form    string
			i       int // want's column
			spawner bool
		}{{"namespace", 0, false}, {"namespace", 0, true}, {"landlock", 1, false}, {"arguments", -1, false}} {
			form, i := run.form, run.i
			name := fmt.Sprintf("uid=%d/%s", uid, form)
			if run.spawner {
				name += "/spawner"
			}
			t.Run(name, func(t *testing.T) {
				tr := newOwnTree(t, uid)
				arg, _ := json.Marshal(tr)
				_, in, out, stderr := startOwn(t, uid, ownRun{Form: form, Hidden: []string{tr.State}, RO: []string{tr.Policy, tr.Link},
					Dir: tr.Proj, Argv: []string{os.Args[0], "own-probe", string(arg)}, Spawner: run.spawner})
				in.Close()
				res := probeResults(t, out)
				t.Logf("%s", stderr)
				if _, ok := res["cwd "+tr.Proj]; !ok {
					t.Errorf("the working directory changed: %v", res)
				}
				if _, ok := res["env kept"]; !ok {
					t.Errorf("the environment changed: %v", res)
				}
				for name, errs := range want {
					r, ok := res[name]
					switch {
					case !ok:
						t.Errorf("%s: no result", name)
					case form == "arguments" && r.No != 0 && name != "ptrace 1" && !strings.Contains(name, "/proc/1/") && !strings.Contains(name, "outside") && !(uid == 0 && strings.Contains(name, "parent")):
						// The baseline: nothing in the kernel refuses.
						t.Errorf("%s: %s (with the argument checks alone, the kernel refuses nothing)", name, r.Err)
					case form == "arguments":
					case run.spawner && spawnerWant[name] != 0:
						if r.No != spawnerWant[name] {
							t.Errorf("%s: got %q (errno %d), want errno %d", name, r.Err, r.No, spawnerWant[name])
						}
					case r.No != errs[i]:
						t.Errorf("%s: got %q (errno %d), want errno %d", name, r.Err, r.No, errs[i])
					}
				}
				if form == "arguments" {
					return
				}
				tr.unchanged(t)
				if _, ok := res["status CapEff: 0000000000000000;CapBnd: 0000000000000000;NoNewPrivs: 1;"]; form == "namespace" && !ok {
					t.Errorf("the server keeps capabilities: %v", res)
				}
				if r := res["write new in project"]; form == "namespace" && r.Err != "" {
					t.Errorf("the server can't write beside the policy: %s", r.Err)
				}
				if note := stderr.String(); !strings.Contains(note, "note: own files: "+formName(mustForm(form))) {
					t.Errorf("note: %s", note)
				}
			})
		}
	}
}

func signalNotify(ch chan os.Signal) { signal.Notify(ch, syscall.SIGTERM, syscall.SIGINT) }

func mustForm(s string) OwnForm {
	f, _ := ParseOwnForm(s)
	return f
}

// exitProbe runs as the server in TestOwnInit: "exit N" exits with N;
// "orphan FILE" starts a sleeper that outlives it, writes the sleeper's
// PID (as the namespace sees it: the test looks for its command line) to
// FILE and exits 0; "term" echoes stdin to stdout until it is signalled.
func exitProbe(args []string) int {
	switch args[0] {
	case "exit":
		n, _ := strconv.Atoi(args[1])
		return n
	case "orphan":
		cmd := exec.Command("sleep", "313.25")
		if err := cmd.Start(); err != nil {
			return 1
		}
		_ = os.WriteFile(args[1], []byte(strconv.Itoa(cmd.Process.Pid)), 0o600)
		return 0
	case "procs":
		// What /proc lists, and which of it is this process.
		ents, _ := os.ReadDir("/proc")
		var pids []string
		for _, e := range ents {
			if _, err := strconv.Atoi(e.Name()); err == nil {
				pids = append(pids, e.Name())
			}
		}
		self, _ := os.Readlink("/proc/self")
		fmt.Printf("self %s procs %s\n", self, strings.Join(pids, ","))
		return 0
	case "echo":
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			fmt.Println("echo " + sc.Text())
		}
		return 0
	}
	return 99
}

// TestOwnInit: in the namespace form the launcher is the PID namespace's
// init. The server's exit status, its stdio, a SIGTERM sent to the
// launcher's process group (as transport.Process.Stop sends it) and an
// orphan it leaves behind are all handled as if there were no launcher.
//
// Through the spawner (bouncer listen) the server is itself its PID
// namespace's init, with the same results but one: the kernel gives an
// init no signal it has no handler for, so a Go server's runtime, whose
// handler re-raises SIGTERM, gives up and exits 2; a server with no
// handler at all waits for Stop's SIGKILL.
func TestOwnInit(t *testing.T) {
	needUserNamespaces(t)
	for _, spawned := range []bool{false, true} {
		name := "launcher"
		if spawned {
			name = "spawner"
		}
		t.Run(name, func(t *testing.T) { testOwnInit(t, spawned) })
	}
}

func testOwnInit(t *testing.T, spawned bool) {
	tr := newOwnTree(t, 0)
	run := func(argv ...string) ownRun {
		return ownRun{Form: "namespace", Hidden: []string{tr.State}, RO: []string{tr.Policy}, Dir: tr.Proj,
			Argv: append([]string{os.Args[0], "exit-probe"}, argv...), Spawner: spawned}
	}
	t.Run("exit status", func(t *testing.T) {
		cmd, in, _, stderr := startOwn(t, 0, run("exit", "7"))
		in.Close()
		err := cmd.Wait()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 7 {
			t.Errorf("exit: %v, want status 7; %s", err, stderr)
		}
	})
	t.Run("stdio", func(t *testing.T) {
		cmd, in, out, stderr := startOwn(t, 0, run("echo"))
		fmt.Fprintln(in, "hello")
		if l, err := out.ReadString('\n'); err != nil || l != "echo hello\n" {
			t.Errorf("got %q, %v; %s", l, err, stderr)
		}
		in.Close() // EOF reaches the server, which exits
		if err := cmd.Wait(); err != nil {
			t.Errorf("exit: %v; %s", err, stderr)
		}
	})
	t.Run("SIGTERM", func(t *testing.T) {
		cmd, in, out, stderr := startOwn(t, 0, run("echo"))
		defer in.Close()
		fmt.Fprintln(in, "x")
		if _, err := out.ReadString('\n'); err != nil {
			t.Fatal(err)
		}
		// The server has no handler: as the namespace's PID 1 it would
		// ignore SIGTERM; as the init's child it dies of it.
		must(t, cmd.Process.Signal(syscall.SIGTERM))
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			want := 128 + int(syscall.SIGTERM)
			if spawned {
				want = 2
			}
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != want {
				t.Errorf("exit: %v, want status %d; %s", err, want, stderr)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("SIGTERM did not stop the server; %s", stderr)
		}
	})
	t.Run("orphan", func(t *testing.T) {
		pidFile := filepath.Join(tr.Proj, "src", "orphan")
		cmd, in, _, stderr := startOwn(t, 0, run("orphan", pidFile))
		in.Close()
		if err := cmd.Wait(); err != nil {
			t.Fatalf("exit: %v; %s", err, stderr)
		}
		// The sleeper died with the namespace.
		deadline := time.Now().Add(5 * time.Second)
		for {
			out, _ := exec.Command("pgrep", "-f", "^sleep 313.25$").Output()
			if len(strings.TrimSpace(string(out))) == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the orphan outlived the server: %s", out)
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
}

// TestOwnFallback: a form that can't be set up gives way to the next,
// and the note says why.
func TestOwnFallback(t *testing.T) {
	needUserNamespaces(t)
	tr := newOwnTree(t, 0)
	arg, _ := json.Marshal(tr)
	probe := []string{os.Args[0], "own-probe", string(arg)}
	t.Run("a path that does not exist", func(t *testing.T) {
		missing := filepath.Join(tr.Proj, "mail.yaml")
		_, in, out, stderr := startOwn(t, 0, ownRun{Form: "namespace", Hidden: []string{tr.State}, RO: []string{tr.Policy, tr.Link, missing},
			Dir: tr.Proj, Argv: probe})
		in.Close()
		probeResults(t, out)
		if note := stderr.String(); !strings.Contains(note, "note: own files: mount namespace (state directory hidden, 3 paths read-only); not mounted over, left to the argument checks as they don't exist: "+missing+"\n") {
			t.Errorf("note: %s", note)
		}
		if _, err := os.Lstat(missing); err == nil {
			t.Errorf("%s was made on disk", missing)
		}
	})
	for _, spawned := range []bool{false, true} {
		name := "a mount fails"
		if spawned {
			name += ", through the spawner"
		}
		t.Run(name, func(t *testing.T) {
			// The state directory is a file here: the launcher (or the
			// spawner) can't cover it with a tmpfs, says so and starts
			// nothing; the landlock form holds.
			_, in, out, stderr := startOwn(t, 0, ownRun{Form: "namespace", Hidden: []string{tr.Remembered}, RO: []string{tr.Policy},
				Dir: tr.Proj, Argv: probe, Spawner: spawned})
			in.Close()
			res := probeResults(t, out)
			note := stderr.String()
			if !strings.Contains(note, "note: own files: landlock around 2 paths (state directory hidden, 1 path read-only): mount namespace refused: mount hidden "+tr.Remembered+": the state directory is not a directory") {
				t.Errorf("note: %s", note)
			}
			if r := res["read remembered"]; r.No != int(syscall.EACCES) {
				t.Errorf("read remembered: %+v", r)
			}
			tr.unchanged(t)
		})
	}
	t.Run("a container that refuses mount", func(t *testing.T) {
		// The proxy runs under the upstream's seccomp denylist, which
		// refuses mount(2) but not clone(CLONE_NEWUSER): the launcher's
		// namespace is made, its first mount fails, and it says so.
		r := ownRun{Form: "namespace", Hidden: []string{tr.State}, RO: []string{tr.Policy}, Dir: tr.Proj, Argv: probe}
		b, _ := json.Marshal(r)
		res, stderr := runOwn(t, exec.Command(os.Args[0], "seccomp-proxy", string(b)))
		if !strings.Contains(stderr, "note: own files: landlock around 2 paths (state directory hidden, 1 path read-only): mount namespace refused: mount namespace: operation not permitted") {
			t.Errorf("note: %s", stderr)
		}
		if r := res["write policy"]; r.No != int(syscall.EACCES) {
			t.Errorf("write policy: %+v", r)
		}
		tr.unchanged(t)
	})
	for _, tc := range []struct {
		name, limit, why string
	}{
		{"switched off", "echo 0 >/proc/sys/user/max_user_namespaces", "mount namespace refused: user namespaces are switched off (user.max_user_namespaces is 0)"},
		// One namespace left, and taken: only trying shows it.
		{"refused when tried", "echo 1 >/proc/sys/user/max_user_namespaces; unshare -U sleep 30 >/dev/null 2>&1 & sleep 0.5", "mount namespace refused: fork/exec /proc/self/exe: no space left on device"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			need.Program(t, "unshare", "install util-linux")
			r := ownRun{Form: "namespace", Hidden: []string{tr.State}, RO: []string{tr.Policy}, Dir: tr.Proj, Argv: probe}
			b, _ := json.Marshal(r)
			// The proxy runs in a user namespace of its own, whose limit
			// it may set.
			res, stderr := runOwn(t, exec.Command("unshare", "-Ur", "sh", "-c", tc.limit+`; exec "$0" own-proxy "$1"`, os.Args[0], string(b)))
			if !strings.Contains(stderr, "note: own files: landlock around ") || !strings.Contains(stderr, tc.why) {
				t.Errorf("note: %s", stderr)
			}
			if r := res["write policy"]; r.No != int(syscall.EACCES) {
				t.Errorf("write policy: %+v", r)
			}
			tr.unchanged(t)
		})
	}
}

// bareProbe runs as a server in new user and mount namespaces (and a new
// PID namespace when args[1] says "pid") set up by mountOwn alone, with no
// capabilities and, when args[2] says "landlock", the init's Landlock
// domain: it measures what keeps it from another process's /proc/PID/root
// and from undoing the mounts in a nested user namespace.
func bareProbe(args []string) int {
	var tr ownTree
	if err := json.Unmarshal([]byte(args[0]), &tr); err != nil {
		fmt.Println(err)
		return 1
	}
	st, err := mountOwn(ownPlan{Form: "namespace", Hidden: []string{tr.State}, ReadOnly: []string{tr.Policy}, Dir: tr.Proj})
	report("mounts "+st.Proc, err)
	runtime.LockOSThread()
	report("drop capabilities", dropCapabilities())
	if args[2] == "landlock" {
		report("landlock", threadLandlock())
	}
	_, err = os.ReadFile(fmt.Sprintf("/proc/%d/root%s", tr.Outside, tr.Remembered))
	report("read remembered through /proc/outside/root", errnoOf(err))
	py := `
import ctypes, json, os, sys
libc = ctypes.CDLL(None, use_errno=True)
state, home, pol, work = sys.argv[1:5]
uid, gid = os.getuid(), os.getgid()
def report(name, rc):
    e = ctypes.get_errno() if rc != 0 else 0
    print(json.dumps({"name": name, "err": os.strerror(e) if e else "", "errno": e}), flush=True)
report("nested unshare", libc.unshare(0x10000000 | 0x00020000))
open("/proc/self/setgroups", "w").write("deny")
open("/proc/self/uid_map", "w").write("0 %d 1" % uid)
open("/proc/self/gid_map", "w").write("0 %d 1" % gid)
report("nested umount state", libc.umount2(state.encode(), 2))
report("nested umount policy", libc.umount2(pol.encode(), 2))
report("nested remount policy rw", libc.mount(None, pol.encode(), None, 4096 | 32, None))
mnt = work + "/mnt"
report("nested bind home without what is below", libc.mount(home.encode(), mnt.encode(), None, 4096, None))
report("nested overlay on home", libc.mount(b"overlay", mnt.encode(), b"overlay", 0, ("lowerdir=%s,upperdir=%s/u,workdir=%s/w" % (home, work, work)).encode()))
try:
    open(pol, "w").write("forged"); report("nested write policy", 0)
except OSError as e:
    ctypes.set_errno(e.errno); report("nested write policy", -1)
`
	work := filepath.Join(tr.Proj, "src")
	for _, d := range []string{"mnt", "u", "w"} {
		_ = os.Mkdir(filepath.Join(work, d), 0o755)
	}
	cmd := exec.Command("python3", "-c", py, tr.State, tr.Home, tr.Policy, work)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	report("python", cmd.Run())
	return 0
}

// bareProxy runs as a user other than root (whose processes hold
// capabilities, which alone keep a capless server out of their /proc
// entries): it starts bareProbe in the namespaces the launcher gets
// (args[1] "pid" or not) and passes on what it says, with its own PID as
// the outside process.
func bareProxy(args []string) int {
	var tr ownTree
	if err := json.Unmarshal([]byte(args[0]), &tr); err != nil {
		fmt.Println(err)
		return 1
	}
	tr.Outside = os.Getpid()
	b, _ := json.Marshal(tr)
	cmd := exec.Command("/proc/self/exe", "bare-probe", string(b), args[1], args[2])
	cmd.Dir = tr.Proj
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	namespaceAttrs(cmd)
	if args[1] != "pid" {
		cmd.SysProcAttr.Cloneflags &^= syscall.CLONE_NEWPID
	}
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// TestOwnNamespaceMeasured measures, part by part, what keeps a server in
// the mount namespace off the own files, as a user other than root (whose
// processes hold capabilities, which alone keep a capless server out of
// their /proc entries). Another process's /proc/PID/root (the proxy's, the
// client's) would lead past every mount; three things refuse it, each on
// its own: the user namespace (the kernel lets a process in another user
// namespace into a process's /proc/PID/root only with CAP_SYS_PTRACE over
// the target's: EACCES though the user IDs match), a PID namespace with a
// /proc of its own (the process is not there: ENOENT), and the init's
// Landlock domain (EACCES). In a nested user namespace, where the server
// has every capability, the mounts it was given are locked: unmounting
// them, making one writable, binding the home directory without them or
// laying an overlay over it fails, even with no Landlock domain to refuse
// mounting at all.
func TestOwnNamespaceMeasured(t *testing.T) {
	needUserNamespaces(t)
	need.Program(t, "python3", "install Python 3")
	const uid = 65534
	for _, tc := range []struct {
		pid, landlock string
		outside       int // errno reading the outside process's root
	}{
		{"nopid", "none", int(syscall.EACCES)}, // the user namespace alone
		{"nopid", "landlock", int(syscall.EACCES)},
		{"pid", "none", int(syscall.ENOENT)},
	} {
		t.Run(tc.pid+"/"+tc.landlock, func(t *testing.T) {
			tr := newOwnTree(t, uid)
			arg, _ := json.Marshal(tr)
			exe := userCopy(t)
			cmd := exec.Command(exe, "bare-proxy", string(arg), tc.pid, tc.landlock)
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid}}
			res, _ := runOwn(t, cmd)
			r := res["read remembered through /proc/outside/root"]
			if r.No != tc.outside {
				t.Errorf("/proc/outside/root: %+v, want errno %d", r, tc.outside)
			}
			for name, want := range map[string]syscall.Errno{
				"nested unshare":                         0,
				"nested umount state":                    syscall.EINVAL, // locked
				"nested umount policy":                   syscall.EINVAL,
				"nested remount policy rw":               syscall.EPERM, // locked read-only
				"nested bind home without what is below": syscall.EINVAL,
				"nested overlay on home":                 syscall.EINVAL,
				"nested write policy":                    syscall.EROFS,
			} {
				if tc.landlock == "landlock" && (strings.Contains(name, "bind") || strings.Contains(name, "overlay")) {
					want = syscall.EPERM // Landlock refuses every mount first
				}
				if r := res[name]; r.No != int(want) {
					t.Errorf("%s: %+v, want errno %d", name, r, want)
				}
			}
			tr.unchanged(t)
		})
	}
}

// userCopy is a copy of the test binary that another user can run (the
// test binary's directory is ours alone).
func userCopy(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	must(t, os.Chmod(dir, 0o755))
	must(t, os.Chmod(filepath.Dir(dir), 0o755))
	b, err := os.ReadFile(os.Args[0])
	must(t, err)
	exe := filepath.Join(dir, "sandbox.test")
	must(t, os.WriteFile(exe, b, 0o755))
	return exe
}

// TestOwnSecondView: where the home directory is mounted at a second place
// too, the namespace covers the own files there as well.
func TestOwnSecondView(t *testing.T) {
	needUserNamespaces(t)
	need.Program(t, "unshare", "install util-linux")
	tr := newOwnTree(t, 0)
	view := filepath.Join(filepath.Dir(tr.Home), "view")
	must(t, os.Mkdir(view, 0o755))
	alias := ownTree{Home: view, State: filepath.Join(view, ".bouncer"), Proj: filepath.Join(view, "proj"), Policy: filepath.Join(view, "proj", "bouncer.yaml"),
		Link: filepath.Join(view, "policy-link.yaml"), Remembered: filepath.Join(view, ".bouncer", "remembered.json"), Outside: tr.Outside}
	arg, _ := json.Marshal(alias) // the probe attacks the second view
	r := ownRun{Form: "namespace", Hidden: []string{tr.State}, RO: []string{tr.Policy, tr.Link}, Dir: tr.Proj, Argv: []string{os.Args[0], "own-probe", string(arg)}}
	b, _ := json.Marshal(r)
	// The second view exists only in a mount namespace of the test's own.
	res, _ := runOwn(t, exec.Command("unshare", "-m", "--propagation", "private", "sh", "-c", `mount --bind "$2" "$3" && exec "$0" own-proxy "$1"`, os.Args[0], string(b), tr.Home, view))
	for name, want := range map[string]syscall.Errno{
		"read remembered":  syscall.ENOENT,
		"write remembered": syscall.EROFS,
		"write policy":     syscall.EROFS,
		"rename project":   syscall.EBUSY,
		"remove link":      syscall.EBUSY,
		"rename home":      syscall.EBUSY,
	} {
		if r := res[name]; r.No != int(want) {
			t.Errorf("through the second view, %s: %+v, want errno %d", name, r, want)
		}
	}
	tr.unchanged(t)
}

// TestOwnGitOverSSH: git over ssh, as a user other than root, works in the
// namespace, where other users' files (root's /etc/ssh/ssh_config) show the
// overflow ID: ssh checks the owner of the user's own ~/.ssh/config only.
func TestOwnGitOverSSH(t *testing.T) {
	needUserNamespaces(t)
	sshd := need.Program(t, "sshd", "apt-get install openssh-server", "/usr/sbin/sshd")
	need.Program(t, "git", "apt-get install git")
	need.Program(t, "ssh", "apt-get install openssh-client")
	const uid = 1 // daemon: a user with a passwd entry, as ssh needs, whose ID is not the overflow ID
	dir := t.TempDir()
	must(t, os.Chmod(dir, 0o755))
	must(t, os.Chmod(filepath.Dir(dir), 0o755))
	run := func(name string, args ...string) {
		t.Helper()
		if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
	}
	run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", dir+"/host")
	run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", dir+"/user")
	run("git", "init", "-q", "--bare", dir+"/repo.git")
	run("git", "-C", dir+"/repo.git", "symbolic-ref", "HEAD", "refs/heads/main")
	work := dir + "/work"
	must(t, os.MkdirAll(work, 0o755))
	pub, _ := os.ReadFile(dir + "/user.pub")
	must(t, os.WriteFile(dir+"/authorized_keys", pub, 0o600))
	host, _ := os.ReadFile(dir + "/host.pub")
	port := freePort(t)
	must(t, os.WriteFile(dir+"/known_hosts", []byte(fmt.Sprintf("[127.0.0.1]:%d %s", port, host)), 0o644))
	must(t, os.WriteFile(dir+"/sshd_config", []byte(fmt.Sprintf(`Port %d
ListenAddress 127.0.0.1
HostKey %s/host
AuthorizedKeysFile %s/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
StrictModes no
UsePAM no
PidFile none
`, port, dir, dir)), 0o600))
	_ = os.MkdirAll("/run/sshd", 0o755)
	d := exec.Command(sshd, "-D", "-e", "-f", dir+"/sshd_config")
	var log strings.Builder
	d.Stderr = &log
	must(t, d.Start())
	t.Cleanup(func() { _ = d.Process.Kill(); _ = d.Wait() })
	for i := 0; ; i++ {
		if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			c.Close()
			break
		}
		if i == 100 {
			t.Fatalf("sshd did not listen: %s", log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	must(t, filepath.Walk(work, func(p string, _ os.FileInfo, err error) error { return os.Lchown(p, uid, uid) }))
	must(t, os.Chown(dir+"/user", uid, uid))
	url := fmt.Sprintf("ssh://root@127.0.0.1:%d%s/repo.git", port, dir)
	sshCmd := "GIT_SSH_COMMAND=ssh -i " + dir + "/user -o UserKnownHostsFile=" + dir + "/known_hosts -o BatchMode=yes"
	cmd, in, out, stderr := startOwn(t, uid, ownRun{Form: "namespace", Hidden: []string{dir + "/state"}, Dir: work,
		Argv: []string{"/usr/bin/env", "sh", "-c", "stat -c %u /etc/ssh/ssh_config && git clone -q " + url + " clone"}}, sshCmd)
	in.Close()
	owner, _ := io.ReadAll(out)
	if string(owner) != "65534\n" {
		t.Errorf("root's /etc/ssh/ssh_config shows owner %q in the namespace, want the overflow ID 65534", owner)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("git clone in the namespace: %v\n%s\nsshd: %s", err, stderr, log.String())
	}
	if !strings.Contains(stderr.String(), "note: own files: mount namespace") {
		t.Errorf("not in the namespace: %s", stderr)
	}
	if _, err := os.Stat(work + "/clone/.git"); err != nil {
		t.Errorf("no clone: %v\n%s", err, stderr)
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
