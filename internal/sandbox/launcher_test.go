//go:build linux

package sandbox

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/bouncer-mcp/bouncer/internal/testsupport/need"
)

// upstreamProbe runs as the confined server: args are the workspace, an
// outside directory, a denied file, the allowed and the denied TCP port.
func upstreamProbe(args []string) int {
	ws, outside, denied, okPort, badPort := args[0], args[1], args[2], args[3], args[4]
	report("write inside", os.WriteFile(filepath.Join(ws, "in.txt"), []byte("x"), 0o600))
	report("mkdir inside", os.MkdirAll(filepath.Join(ws, "sub", "deeper"), 0o700))
	report("rename inside", os.Rename(filepath.Join(ws, "in.txt"), filepath.Join(ws, "sub", "in.txt")))
	report("write outside", errnoOf(os.WriteFile(filepath.Join(outside, "out.txt"), []byte("x"), 0o600)))
	_, err := os.ReadFile(denied)
	report("read denied", errnoOf(err))
	_, err = os.ReadFile("/etc/hostname")
	report("read /etc", err)
	report("tcp allowed port", errnoOf(dialRaw(unix.AF_INET, 0, okPort)))
	report("tcp denied port", errnoOf(dialRaw(unix.AF_INET, 0, badPort)))
	report("mptcp", errnoOf(dialRaw(unix.AF_INET, ipprotoMPTCP, okPort)))
	report("mptcp high bits", errnoOf(socketRaw(unix.AF_INET, unix.SOCK_STREAM, 1<<32|ipprotoMPTCP)))
	report("ptrace", errnoOf(ptraceAttach(os.Getppid())))
	report("signal parent", errnoOf(syscall.Kill(os.Getppid(), 0)))
	_, err = os.ReadFile(fmt.Sprintf("/proc/%d/environ", os.Getppid()))
	report("read parent environ", errnoOf(err))
	_, err = os.ReadFile("/proc/thread-self/status")
	report("read thread-self", err)
	report("exec system", errnoOf(exec.Command("/bin/true").Run()))
	report("exec outside", errnoOf(exec.Command(filepath.Join(outside, "true")).Run()))
	b, err := os.ReadFile("/proc/self/status")
	st := ""
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "Seccomp:") || strings.HasPrefix(l, "NoNewPrivs:") {
			st += strings.Join(strings.Fields(l), " ") + ";"
		}
	}
	report("status "+st, err)
	return 0
}

func runLauncher(t *testing.T, c Confinement, args ...string) map[string]result {
	t.Helper()
	l, err := LauncherArgs(Strict, c, os.Args[0], append([]string{"upstream-probe"}, args...), "")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s", l)
	out, err := exec.Command(l.Path, l.Args...).Output()
	if err != nil {
		t.Fatalf("launcher: %v\n%s", err, out)
	}
	res := map[string]result{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var r result
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("probe said %q", line)
		}
		res[r.Name] = r
	}
	return res
}

func TestLauncherConfinesUpstream(t *testing.T) {
	needKernel(t)
	d := setup(t)
	ws := t.TempDir()
	bad := setup(t) // a second listener whose port is not allowed
	copyFile(t, "/bin/true", filepath.Join(d.outside, "true"))
	var port int
	fmt.Sscan(d.port, &port)
	res := runLauncher(t, Confinement{ReadWrite: []string{ws}, ConnectTCP: []int{port}},
		ws, d.outside, d.denied, d.port, bad.port)
	want(t, res, "write inside", 0)
	want(t, res, "mkdir inside", 0)
	want(t, res, "rename inside", 0)
	want(t, res, "write outside", unix.EACCES)
	want(t, res, "read denied", unix.EACCES)
	want(t, res, "read /etc", 0)
	want(t, res, "tcp allowed port", 0)
	want(t, res, "tcp denied port", unix.EACCES)
	want(t, res, "mptcp", unix.EPERM)
	want(t, res, "mptcp high bits", unix.EPERM)
	want(t, res, "ptrace", unix.EPERM)
	want(t, res, "signal parent", unix.EPERM)
	want(t, res, "read parent environ", unix.EACCES)
	want(t, res, "read thread-self", 0)
	want(t, res, "exec system", 0)
	want(t, res, "exec outside", unix.EACCES)
	if _, ok := res["status NoNewPrivs: 1;Seccomp: 2;"]; !ok {
		t.Errorf("status: %v", res)
	}
	if _, err := os.Stat(filepath.Join(ws, "sub", "in.txt")); err != nil {
		t.Errorf("the write inside did not land: %v", err)
	}
	if _, err := os.Stat(filepath.Join(d.outside, "out.txt")); err == nil {
		t.Error("the write outside landed")
	}
}

// TestLauncherNoPorts: with no connect_tcp the server cannot even create
// an IP socket (UDP included, which Landlock does not cover below ABI 10).
func TestLauncherNoPorts(t *testing.T) {
	needKernel(t)
	d := setup(t)
	res := runLauncher(t, Confinement{ReadWrite: []string{t.TempDir()}},
		t.TempDir(), d.outside, d.denied, d.port, d.port)
	want(t, res, "tcp allowed port", unix.EPERM)
	want(t, res, "tcp denied port", unix.EPERM)
}

func TestLauncherArgsErrors(t *testing.T) {
	cases := []struct {
		name string
		c    Confinement
		want string
	}{
		{"relative", Confinement{ReadWrite: []string{"ws"}, Source: "p.yaml:3"}, `p.yaml:3: sandbox.read_write: "ws" is not an absolute path`},
		{"missing", Confinement{ReadOnly: []string{"/nonexistent/x"}}, `sandbox.read_only: "/nonexistent/x": no such file or directory`},
		{"port", Confinement{ConnectTCP: []int{70000}}, "sandbox.connect_tcp: port 70000 is out of range"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LauncherArgs(Auto, tc.c, "/bin/true", nil, "")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}

func TestLauncherPlanPaths(t *testing.T) {
	root := t.TempDir()
	mod := filepath.Join(root, "proj", "node_modules", "@scope", "srv", "dist")
	venv := filepath.Join(root, "venv")
	for _, d := range []string{mod, filepath.Join(venv, "bin")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	script := filepath.Join(mod, "index.js")
	os.WriteFile(script, []byte("//"), 0o644)
	os.WriteFile(filepath.Join(venv, "pyvenv.cfg"), []byte("home = /usr/bin\n"), 0o644)
	entry := filepath.Join(venv, "bin", "srv")
	os.WriteFile(entry, []byte("#!"+filepath.Join(venv, "bin", "python")+"\n"), 0o755)
	lone := filepath.Join(root, "home", "server.py")
	os.MkdirAll(filepath.Dir(lone), 0o755)
	os.WriteFile(lone, []byte("#"), 0o644)

	l, err := LauncherArgs(Auto, Confinement{}, "/usr/bin/node", []string{"--flag", script, "https://x.example/y"}, "")
	if err != nil {
		t.Fatal(err)
	}
	has(t, l.plan.Read, filepath.Join(root, "proj", "node_modules"), true)
	has(t, l.plan.Read, filepath.Join(root, "proj"), false)

	l, err = LauncherArgs(Auto, Confinement{}, entry, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	has(t, l.plan.Exec, venv, true) // the venv's lib/ and pyvenv.cfg

	l, err = LauncherArgs(Auto, Confinement{}, "/usr/bin/python3", []string{lone}, "")
	if err != nil {
		t.Fatal(err)
	}
	has(t, l.plan.Read, lone, true)
	has(t, l.plan.Read, filepath.Dir(lone), false) // not the whole home directory
	for _, p := range append(l.plan.Read, l.plan.Exec...) {
		if p == "/tmp" || p == "/" || p == os.Getenv("HOME") {
			t.Errorf("plan grants %s", p)
		}
	}
}

func has(t *testing.T, list []string, p string, want bool) {
	t.Helper()
	for _, x := range list {
		if x == p {
			if !want {
				t.Errorf("%s granted, should not be: %v", p, list)
			}
			return
		}
	}
	if want {
		t.Errorf("%s not granted: %v", p, list)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o755); err != nil {
		t.Fatal(err)
	}
}

// TestFilesystemServerConfined runs the npm reference filesystem server
// through the launcher. It is told that two directories are allowed, but
// the sandbox lists only one: a write to the other is refused by the
// kernel (EACCES), which is how a policy's allowed_path_prefixes can be
// backed by Landlock.
func TestFilesystemServerConfined(t *testing.T) {
	needKernel(t)
	server := need.NPM(t, "@modelcontextprotocol/server-filesystem/dist/index.js")
	node := need.Node(t)
	ws, other := t.TempDir(), t.TempDir()
	l, err := LauncherArgs(Strict, Confinement{ReadWrite: []string{ws}}, node, []string{server, ws, other}, "")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(l.Path, l.Args...)
	in, _ := cmd.StdinPipe()
	outp, _ := cmd.StdoutPipe()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { in.Close(); cmd.Wait() }()
	rd := bufio.NewReader(outp)
	call := func(id int, method string, params any) map[string]any {
		t.Helper()
		msg := map[string]any{"jsonrpc": "2.0", "method": method, "params": params}
		if id > 0 {
			msg["id"] = id
		}
		b, _ := json.Marshal(msg)
		if _, err := in.Write(append(b, '\n')); err != nil {
			t.Fatal(err)
		}
		if id == 0 {
			return nil
		}
		type line struct {
			s   string
			err error
		}
		ch := make(chan line, 1)
		go func() { s, err := rd.ReadString('\n'); ch <- line{s, err} }()
		select {
		case l := <-ch:
			if l.err != nil && l.err != io.EOF {
				t.Fatalf("read: %v; stderr: %s", l.err, stderr.String())
			}
			var m map[string]any
			if err := json.Unmarshal([]byte(l.s), &m); err != nil {
				t.Fatalf("server said %q (%v); stderr: %s", l.s, err, stderr.String())
			}
			return m
		case <-time.After(30 * time.Second):
			t.Fatalf("no answer; stderr: %s", stderr.String())
		}
		return nil
	}
	call(1, "initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "t", "version": "1"}})
	call(0, "notifications/initialized", map[string]any{})
	write := func(id int, path string) string {
		r := call(id, "tools/call", map[string]any{"name": "write_file", "arguments": map[string]any{"path": path, "content": "hello"}})
		b, _ := json.Marshal(r["result"])
		return string(b)
	}
	if got := write(2, filepath.Join(ws, "ok.txt")); strings.Contains(got, `"isError":true`) {
		t.Errorf("write inside the sandbox failed: %s", got)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "ok.txt")); err != nil || string(b) != "hello" {
		t.Errorf("inside file: %q %v", b, err)
	}
	got := write(3, filepath.Join(other, "no.txt"))
	if !strings.Contains(got, `"isError":true`) || !strings.Contains(got, "EACCES") {
		t.Errorf("write outside the sandbox: want the kernel's EACCES, got %s", got)
	}
	if _, err := os.Stat(filepath.Join(other, "no.txt")); err == nil {
		t.Error("the write outside the sandbox landed")
	}
}

// TestPlanRoundTrip: what LauncherArgs encodes, the launcher decodes.
func TestPlanRoundTrip(t *testing.T) {
	ws := t.TempDir()
	l, err := LauncherArgs(Auto, Confinement{ReadWrite: []string{ws}, ConnectTCP: []int{443}}, "/bin/true", []string{"a"}, "")
	if err != nil {
		t.Fatal(err)
	}
	if l.Args[0] != LauncherName || l.Args[2] != "--" || l.Args[3] != "/bin/true" || l.Args[4] != "a" {
		t.Fatalf("args %q", l.Args)
	}
	p, err := decodePlan(l.Args[1])
	if err != nil {
		t.Fatal(err)
	}
	has(t, p.Write, ws, true)
	has(t, p.Write, "/dev/null", true)
	if len(p.TCP) != 1 || p.TCP[0] != 443 {
		t.Errorf("tcp %v", p.TCP)
	}
	for _, bad := range []string{"", "!!", "e30x", base64URL(`{"read":["rel"]}`), base64URL(`{"tcp":[0]}`), base64URL(`{"x":1}`), base64URL(`{}{}`)} {
		if _, err := decodePlan(bad); err == nil && bad != "" {
			t.Errorf("decodePlan(%q) accepted", bad)
		}
	}
}

func base64URL(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

// FuzzDecodePlan: the launcher's argument never panics the decoder, and
// whatever it accepts has only absolute paths and valid ports.
func FuzzDecodePlan(f *testing.F) {
	f.Add(base64URL(`{"exec":["/usr"],"read":["/etc"],"write":["/dev/null"],"tcp":[443]}`))
	f.Add(base64URL(`{"strict":true}`))
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		p, err := decodePlan(s)
		if err != nil {
			return
		}
		for _, list := range [][]string{p.Exec, p.Read, p.Write} {
			for _, path := range list {
				if !filepath.IsAbs(path) {
					t.Fatalf("accepted relative %q", path)
				}
			}
		}
		for _, port := range p.TCP {
			if port < 1 || port > 65535 {
				t.Fatalf("accepted port %d", port)
			}
		}
	})
}

func TestLauncherProtectsBouncerFiles(t *testing.T) {
	home := t.TempDir()
	state := filepath.Join(home, ".bouncer")
	pol := filepath.Join(home, "proj", "policy.yaml")
	os.MkdirAll(state, 0o700)
	os.MkdirAll(filepath.Dir(pol), 0o700)
	os.WriteFile(pol, nil, 0o600)
	link := filepath.Join(t.TempDir(), "h")
	os.Symlink(home, link)
	stateLike := state + "x" // not inside .bouncer: containment is by component
	os.MkdirAll(stateLike, 0o700)
	cases := []struct {
		name string
		c    Confinement
		want string // "" for accepted
	}{
		{"home rw holds state", Confinement{ReadWrite: []string{home}}, "sandbox.read_write: the server could write " + pol},
		{"home via link", Confinement{ReadWrite: []string{link}}, "sandbox.read_write: the server could write"},
		{"state itself read", Confinement{ReadOnly: []string{state}}, "sandbox.read_only: the server could read " + state},
		{"project rw holds policy", Confinement{ReadWrite: []string{filepath.Dir(pol)}}, "could write " + pol},
		{"project read is fine", Confinement{ReadOnly: []string{filepath.Dir(pol)}}, ""},
		{"sibling is fine", Confinement{ReadWrite: []string{t.TempDir()}}, ""},
		{"a name that starts like the state is fine", Confinement{ReadWrite: []string{stateLike}}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.c.NoWrite = []string{pol, state}
			tc.c.NoRead = []string{state}
			_, err := LauncherArgs(Auto, tc.c, "/bin/true", nil, "")
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}
