//go:build linux

package sandbox

import (
	"fmt"
	"runtime"
	"sort"
	"unsafe"

	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/sys/unix"
)

// The filters are assembled here rather than by go-seccomp-bpf's Policy,
// whose argument conditions compare all 64 bits of a register: the kernel
// reads socket(2)'s int arguments from the low 32 bits only, so a caller
// passing 0x1_0000_0106 as the protocol would get MPTCP past a 64-bit
// "== 262" test. It also lets a foreign-architecture syscall (int 0x80 on
// amd64) fall through to the default action, which for a denylist is
// allow. We use go-seccomp-bpf for its syscall tables only.

// filter is an assembled seccomp program.
type filter = []unix.SockFilter

// seccomp_data layout (include/uapi/linux/seccomp.h).
const (
	offNr   = 0
	offArch = 4
	offArgs = 16
)

const (
	retAllow = unix.SECCOMP_RET_ALLOW
	retEPERM = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)

	// ipprotoMPTCP is IPPROTO_MPTCP. Landlock's TCP rules do not see
	// MPTCP sockets, so they are refused before they exist.
	ipprotoMPTCP = 262
)

// bpfProg builds a classic BPF program with forward jumps to labels.
type bpfProg struct {
	ins    []unix.SockFilter
	fixups map[int]string // instruction index -> label its true branch jumps to
	labels map[string]int
}

func newProg() *bpfProg {
	return &bpfProg{fixups: map[int]string{}, labels: map[string]int{}}
}

func (p *bpfProg) ldAbs(off uint32) {
	p.ins = append(p.ins, unix.SockFilter{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: off})
}

// jeq jumps to label when A == k and falls through otherwise.
func (p *bpfProg) jeq(k uint32, label string) {
	p.fixups[len(p.ins)] = label
	p.ins = append(p.ins, unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: k})
}

// jge jumps to label when A >= k and falls through otherwise.
func (p *bpfProg) jge(k uint32, label string) {
	p.fixups[len(p.ins)] = label
	p.ins = append(p.ins, unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K, K: k})
}

// jne falls through when A == k and jumps to label otherwise.
func (p *bpfProg) jne(k uint32, label string) {
	p.fixups[len(p.ins)] = "!" + label
	p.ins = append(p.ins, unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: k})
}

// and sets A &= k.
func (p *bpfProg) and(k uint32) {
	p.ins = append(p.ins, unix.SockFilter{Code: unix.BPF_ALU | unix.BPF_AND | unix.BPF_K, K: k})
}

func (p *bpfProg) ret(v uint32) {
	p.ins = append(p.ins, unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K, K: v})
}

func (p *bpfProg) label(name string) { p.labels[name] = len(p.ins) }

// assemble resolves the labels. Classic BPF jumps reach 255 instructions
// forward; our programs are far shorter, and a longer one is an error
// rather than a wrong filter.
func (p *bpfProg) assemble() ([]unix.SockFilter, error) {
	out := append([]unix.SockFilter(nil), p.ins...)
	for i, l := range p.fixups {
		neg := l[0] == '!'
		if neg {
			l = l[1:]
		}
		to, ok := p.labels[l]
		if !ok {
			return nil, fmt.Errorf("seccomp: label %q not defined", l)
		}
		skip := to - i - 1
		if skip < 0 || skip > 255 {
			return nil, fmt.Errorf("seccomp: jump to %q out of range (%d)", l, skip)
		}
		if neg {
			out[i].Jf = uint8(skip)
		} else {
			out[i].Jt = uint8(skip)
		}
	}
	return out, nil
}

// argLo is the offset of the low 32 bits of syscall argument i.
func argLo(i int) uint32 {
	off := uint32(offArgs + 8*i)
	var probe uint16 = 1
	if (*[2]byte)(unsafe.Pointer(&probe))[0] == 0 { // big endian
		off += 4
	}
	return off
}

// header checks the architecture (anything else is refused: a 32-bit
// syscall on a 64-bit kernel has other numbers) and, on amd64, refuses
// the x32 ABI; it leaves the syscall number in A.
func header(p *bpfProg, info *arch.Info) {
	p.ldAbs(offArch)
	p.jeq(uint32(info.ID), "arch-ok")
	p.ret(retEPERM)
	p.label("arch-ok")
	p.ldAbs(offNr)
	if info.ID == arch.X86_64.ID {
		p.jge(uint32(arch.X32.SeccompMask), "deny")
	}
}

// socketRule decides socket(2) by its low 32-bit arguments: MPTCP is always
// refused, and the families in denyFamilies too. It expects A = nr and
// leaves the program at a point where A = nr again for other syscalls.
func socketRule(p *bpfProg, info *arch.Info, denyFamilies []uint32, allowRest bool) error {
	nr, ok := info.SyscallNames["socket"]
	if !ok {
		return fmt.Errorf("seccomp: no socket syscall on %s", info.Name)
	}
	p.jne(uint32(nr), "after-socket")
	p.ldAbs(argLo(2))
	p.jeq(ipprotoMPTCP, "deny")
	p.ldAbs(argLo(0))
	for _, f := range denyFamilies {
		p.jeq(f, "deny")
	}
	if allowRest {
		p.ret(retAllow)
	} else {
		p.ret(retEPERM)
	}
	p.label("after-socket")
	return nil
}

// proxyAllowlist is every syscall the proxy makes once the upstream runs:
// the Go runtime (threads, memory, signals, timers), the stdio pump
// (pipes, epoll), the audit log and pending approvals in the state
// directory (openat, flock, fdatasync, rename, unlink), stopping and
// reaping the upstream (kill, pidfd_*, wait4, waitid) and crypto/rand.
// Everything else fails with EPERM: no execve, no sockets, no ptrace,
// no mount, no io_uring, no bpf, no keyrings, no namespaces.
//
// Measured with strace -f on `bouncer run` through initialize,
// tools/list, allowed and blocked tools/call, an approval code, and
// shutdown; see docs/hardening.md.
var proxyAllowlist = []string{
	// I/O on descriptors we already hold or open under Landlock.
	"read", "write", "readv", "writev", "pread64", "pwrite64", "preadv", "pwritev",
	"close", "close_range", "fcntl", "fstat", "newfstatat", "fstatat", "statx", "lseek",
	"dup", "dup2", "dup3", "pipe2", "copy_file_range", "splice", "sendfile",
	"epoll_create1", "epoll_ctl", "epoll_pwait", "epoll_pwait2", "epoll_wait", "eventfd2",
	"poll", "ppoll", "pselect6", "select",
	// Files (the state directory; Landlock decides which).
	"openat", "getdents64", "readlinkat", "unlinkat", "renameat", "renameat2",
	"flock", "fsync", "fdatasync", "ftruncate", "faccessat", "faccessat2", "getcwd",
	"fadvise64",
	// Memory (mmap and mprotect are allowed without PROT_EXEC only, see
	// proxyFilter).
	"munmap", "madvise", "brk", "mremap", "mincore",
	// Threads and scheduling.
	"clone", "clone3", "futex", "sched_yield", "sched_getaffinity", "gettid", "getpid",
	"getppid", "set_robust_list", "rseq", "set_tid_address",
	"arch_prctl", "membarrier",
	// Signals.
	"rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "sigaltstack", "restart_syscall",
	// Time.
	"nanosleep", "clock_gettime", "clock_nanosleep", "clock_getres", "gettimeofday", "time",
	"timer_create", "timer_settime", "timer_delete", "setitimer", "getitimer",
	// The upstream: reap it, signal it through the pidfd exec holds
	// (kill, tgkill and pidfd_open are allowed for some targets only, see
	// proxyFilter).
	"wait4", "waitid", "pidfd_send_signal",
	// Identity and limits (read only).
	"getuid", "geteuid", "getgid", "getegid", "getrlimit", "prlimit64", "uname", "sysinfo",
	// crypto/rand.
	"getrandom",
	"exit", "exit_group",
}

// nativeArch is the syscall table of the running architecture.
func nativeArch() (*arch.Info, error) {
	info, err := arch.GetInfo("")
	if err != nil {
		return nil, fmt.Errorf("seccomp: %w", err)
	}
	return info, nil
}

// ioctlAllowed are the ioctl requests the proxy may make: terminal
// queries (isatty) and descriptor flags. TIOCSTI, which pushes input into
// a terminal, is the reason ioctl is not allowed whole.
var ioctlAllowed = []uint32{unix.TCGETS, unix.TIOCGWINSZ, fionread, fionbio, fionclex, fioclex}

// The generic (asm-generic/ioctls.h) numbers, used by amd64 and arm64;
// x/sys/unix does not export them for every architecture.
const (
	fionread = 0x541B
	fionbio  = 0x5421
	fionclex = 0x5450
	fioclex  = 0x5451
)

// upstreamDenylist is refused to a confined upstream server, whatever its
// runtime: debugging other processes, kernel and mount state, BPF,
// keyrings, io_uring (which can open sockets without socket(2)), and new
// namespaces. A broad allowlist would break node or python in ways we
// cannot test for every server, so the child gets a denylist and Landlock
// does the fine-grained work.
var upstreamDenylist = []string{
	"ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd",
	"mount", "umount2", "pivot_root", "chroot", "move_mount", "open_tree", "fsopen",
	"fsmount", "fsconfig", "fspick", "mount_setattr",
	"init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load",
	"bpf", "perf_event_open", "userfaultfd",
	"keyctl", "add_key", "request_key",
	"io_uring_setup", "io_uring_enter", "io_uring_register",
	"unshare", "setns",
	"open_by_handle_at", "name_to_handle_at",
	"swapon", "swapoff", "reboot", "settimeofday", "clock_settime", "clock_adjtime", "adjtimex",
	"acct", "quotactl", "syslog", "vhangup", "iopl", "ioperm", "lookup_dcookie",
	"personality",
}

// Names differ between architectures: arm64 has no open, dup2, poll or
// epoll_wait (Go uses openat, dup3, ppoll, epoll_pwait there), and its
// table calls newfstatat "fstatat"; both spellings are listed above, and
// TestGoRuntimeCallsAllowed checks each architecture.

// numbers maps names to this architecture's syscall numbers, skipping
// names it does not have (open on arm64, say), sorted for a stable program.
func numbers(info *arch.Info, names []string) []uint32 {
	seen := map[uint32]bool{}
	var out []uint32
	for _, n := range names {
		if nr, ok := info.SyscallNames[n]; ok && !seen[uint32(nr)] {
			seen[uint32(nr)] = true
			out = append(out, uint32(nr))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// argIn allows syscall name when the low 32 bits of argument arg are one
// of values, and refuses it otherwise. It expects A = nr and leaves A = nr
// for the rules after it.
func argIn(p *bpfProg, info *arch.Info, name string, arg int, values []uint32) {
	nr, ok := info.SyscallNames[name]
	if !ok {
		return
	}
	after := "after-" + name
	p.jne(uint32(nr), after)
	p.ldAbs(argLo(arg))
	for _, v := range values {
		p.jeq(v, "allow")
	}
	p.ret(retEPERM)
	p.label(after)
}

// proxyFilter is the default-deny filter for the proxy, whose process ID
// is self; upstream (when not 0) is the upstream's process ID, which is
// also its process group. Signals may go to the proxy itself (the Go
// runtime raises them on its own threads) and to the upstream and its
// group, nowhere else.
func proxyFilter(info *arch.Info, self, upstream int) (filter, error) {
	return proxyFilterNet(info, self, upstream, false)
}

// proxyNetCalls are what the proxy's HTTP client needs on top of the stdio
// pump's calls to reach a remote upstream: make a TCP socket (socketRule
// for a remote proxy decides which), connect it, set and read its options
// and addresses, shut it down. Not bind, listen or accept: the proxy
// serves nothing, and no other socket type.
var proxyNetCalls = []string{"connect", "getsockopt", "setsockopt", "getsockname", "getpeername", "shutdown"}

// sockTypeMask is SOCK_TYPE_MASK: the type bits of socket(2)'s second
// argument, without SOCK_NONBLOCK and SOCK_CLOEXEC.
const sockTypeMask = 0xf

// netSocketRule allows socket(2) for TCP over IPv4 or IPv6 only: family
// AF_INET or AF_INET6, type SOCK_STREAM (with any flags), protocol 0 or
// IPPROTO_TCP, so never MPTCP, UDP, raw, netlink or UNIX sockets. It
// expects A = nr and leaves A = nr for the rules after it.
func netSocketRule(p *bpfProg, info *arch.Info) error {
	nr, ok := info.SyscallNames["socket"]
	if !ok {
		return fmt.Errorf("seccomp: no socket syscall on %s", info.Name)
	}
	p.jne(uint32(nr), "after-netsocket")
	p.ldAbs(argLo(0))
	p.jeq(unix.AF_INET, "netsocket-family")
	p.jeq(unix.AF_INET6, "netsocket-family")
	p.ret(retEPERM)
	p.label("netsocket-family")
	p.ldAbs(argLo(1))
	p.and(sockTypeMask)
	p.jeq(unix.SOCK_STREAM, "netsocket-type")
	p.ret(retEPERM)
	p.label("netsocket-type")
	p.ldAbs(argLo(2))
	p.jeq(0, "allow")
	p.jeq(unix.IPPROTO_TCP, "allow")
	p.ret(retEPERM)
	p.label("after-netsocket")
	return nil
}

// proxyFilterNet is proxyFilter, and with network set it also lets the
// proxy open TCP connections (netSocketRule, proxyNetCalls); Landlock then
// decides to which ports.
func proxyFilterNet(info *arch.Info, self, upstream int, network bool) (filter, error) {
	p := newProg()
	header(p, info)
	if network {
		if err := netSocketRule(p, info); err != nil {
			return nil, err
		}
	}
	pids := []uint32{uint32(int32(self))}
	if upstream > 0 {
		pids = append(pids, uint32(int32(upstream)), uint32(int32(-upstream)))
	}
	argIn(p, info, "kill", 0, pids)
	argIn(p, info, "tgkill", 0, pids[:1])
	argIn(p, info, "pidfd_open", 0, pids[:min(2, len(pids))])
	// No new executable memory: the Go runtime never maps code after
	// start, so an exploit could not load any either.
	for _, name := range []string{"mmap", "mprotect"} {
		if nr, ok := info.SyscallNames[name]; ok {
			after := "after-" + name
			p.jne(uint32(nr), after)
			p.ldAbs(argLo(2))
			p.and(unix.PROT_EXEC)
			p.jeq(0, "allow")
			p.ret(retEPERM)
			p.label(after)
		}
	}
	// ioctl: only the harmless requests.
	if nr, ok := info.SyscallNames["ioctl"]; ok {
		p.jne(uint32(nr), "after-ioctl")
		p.ldAbs(argLo(1))
		for _, req := range ioctlAllowed {
			p.jeq(req, "allow")
		}
		p.ret(retEPERM)
		p.label("after-ioctl")
	}
	allow := proxyAllowlist
	if network {
		allow = append(append([]string(nil), allow...), proxyNetCalls...)
	}
	for _, nr := range numbers(info, allow) {
		p.jeq(nr, "allow")
	}
	p.label("deny")
	p.ret(retEPERM)
	p.label("allow")
	p.ret(retAllow)
	return p.assemble()
}

// upstreamFilter is the denylist for a confined upstream. With noInet the
// server may not create IPv4 or IPv6 sockets at all (no TCP port was
// listed, and Landlock below ABI 10 does not cover UDP); with noUnix it
// may not create UNIX sockets (Landlock below ABI 9 does not cover
// connecting to a socket file such as /var/run/docker.sock).
func upstreamFilter(info *arch.Info, noInet, noUnix bool) (filter, error) {
	p := newProg()
	header(p, info)
	var fams []uint32
	if noInet {
		fams = append(fams, unix.AF_INET, unix.AF_INET6)
	}
	if noUnix {
		fams = append(fams, unix.AF_UNIX)
	}
	if err := socketRule(p, info, fams, true); err != nil {
		return nil, err
	}
	for _, nr := range numbers(info, upstreamDenylist) {
		p.jeq(nr, "deny")
	}
	p.ret(retAllow)
	p.label("deny")
	p.ret(retEPERM)
	return p.assemble()
}

// loadFilter sets no_new_privs and installs the filter on every thread of
// the process (SECCOMP_FILTER_FLAG_TSYNC), so no goroutine is left on an
// unfiltered thread.
func loadFilter(prog filter) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return installFilter(prog, unix.SECCOMP_FILTER_FLAG_TSYNC)
}

// loadThreadFilter is loadFilter for the calling thread alone (no TSYNC):
// the spawner confines one server's thread. The caller has locked it.
func loadThreadFilter(prog filter) error { return installFilter(prog, 0) }

// installFilter sets no_new_privs on this thread and installs the filter
// with the given flags.
func installFilter(prog filter, flags uintptr) error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("seccomp: no_new_privs: %w", err)
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	r, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, flags, uintptr(unsafe.Pointer(&fprog)))
	runtime.KeepAlive(prog)
	if errno != 0 {
		return fmt.Errorf("seccomp: install filter: %w", errno)
	}
	if r != 0 {
		return fmt.Errorf("seccomp: thread %d could not be synchronized", r)
	}
	return nil
}

// seccompSupported reports whether this kernel accepts seccomp filters.
// SECCOMP_GET_ACTION_AVAIL answers without changing anything.
func seccompSupported() error {
	action := uint32(unix.SECCOMP_RET_ERRNO)
	_, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_GET_ACTION_AVAIL, 0, uintptr(unsafe.Pointer(&action)))
	if errno != 0 {
		return fmt.Errorf("seccomp unavailable: %w", errno)
	}
	return nil
}
