package sandbox

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	unix "github.com/bouncer-mcp/bouncer/internal/unixshim"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// MinStrictABI is the oldest Landlock ABI strict mode accepts: ABI 3 is
// the first to cover truncate(2), ABI 4 the first to cover TCP.
const MinStrictABI = 4

// Capabilities is what this kernel and this process offer.
type Capabilities struct {
	// LandlockABI is the kernel's Landlock ABI version, 0 when none.
	LandlockABI int `json:"landlock_abi"`
	// LandlockWhy says why Landlock is missing; empty when present.
	LandlockWhy string `json:"landlock_unavailable,omitempty"`
	// Seccomp is true when seccomp filters can be installed.
	Seccomp bool `json:"seccomp"`
	// SeccompWhy says why seccomp is missing; empty when present.
	SeccompWhy string `json:"seccomp_unavailable,omitempty"`
	// SecurityFS is true when /sys/kernel/security is mounted; LSMs is
	// its list of active security modules then. Landlock does not need
	// it; it only lets us show the list.
	SecurityFS bool     `json:"securityfs"`
	LSMs       []string `json:"lsms,omitempty"`
	// MPTCP is true when net.mptcp.enabled is 1. Landlock's TCP rules do
	// not apply to MPTCP sockets, so the seccomp filter refuses them.
	MPTCP bool `json:"mptcp"`
	// NoNewPrivs and SeccompMode are this process's current state from
	// /proc/self/status (SeccompMode 2 is "filter").
	NoNewPrivs  int `json:"no_new_privs"`
	SeccompMode int `json:"seccomp_mode"`
}

// Probe looks at the running kernel without changing anything.
func Probe() Capabilities {
	var c Capabilities
	abi, err := ll.LandlockGetABIVersion()
	switch {
	case err == nil:
		c.LandlockABI = abi
	case errors.Is(err, unix.ENOSYS):
		c.LandlockWhy = "this kernel has no Landlock (Linux 5.13 or later, built with CONFIG_SECURITY_LANDLOCK)"
	case errors.Is(err, unix.EOPNOTSUPP):
		c.LandlockWhy = "Landlock is built in but not enabled at boot (add landlock to the lsm= kernel parameter)"
	case errors.Is(err, unix.EPERM):
		c.LandlockWhy = "Landlock system calls are blocked, probably by a container's seccomp profile"
	default:
		c.LandlockWhy = fmt.Sprintf("Landlock: %v", err)
	}
	if err := seccompSupported(); err != nil {
		c.SeccompWhy = err.Error()
	} else {
		c.Seccomp = true
	}
	if b, err := os.ReadFile("/sys/kernel/security/lsm"); err == nil {
		c.SecurityFS = true
		c.LSMs = strings.Split(strings.TrimSpace(string(b)), ",")
	}
	if b, err := os.ReadFile("/proc/sys/net/mptcp/enabled"); err == nil && strings.TrimSpace(string(b)) == "1" {
		c.MPTCP = true
	}
	c.NoNewPrivs, c.SeccompMode = selfStatus()
	return c
}

// selfStatus reads NoNewPrivs and Seccomp from /proc/self/status.
func selfStatus() (nnp, seccompMode int) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return -1, -1
	}
	defer f.Close()
	nnp, seccompMode = -1, -1
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil {
			continue
		}
		switch k {
		case "NoNewPrivs":
			nnp = n
		case "Seccomp":
			seccompMode = n
		}
	}
	return nnp, seccompMode
}

// landlockParts names what a Landlock ABI covers, for reports.
func landlockParts(abi int) string {
	parts := []string{"fs"}
	if abi >= 4 {
		parts = append(parts, "tcp")
	}
	if abi >= 6 {
		parts = append(parts, "scope")
	}
	return strings.Join(parts, "+")
}

// Plan says, for doctor, what Restrict would apply in mode on this kernel,
// or the error strict mode would stop with.
func (c Capabilities) Plan(m Mode) (string, error) {
	if m == Off {
		return "nothing (--sandbox off)", nil
	}
	if m == Strict {
		if err := c.strictError(); err != nil {
			return "", err
		}
	}
	var out []string
	var skipped []string
	if c.LandlockABI > 0 {
		out = append(out, fmt.Sprintf("landlock ABI %d (%s)", c.LandlockABI, landlockParts(c.LandlockABI)))
	} else {
		skipped = append(skipped, "landlock: "+c.LandlockWhy)
	}
	if c.Seccomp {
		out = append(out, "seccomp allowlist")
	} else {
		skipped = append(skipped, "seccomp: "+c.SeccompWhy)
	}
	s := strings.Join(out, ", ")
	if s == "" {
		s = "nothing"
	}
	if len(skipped) > 0 {
		s += "; skipped " + strings.Join(skipped, "; ")
	}
	return s, nil
}

// strictError is nil when strict mode can be honoured.
func (c Capabilities) strictError() error {
	switch {
	case c.LandlockABI == 0:
		return fmt.Errorf("--sandbox strict: %s", c.LandlockWhy)
	case c.LandlockABI < MinStrictABI:
		return fmt.Errorf("--sandbox strict: Landlock ABI %d is too old (need %d for file truncation and TCP rules; Linux 6.7 or later)", c.LandlockABI, MinStrictABI)
	case !c.Seccomp:
		return fmt.Errorf("--sandbox strict: %s", c.SeccompWhy)
	}
	return nil
}

// CheckStrict is nil when --sandbox strict can be honoured on this kernel,
// so a caller can refuse before it starts anything.
func CheckStrict() error { return Probe().strictError() }
