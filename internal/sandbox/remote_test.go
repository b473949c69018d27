//go:build linux

package sandbox

import (
	"bufio"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// remoteProbe restricts itself as a proxy with a remote upstream reached
// on port args[1] (state dir args[0]), then tries what such a proxy may
// and may not do, and reports each.
func remoteProbe(args []string) int {
	state, allowed, other := args[0], args[1], args[2]
	p, _ := strconv.Atoi(allowed)
	if _, err := Restrict(Strict, Config{StateDir: state, Remote: true, ConnectPorts: []uint16{uint16(p)}}); err != nil {
		report("restrict", err)
		return 1
	}
	dial := func(port string) error {
		d := &net.Dialer{}
		d.SetMultipathTCP(false)
		c, err := d.Dial("tcp", "127.0.0.1:"+port)
		if err == nil {
			c.Close()
		}
		return err
	}
	report("dial allowed port", dial(allowed))
	report("dial other port", dial(other))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err == nil {
		ln.Close()
	}
	report("listen", err)
	sock := func(domain, typ, proto int) error {
		fd, err := unix.Socket(domain, typ, proto)
		if err == nil {
			unix.Close(fd)
		}
		return err
	}
	report("udp socket", sock(unix.AF_INET, unix.SOCK_DGRAM, 0))
	report("mptcp socket", sock(unix.AF_INET, unix.SOCK_STREAM, 262))
	report("unix socket", sock(unix.AF_UNIX, unix.SOCK_STREAM, 0))
	report("raw socket", sock(unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_ICMP))
	report("netlink socket", sock(unix.AF_NETLINK, unix.SOCK_RAW, 0))
	report("tcp6 socket", sock(unix.AF_INET6, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, unix.IPPROTO_TCP))
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
	if err == nil {
		err = unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}})
		unix.Close(fd)
	}
	report("bind", err)
	report("exec", exec.Command("/bin/true").Run())
	return 0
}

// A proxy with a remote upstream keeps TCP connect to the server's port,
// and nothing else of the network: no other port (Landlock), no listening
// or binding, no UDP (so no DNS), MPTCP, raw, netlink or UNIX sockets
// (seccomp), and still no exec.
func TestRemoteProxySandbox(t *testing.T) {
	needKernel(t)
	allowed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer allowed.Close()
	other, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	port := func(l net.Listener) string { return strconv.Itoa(l.Addr().(*net.TCPAddr).Port) }
	exe, _ := os.Executable()
	out, err := exec.Command(exe, "remote-probe", t.TempDir(), port(allowed), port(other)).Output()
	if err != nil {
		t.Fatalf("probe: %v\n%s", err, out)
	}
	got := map[string]result{}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		var r result
		if json.Unmarshal(sc.Bytes(), &r) == nil {
			got[r.Name] = r
		}
	}
	want := map[string]syscall.Errno{
		"dial allowed port": 0,
		"dial other port":   syscall.EACCES,
		"udp socket":        syscall.EPERM,
		"mptcp socket":      syscall.EPERM,
		"unix socket":       syscall.EPERM,
		"raw socket":        syscall.EPERM,
		"netlink socket":    syscall.EPERM,
		"tcp6 socket":       0,
		"bind":              syscall.EPERM,
	}
	for name, errno := range want {
		r, ok := got[name]
		if !ok {
			t.Errorf("%s: not reported\n%s", name, out)
			continue
		}
		if errno == 0 && r.Err != "" || errno != 0 && syscall.Errno(r.No) != errno {
			t.Errorf("%s: got %q (errno %d), want errno %d", name, r.Err, r.No, errno)
		}
	}
	for _, name := range []string{"listen", "exec"} {
		if got[name].Err == "" {
			t.Errorf("%s succeeded in the sandbox", name)
		}
	}
}
