package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// Config is what the proxy keeps once it is restricted.
type Config struct {
	// StateDir is the one directory the proxy may write: the audit log
	// and pending approvals. It must exist.
	StateDir string
	// ReadPaths are further files or directories the proxy may read
	// (nothing else is readable). Missing ones are an error.
	ReadPaths []string
	// ListDirs are directories the proxy may list, with what lies below
	// them, without reading any file there: the path check lists the
	// directory of a name that does not exist yet to rule out a Unicode
	// look-alike of it (see fsresolve). Missing ones are an error.
	ListDirs []string
	// Upstream is the process ID (and process group) of the upstream
	// server, the one process besides itself the proxy may still signal.
	// 0: none.
	Upstream int
	// Remote is true when the upstream is a remote server the proxy
	// reaches over TCP, on ConnectPorts only. Landlock (ABI 4 and later)
	// enforces the ports, not the hosts: which hosts is the proxy's own
	// business (it dials only addresses resolved before Restrict).
	Remote       bool
	ConnectPorts []uint16
}

// Report says what Restrict applied; String is the line the proxy prints.
type Report struct {
	Mode Mode
	// LandlockABI is the ABI the domain was built for (0: not applied).
	LandlockABI int
	// Seccomp is true when the allowlist filter is installed.
	Seccomp bool
	// Skipped says, per layer, why it was not applied (auto mode).
	Skipped []string
	// Remote and Ports are Config's Remote and ConnectPorts.
	Remote bool
	Ports  []uint16
}

func joinPorts(ports []uint16) string {
	s := make([]string, len(ports))
	for i, p := range ports {
		s[i] = fmt.Sprint(p)
	}
	return strings.Join(s, ", ")
}

// String reads like "landlock ABI 7 (fs+tcp+scope), seccomp allowlist".
func (r Report) String() string {
	if r.Mode == Off {
		return "off (nothing applied)"
	}
	var parts []string
	if r.LandlockABI > 0 {
		parts = append(parts, fmt.Sprintf("landlock ABI %d (%s)", r.LandlockABI, landlockParts(r.LandlockABI)))
	}
	if r.Seccomp {
		parts = append(parts, "seccomp allowlist")
	}
	if r.Remote {
		switch {
		case r.LandlockABI >= 4:
			parts = append(parts, fmt.Sprintf("TCP connect to port %s only (any host on it: the proxy dials only the addresses resolved at start)", joinPorts(r.Ports)))
		case r.Seccomp:
			parts = append(parts, "TCP connect to ANY port (Landlock below ABI 4 does not cover TCP; the proxy dials only the addresses resolved at start)")
		}
	}
	s := strings.Join(parts, ", ")
	if s == "" {
		s = "NOTHING applied"
	}
	if len(r.Skipped) > 0 {
		s += "; skipped " + strings.Join(r.Skipped, "; ")
	}
	return s
}

// Restrict confines the calling process, all its threads, for the rest of
// its life: Landlock first (reads only StateDir, ReadPaths and /dev/null,
// lists only those and ListDirs;
// writes only StateDir and /dev/null; executes nothing; no TCP bind, and
// TCP connect only to ConnectPorts of a Remote upstream; no abstract UNIX
// sockets out of the domain), then the seccomp allowlist (no execve, no
// ptrace, no sockets but a Remote upstream's TCP ones, ...). Call it after the
// upstream has been started: children started later inherit all of it and
// could not even be executed.
//
// Auto applies what the kernel offers; Strict returns an error, having
// applied nothing, unless Landlock ABI MinStrictABI+ and seccomp are both
// available; Off does nothing. An error from a layer the kernel does offer
// is returned in every mode: a sandbox that half failed is not reported
// as applied.
func Restrict(m Mode, c Config) (Report, error) {
	r := Report{Mode: m, Remote: c.Remote, Ports: c.ConnectPorts}
	if m == Off {
		return r, nil
	}
	caps := Probe()
	if m == Strict {
		if err := caps.strictError(); err != nil {
			return r, err
		}
	}
	rules, err := proxyRules(c)
	if err != nil {
		return r, err
	}
	// Load the time zone now: time.Local is read lazily from
	// /etc/localtime, which will be out of reach.
	_ = time.Local.String()

	if c.Remote {
		for _, port := range c.ConnectPorts {
			rules = append(rules, landlock.ConnectTCP(port))
		}
	}
	if caps.LandlockABI > 0 {
		if err := proxyLandlock().Restrict(rules...); err != nil {
			return r, fmt.Errorf("sandbox: landlock: %w", err)
		}
		r.LandlockABI = caps.LandlockABI
	} else {
		r.Skipped = append(r.Skipped, "landlock ("+caps.LandlockWhy+")")
	}
	if caps.Seccomp {
		info, err := nativeArch()
		if err != nil {
			return r, err
		}
		prog, err := proxyFilterNet(info, os.Getpid(), c.Upstream, c.Remote)
		if err != nil {
			return r, err
		}
		if err := loadFilter(prog); err != nil {
			return r, fmt.Errorf("sandbox: %w", err)
		}
		r.Seccomp = true
	} else {
		r.Skipped = append(r.Skipped, "seccomp ("+caps.SeccompWhy+")")
	}
	return r, nil
}

// proxyLandlock handles every file-system right go-landlock knows (the
// kernel's subset is used), TCP bind and connect, and the abstract UNIX
// socket scope. Not the signal scope: the upstream was started before the
// domain existed, so it is outside it, and the proxy must still be able to
// signal its process group to stop it.
func proxyLandlock() landlock.Config {
	return landlock.Config{
		HandledAccessFS:  landlock.V9.HandledAccessFS,
		HandledAccessNet: landlock.V4.HandledAccessNet,
		Scoped:           landlock.ScopedSet(ll.ScopeAbstractUnixSocket),
	}.BestEffort()
}

const (
	readFile = ll.AccessFSReadFile
	readDir  = ll.AccessFSReadFile | ll.AccessFSReadDir
	// stateRights is what the audit log and the pending file need: read,
	// write, create and replace regular files, truncate. Not execute, not
	// directories, devices, sockets, FIFOs or links.
	stateRights = ll.AccessFSReadFile | ll.AccessFSReadDir | ll.AccessFSWriteFile |
		ll.AccessFSMakeReg | ll.AccessFSRemoveFile | ll.AccessFSTruncate
	devNullRights = ll.AccessFSReadFile | ll.AccessFSWriteFile | ll.AccessFSTruncate
)

// proxyRules turns a Config into Landlock rules.
func proxyRules(c Config) ([]landlock.Rule, error) {
	if c.StateDir == "" {
		return nil, errors.New("sandbox: no state directory")
	}
	st, err := os.Stat(c.StateDir)
	if err != nil {
		return nil, fmt.Errorf("sandbox: state directory: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("sandbox: state directory %s is not a directory", c.StateDir)
	}
	rules := []landlock.Rule{
		landlock.PathAccess(stateRights, c.StateDir),
		landlock.PathAccess(devNullRights, "/dev/null"),
	}
	for _, p := range c.ListDirs {
		p, err := filepath.Abs(p)
		if err != nil {
			return nil, fmt.Errorf("sandbox: list directory: %w", err)
		}
		st, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("sandbox: list directory: %w", err)
		}
		if !st.IsDir() {
			return nil, fmt.Errorf("sandbox: list directory %s is not a directory", p)
		}
		rules = append(rules, landlock.PathAccess(ll.AccessFSReadDir, p))
	}
	for _, p := range c.ReadPaths {
		p, err := filepath.Abs(p)
		if err != nil {
			return nil, fmt.Errorf("sandbox: read path: %w", err)
		}
		st, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("sandbox: read path: %w", err)
		}
		if st.IsDir() {
			rules = append(rules, landlock.PathAccess(readDir, p))
		} else {
			rules = append(rules, landlock.PathAccess(readFile, p))
		}
	}
	return rules, nil
}
