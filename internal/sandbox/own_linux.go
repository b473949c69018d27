//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strings"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"

	"github.com/bouncer-mcp/bouncer/internal/pathtree"
)

// On Linux the strongest form is a user and mount namespace, as
// bubblewrap builds one: the proxy starts the launcher in new user, mount
// and PID namespaces, the launcher makes the mounts while it still holds
// capabilities in them, and then starts the server with none, as the
// namespace's init.

const seatbelt = false

func namespaceName() string { return "mount namespace" }

// formUnavailable says why form can't work on this system, as far as can
// be told without trying; "" when it may.
func formUnavailable(f OwnForm) string {
	switch f {
	case OwnNamespace:
		if b, err := os.ReadFile("/proc/sys/user/max_user_namespaces"); err == nil && strings.TrimSpace(string(b)) == "0" {
			return "user namespaces are switched off (user.max_user_namespaces is 0)"
		}
	case OwnLandlock:
		c := Probe()
		switch {
		case c.LandlockABI == 0:
			return c.LandlockWhy
		case c.LandlockABI < 3:
			return fmt.Sprintf("Landlock ABI %d can't refuse truncating a file (ABI 3, Linux 6.2, can)", c.LandlockABI)
		}
	}
	return ""
}

// namespaceAttrs starts the launcher in new user, mount and PID namespaces.
// The user ID and group ID map to themselves, so the server's files are its
// own there as here: all of them when we are root, else only ours (other
// users' files then show the overflow ID, and setuid programs don't run).
// An unprivileged launcher keeps the two capabilities it needs to mount
// and to empty the server's bounding set across its exec.
func namespaceAttrs(cmd *exec.Cmd) {
	a := cmd.SysProcAttr
	if a == nil {
		a = &syscall.SysProcAttr{}
		cmd.SysProcAttr = a
	}
	a.Cloneflags |= syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID
	uid, gid := os.Getuid(), os.Getgid()
	if uid == 0 {
		all := []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 1<<32 - 1}}
		a.UidMappings, a.GidMappings = all, all
		a.GidMappingsEnableSetgroups = true
		return
	}
	a.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
	a.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
	a.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_SETPCAP}
}

// mountOwn makes the mounts that keep the server off the own files, in the
// launcher's own mount namespace, and enters the working directory again
// through them.
func mountOwn(o ownPlan) (ownStatus, error) {
	var st ownStatus
	// Nothing mounted here reaches the namespace we came from.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_SLAVE, ""); err != nil {
		// Ubuntu's AppArmor lets an unprivileged process make a user
		// namespace but gives it no capabilities there.
		if b, _ := os.ReadFile("/proc/sys/kernel/apparmor_restrict_unprivileged_userns"); strings.TrimSpace(string(b)) == "1" {
			return st, fmt.Errorf("mount namespace: %w (AppArmor restricts unprivileged user namespaces: kernel.apparmor_restrict_unprivileged_userns is 1)", err)
		}
		return st, fmt.Errorf("mount namespace: %w", err)
	}
	// A /proc of this PID namespace shows no process outside it, so none
	// of their /proc/PID/root (which leads back to the first mount
	// namespace, past every mount made here). Without it, the user
	// namespace and the init's Landlock domain still keep the server out
	// of those (TestOwnNamespaceMeasured); it sees only that they exist.
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		st.Proc = fmt.Sprintf("other processes show in /proc (a /proc of its own: %v), but their root and environment are out of its reach", err)
	}
	if err := pinOwn(o); err != nil {
		return st, err
	}
	if o.Dir != "" {
		if err := os.Chdir(o.Dir); err != nil {
			return st, fmt.Errorf("working directory: %w", err)
		}
	}
	return st, nil
}

// pinOwn makes the mounts that pin the own files, in this thread's mount
// namespace.
func pinOwn(o ownPlan) error {
	ps, _, err := pins(OwnFiles{Hidden: o.Hidden, ReadOnly: o.ReadOnly}, mountViews())
	if err != nil {
		return err
	}
	for _, p := range ps {
		if err := mountPin(p); err != nil {
			return fmt.Errorf("mount %s %s: %w", p.Kind, p.Path, err)
		}
	}
	return nil
}

// mountViews gives the other places the mount table shows a path at.
func mountViews() func(string) []string {
	// This thread's: the spawner pins a server's own files in a mount
	// namespace of one thread's.
	b, err := os.ReadFile("/proc/thread-self/mountinfo")
	if err != nil {
		return nil
	}
	mounts := parseMountinfo(string(b))
	return func(p string) []string { return views(mounts, p) }
}

// mountPin makes one mount of the plan.
func mountPin(p pin) error {
	switch p.Kind {
	case pinDir:
		st, err := os.Lstat(p.Path)
		if err != nil {
			return err
		}
		if !st.IsDir() {
			return errors.New("not a directory any more")
		}
		return unix.Mount(p.Path, p.Path, "", unix.MS_BIND|unix.MS_REC, "")
	case pinLink:
		// mount(2) follows a link; open_tree and move_mount don't.
		fd, err := unix.OpenTree(unix.AT_FDCWD, p.Path, unix.OPEN_TREE_CLONE|unix.AT_SYMLINK_NOFOLLOW|unix.OPEN_TREE_CLOEXEC)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		return unix.MoveMount(fd, "", unix.AT_FDCWD, p.Path, unix.MOVE_MOUNT_F_EMPTY_PATH)
	case pinReadOnly:
		if err := unix.Mount(p.Path, p.Path, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return err
		}
		return readOnly(p.Path)
	case pinHidden:
		st, err := os.Lstat(p.Path)
		if err != nil {
			return err
		}
		if !st.IsDir() {
			return errors.New("the state directory is not a directory")
		}
		return unix.Mount("tmpfs", p.Path, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC|unix.MS_RDONLY, "mode=0555,size=4k,nr_inodes=2")
	}
	return fmt.Errorf("unknown pin %d", p.Kind)
}

// readOnly makes the mount at path, and every mount below it, read-only.
func readOnly(path string) error {
	err := unix.MountSetattr(unix.AT_FDCWD, path, unix.AT_RECURSIVE, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY})
	if !errors.Is(err, unix.ENOSYS) {
		return err
	}
	// Before Linux 5.12: the top mount only, keeping the flags a remount
	// in a user namespace may not clear.
	var sf unix.Statfs_t
	if err := unix.Statfs(path, &sf); err != nil {
		return err
	}
	keep := uintptr(sf.Flags) & (unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC | unix.MS_NOATIME | unix.MS_NODIRATIME | unix.MS_RELATIME)
	return unix.Mount("", path, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|keep, "")
}

// runInit starts the server with no capabilities and waits for it as the
// PID namespace's init: it passes on the signals it gets to the server's
// process group, reaps every orphan, and exits with the server's status
// (128+N for a server killed by signal N, as a shell reports it). When it
// exits, the kernel kills whatever is left in the namespace.
func runInit(argv []string, landlockABI bool) error {
	// The server is forked from this thread, whose credentials are
	// dropped below; it stays locked to it for good.
	runtime.LockOSThread()
	// The server may not trace or read the memory of this process, which
	// keeps its capabilities on its other threads.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("init: not dumpable: %w", err)
	}
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGWINCH)
	if err := dropCapabilities(); err != nil {
		return err
	}
	if landlockABI {
		// A Landlock domain of its own keeps the server from tracing, or
		// reaching through /proc, any process outside it: this one, and
		// every process if /proc could not be mounted afresh. It handles
		// one right no server has without capabilities, so it refuses
		// nothing else.
		if err := threadLandlock(); err != nil {
			return err
		}
	}
	pid, err := syscall.ForkExec(argv[0], argv, &syscall.ProcAttr{
		Env:   os.Environ(),
		Files: []uintptr{0, 1, 2},
		// Its own process group, which the signals go to.
		Sys: &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL},
	})
	if err != nil {
		return fmt.Errorf("exec %s: %w", argv[0], err)
	}
	// Our copies of stdin and stdout would keep the pipes open after the
	// server closed them.
	if null, err := os.Open(os.DevNull); err == nil {
		_ = unix.Dup2(int(null.Fd()), 0)
		_ = unix.Dup2(int(null.Fd()), 1)
		null.Close()
	}
	go func() {
		for s := range sigs {
			_ = syscall.Kill(-pid, s.(syscall.Signal))
		}
	}()
	for {
		var ws syscall.WaitStatus
		wpid, err := syscall.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return fmt.Errorf("init: wait: %w", err)
		}
		if wpid != pid {
			continue // an orphan
		}
		if ws.Exited() || ws.Signaled() {
			os.Exit(shellStatus(ws))
		}
	}
}

// shellStatus is an exit status as a shell reports it: the code, or 128+N
// for a process killed by signal N.
func shellStatus(ws syscall.WaitStatus) int {
	if ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ws.ExitStatus()
}

// dropCapabilities empties this thread's capability sets, bounding set
// included, and sets no_new_privs: a program it executes has no
// capability, even as root in the namespace, and can gain none (a setuid
// or file-capability program runs without them).
func dropCapabilities() error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("init: no_new_privs: %w", err)
	}
	for c := 0; c < 64; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("init: drop capability %d from the bounding set: %w", c, err)
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("init: clear ambient capabilities: %w", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("init: drop capabilities: %w", err)
	}
	return nil
}

// threadLandlock puts this thread (not the whole process) in a Landlock
// domain that handles only making block devices.
func threadLandlock() error {
	attr := ll.RulesetAttr{HandledAccessFS: ll.AccessFSMakeBlock}
	fd, err := ll.LandlockCreateRuleset(&attr, 0)
	if err != nil {
		return fmt.Errorf("init: landlock: %w", err)
	}
	defer syscall.Close(fd)
	if err := ll.LandlockRestrictSelf(fd, 0); err != nil {
		return fmt.Errorf("init: landlock: %w", err)
	}
	return nil
}

// guardAround applies the landlock form: a domain that handles every file
// right, grants all of them on what lies around the own files (o.Around),
// read on the read-only ones, listing on the directories that hold only
// read-only ones, and nothing on the state directory or the directories
// that hold it. Landlock's scoping keeps the server from other processes'
// /proc/PID/root, which would lead past nothing here but is the same
// file system.
func guardAround(o ownPlan, abi int) (ownStatus, error) {
	var st ownStatus
	if abi < 3 {
		return st, errors.New(formUnavailable(OwnLandlock))
	}
	rules, err := aroundRules(o, abi)
	if err != nil {
		return st, err
	}
	cfg := landlock.Config{HandledAccessFS: landlock.V9.HandledAccessFS}.BestEffort()
	if err := cfg.Restrict(rules...); err != nil {
		return st, fmt.Errorf("landlock: %w", err)
	}
	return st, nil
}

func aroundRules(o ownPlan, abi int) ([]landlock.Rule, error) {
	all := landlock.V9.HandledAccessFS &^ ll.AccessFSRefer
	if abi >= 2 {
		all |= ll.AccessFSRefer
	}
	const fileRights = ll.AccessFSExecute | ll.AccessFSWriteFile | ll.AccessFSReadFile | ll.AccessFSTruncate | ll.AccessFSIoctlDev
	var rules []landlock.Rule
	for _, p := range o.Around {
		st, err := os.Stat(p)
		if err != nil {
			continue // a dangling link, or gone since: nothing to grant
		}
		if st.IsDir() {
			rules = append(rules, landlock.PathAccess(all, p))
		} else {
			rules = append(rules, landlock.PathAccess(fileRights&all, p))
		}
	}
	var hidden []string
	for _, h := range o.Hidden {
		hidden = append(hidden, h, resolveExisting(h))
	}
	for _, p := range o.ReadOnly {
		st, err := os.Stat(p)
		if err != nil {
			continue
		}
		if st.IsDir() {
			rules = append(rules, landlock.PathAccess(execRights, p))
		} else {
			rules = append(rules, landlock.PathAccess(execRights&^ll.AccessFSReadDir, p))
		}
		// Listing the directories that hold it, where none holds the
		// state directory (listing is granted to all that lies below).
		for d := parentDir(p); d != ""; d = parentDir(d) {
			if holdsAny(d, hidden) {
				continue
			}
			rules = append(rules, landlock.PathAccess(ll.AccessFSReadDir, d))
		}
	}
	return rules, nil
}

// parentDir is p's directory, or "" at the root.
func parentDir(p string) string {
	if p == "/" || p == "" {
		return ""
	}
	d := p[:strings.LastIndex(p, "/")]
	if d == "" {
		return "/"
	}
	return d
}

// holdsAny reports whether one of paths lies in dir.
func holdsAny(dir string, paths []string) bool {
	for _, p := range paths {
		if pathtree.Within(p, dir) {
			return true
		}
	}
	return false
}
