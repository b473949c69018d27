//go:build linux

package sandbox

import (
	"encoding/binary"
	"testing"

	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// call is one system call as the filter sees it (struct seccomp_data).
type call struct {
	name string
	nr   int // used when name is ""
	arch arch.AuditArch
	args [6]uint64
}

// run evaluates prog on c in x/net/bpf's interpreter. That VM loads words
// big-endian while the kernel loads them native-endian, so each 32-bit
// word is laid out big-endian at the offset where the kernel (on a
// little-endian machine) would find it.
func run(t *testing.T, prog []unix.SockFilter, info *arch.Info, c call) uint32 {
	t.Helper()
	raw := make([]bpf.RawInstruction, len(prog))
	for i, f := range prog {
		raw[i] = bpf.RawInstruction{Op: f.Code, Jt: f.Jt, Jf: f.Jf, K: f.K}
	}
	ins, ok := bpf.Disassemble(raw)
	if !ok {
		t.Fatal("filter does not disassemble")
	}
	vm, err := bpf.NewVM(ins)
	if err != nil {
		t.Fatal(err)
	}
	nr := c.nr
	if c.name != "" {
		n, ok := info.SyscallNames[c.name]
		if !ok {
			t.Fatalf("%s: no syscall %s", info.Name, c.name)
		}
		nr = n
	}
	if c.arch == 0 {
		c.arch = info.ID
	}
	data := make([]byte, 64)
	binary.BigEndian.PutUint32(data[0:], uint32(nr))
	binary.BigEndian.PutUint32(data[4:], uint32(c.arch))
	for i, a := range c.args {
		binary.BigEndian.PutUint32(data[16+8*i:], uint32(a))
		binary.BigEndian.PutUint32(data[16+8*i+4:], uint32(a>>32))
	}
	out, err := vm.Run(data)
	if err != nil {
		t.Fatal(err)
	}
	return uint32(out)
}

const self, upstream = 1000, 2000

func TestProxyFilterDecisions(t *testing.T) {
	neg := func(p int) uint64 { return uint64(int64(-p)) }
	cases := []struct {
		c    call
		want uint32
	}{
		{call{name: "read"}, retAllow},
		{call{name: "write"}, retAllow},
		{call{name: "openat"}, retAllow},
		{call{name: "getrandom"}, retAllow},
		{call{name: "execve"}, retEPERM},
		{call{name: "execveat"}, retEPERM},
		{call{name: "socket", args: [6]uint64{unix.AF_UNIX, unix.SOCK_STREAM}}, retEPERM},
		{call{name: "socket", args: [6]uint64{unix.AF_INET, unix.SOCK_STREAM}}, retEPERM},
		{call{name: "connect"}, retEPERM},
		{call{name: "ptrace"}, retEPERM},
		{call{name: "process_vm_readv"}, retEPERM},
		{call{name: "mount"}, retEPERM},
		{call{name: "finit_module"}, retEPERM},
		{call{name: "bpf"}, retEPERM},
		{call{name: "keyctl"}, retEPERM},
		{call{name: "io_uring_setup"}, retEPERM},
		{call{name: "unshare"}, retEPERM},
		{call{name: "tkill"}, retEPERM},
		{call{name: "ioctl", args: [6]uint64{0, unix.TCGETS}}, retAllow},
		{call{name: "ioctl", args: [6]uint64{0, unix.TIOCSTI}}, retEPERM},
		{call{name: "kill", args: [6]uint64{self, 0}}, retAllow},
		{call{name: "kill", args: [6]uint64{upstream, 15}}, retAllow},
		{call{name: "kill", args: [6]uint64{neg(upstream), 15}}, retAllow},
		{call{name: "kill", args: [6]uint64{1, 9}}, retEPERM},
		{call{name: "kill", args: [6]uint64{neg(1), 9}}, retEPERM}, // every process
		{call{name: "tgkill", args: [6]uint64{self, 5, 23}}, retAllow},
		{call{name: "tgkill", args: [6]uint64{upstream, 5, 23}}, retEPERM},
		{call{name: "pidfd_open", args: [6]uint64{upstream}}, retAllow},
		{call{name: "pidfd_open", args: [6]uint64{1}}, retEPERM},
		{call{name: "mmap", args: [6]uint64{0, 4096, unix.PROT_READ | unix.PROT_WRITE}}, retAllow},
		{call{name: "mmap", args: [6]uint64{0, 4096, unix.PROT_READ | unix.PROT_EXEC}}, retEPERM},
		{call{name: "mprotect", args: [6]uint64{0, 4096, unix.PROT_NONE}}, retAllow},
		{call{name: "mprotect", args: [6]uint64{0, 4096, unix.PROT_EXEC}}, retEPERM},
		// Another architecture's numbers mean other calls: refused.
		{call{name: "read", arch: arch.I386.ID}, retEPERM},
	}
	for _, info := range []*arch.Info{arch.X86_64, arch.AARCH64} {
		prog, err := proxyFilter(info, self, upstream)
		if err != nil {
			t.Fatalf("%s: %v", info.Name, err)
		}
		for _, tc := range cases {
			if got := run(t, prog, info, tc.c); got != tc.want {
				t.Errorf("%s: %s%v = %#x, want %#x", info.Name, tc.c.name, tc.c.args, got, tc.want)
			}
		}
	}
	// x32 (amd64 numbers with bit 30 set) is refused even for read.
	prog, _ := proxyFilter(arch.X86_64, self, upstream)
	if got := run(t, prog, arch.X86_64, call{nr: 0x40000000}); got != retEPERM {
		t.Errorf("x32 read = %#x", got)
	}
}

func TestUpstreamFilterDecisions(t *testing.T) {
	cases := []struct {
		noInet, noUnix bool
		c              call
		want           uint32
	}{
		{false, false, call{name: "execve"}, retAllow},
		{false, false, call{name: "openat"}, retAllow},
		{false, false, call{name: "socket", args: [6]uint64{unix.AF_INET, unix.SOCK_STREAM, 0}}, retAllow},
		{false, false, call{name: "socket", args: [6]uint64{unix.AF_INET, unix.SOCK_STREAM, ipprotoMPTCP}}, retEPERM},
		// The kernel reads an int from the low 32 bits: high bits must not hide MPTCP.
		{false, false, call{name: "socket", args: [6]uint64{unix.AF_INET, unix.SOCK_STREAM, 1<<32 | ipprotoMPTCP}}, retEPERM},
		{false, false, call{name: "socket", args: [6]uint64{unix.AF_UNIX, unix.SOCK_STREAM}}, retAllow},
		{true, false, call{name: "socket", args: [6]uint64{unix.AF_INET, unix.SOCK_DGRAM}}, retEPERM},
		{true, false, call{name: "socket", args: [6]uint64{1<<32 | unix.AF_INET6, unix.SOCK_STREAM}}, retEPERM},
		{true, false, call{name: "socket", args: [6]uint64{unix.AF_UNIX, unix.SOCK_STREAM}}, retAllow},
		{true, true, call{name: "socket", args: [6]uint64{unix.AF_UNIX, unix.SOCK_STREAM}}, retEPERM},
		{true, true, call{name: "socketpair", args: [6]uint64{unix.AF_UNIX, unix.SOCK_STREAM}}, retAllow},
		{false, false, call{name: "ptrace"}, retEPERM},
		{false, false, call{name: "process_vm_writev"}, retEPERM},
		{false, false, call{name: "mount"}, retEPERM},
		{false, false, call{name: "init_module"}, retEPERM},
		{false, false, call{name: "bpf"}, retEPERM},
		{false, false, call{name: "add_key"}, retEPERM},
		{false, false, call{name: "io_uring_setup"}, retEPERM},
		{false, false, call{name: "unshare"}, retEPERM},
		{false, false, call{name: "read", arch: arch.I386.ID}, retEPERM},
	}
	for _, info := range []*arch.Info{arch.X86_64, arch.AARCH64} {
		for _, tc := range cases {
			prog, err := upstreamFilter(info, tc.noInet, tc.noUnix)
			if err != nil {
				t.Fatalf("%s: %v", info.Name, err)
			}
			if got := run(t, prog, info, tc.c); got != tc.want {
				t.Errorf("%s noInet=%v noUnix=%v: %s%v = %#x, want %#x", info.Name, tc.noInet, tc.noUnix, tc.c.name, tc.c.args, got, tc.want)
			}
		}
	}
}

// TestAllowlistNames: every name in the lists exists on at least one of
// the architectures we ship, so a typo cannot silently drop a rule.
func TestAllowlistNames(t *testing.T) {
	for _, list := range [][]string{proxyAllowlist, upstreamDenylist} {
		for _, n := range list {
			_, a := arch.X86_64.SyscallNames[n]
			_, b := arch.AARCH64.SyscallNames[n]
			if !a && !b {
				t.Errorf("%s is not a syscall on amd64 or arm64", n)
			}
		}
	}
}

// TestGoRuntimeCallsAllowed: on each architecture we ship, the calls the
// Go runtime and the proxy's file handling make after the filter is on
// (spelled as that architecture's table spells them) are allowed. A name
// missing here would make os.Lstat fail on arm64, and every path check
// with it.
func TestGoRuntimeCallsAllowed(t *testing.T) {
	need := map[string][]string{
		"amd64": {"newfstatat", "epoll_pwait", "openat", "readlinkat", "futex", "clone", "mmap", "rt_sigreturn", "getrandom", "renameat", "unlinkat", "flock", "fdatasync", "waitid", "pidfd_send_signal", "nanosleep"},
		"arm64": {"fstatat", "epoll_pwait", "openat", "readlinkat", "futex", "clone", "mmap", "rt_sigreturn", "getrandom", "renameat", "unlinkat", "flock", "fdatasync", "waitid", "pidfd_send_signal", "nanosleep"},
	}
	for goarch, info := range map[string]*arch.Info{"amd64": arch.X86_64, "arm64": arch.AARCH64} {
		prog, err := proxyFilter(info, self, upstream)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range need[goarch] {
			if got := run(t, prog, info, call{name: n}); got != retAllow {
				t.Errorf("%s: %s refused", goarch, n)
			}
		}
	}
}
