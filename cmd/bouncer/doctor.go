package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/bouncer-mcp/bouncer/internal/sandbox"
	"github.com/bouncer-mcp/bouncer/internal/statefile"
)

const doctorSynopsis = `bouncer doctor [--json] [--policy-dir DIR] [--trust FILE]

Shows what confinement this machine offers (Landlock, seccomp, user namespaces) and what
bouncer run --sandbox auto and strict would apply with it, which form keeps a server off
Bouncer's own files, and checks the installed policy set as bouncer run --policy-dir
would, and the state directory (where the audit log is) as run does. Exits 2 when an
installed set or the state directory would stop run.`

// cmdDoctor shows what confinement this machine offers and what
// `bouncer run --sandbox auto` (and strict) would do with it, and checks
// the installed policy set as `bouncer run --policy-dir` would: it exits 2
// when a set is installed that run would refuse, after saying everything
// else.
func cmdDoctor(args []string) error {
	fs, home := newFlags("doctor", doctorSynopsis)
	asJSON := fs.Bool("json", false, "print one JSON object instead of text")
	policyDir := fs.String("policy-dir", "", "the policy install `DIR` to check (default $BOUNCER_HOME/policy)")
	trust := fs.String("trust", "", "trust configuration `FILE` to verify the installed set under (default $BOUNCER_HOME/trust.yaml, with /etc/bouncer/trust.yaml always applied when present)")
	if done, err := parseFlags(fs, args); done {
		return err
	}
	if fs.NArg() > 0 {
		return usageErr("%s", "doctor takes no arguments")
	}
	c := sandbox.Probe()
	own := ownFilesLine()
	auto, _ := c.Plan(sandbox.Auto)
	strictPlan, strictErr := c.Plan(sandbox.Strict)
	ps := policySet(*home, *policyDir, *trust)
	sd := checkStateDir(*home)
	if *asJSON {
		out := struct {
			sandbox.Capabilities
			Auto        string           `json:"run_sandbox_auto"`
			Strict      string           `json:"run_sandbox_strict,omitempty"`
			StrictError string           `json:"run_sandbox_strict_error,omitempty"`
			OwnFiles    ownFilesStatus   `json:"own_files"`
			PolicySet   *policySetStatus `json:"policy_set"`
			StateDir    *stateDirStatus  `json:"state_dir"`
		}{Capabilities: c, Auto: auto, Strict: strictPlan, OwnFiles: own, PolicySet: ps, StateDir: sd}
		if strictErr != nil {
			out.StrictError = strictErr.Error()
		}
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			return failed(fmt.Errorf("doctor: %v", err))
		}
		return doctorVerdict(ps, sd)
	}
	w := os.Stdout
	if c.LandlockABI > 0 {
		fmt.Fprintf(w, "landlock:      ABI %d\n", c.LandlockABI)
	} else {
		fmt.Fprintf(w, "landlock:      unavailable: %s\n", c.LandlockWhy)
	}
	if c.Seccomp {
		fmt.Fprintln(w, "seccomp:       available")
	} else {
		fmt.Fprintf(w, "seccomp:       unavailable: %s\n", c.SeccompWhy)
	}
	if c.SecurityFS {
		fmt.Fprintf(w, "securityfs:    mounted; active LSMs: %s\n", strings.Join(c.LSMs, ","))
	} else {
		fmt.Fprintln(w, "securityfs:    not mounted (Landlock does not need it; mount -t securityfs securityfs /sys/kernel/security to list the LSMs)")
	}
	if c.MPTCP {
		fmt.Fprintln(w, "mptcp:         enabled (Landlock does not see MPTCP; the seccomp filter refuses MPTCP sockets)")
	} else {
		fmt.Fprintln(w, "mptcp:         disabled")
	}
	fmt.Fprintf(w, "this process:  NoNewPrivs %d, Seccomp %d\n", c.NoNewPrivs, c.SeccompMode)
	fmt.Fprintf(w, "run --sandbox auto:   %s\n", auto)
	if strictErr != nil {
		fmt.Fprintf(w, "run --sandbox strict: would exit 2: %v\n", strictErr)
	} else {
		fmt.Fprintf(w, "run --sandbox strict: %s\n", strictPlan)
	}
	fmt.Fprintf(w, "own files:     %s\n", own.Line)
	for _, l := range ps.lines() {
		fmt.Fprintln(w, l)
	}
	fmt.Fprintln(w, sd.line())
	return doctorVerdict(ps, sd)
}

// doctorVerdict is doctor's exit: 2 when run would stop on the policy set
// or the state directory.
func doctorVerdict(ps *policySetStatus, sd *stateDirStatus) error {
	if err := ps.verdict(); err != nil {
		return err
	}
	if sd.Refused {
		return badInput(fmt.Errorf("doctor: the state directory is refused: %s", sd.Error))
	}
	return nil
}

// stateDirStatus is doctor's view of the state directory, and so of the
// audit log in it: run refuses one that another user could change
// (statefile.CheckDir: it, or a directory above it).
type stateDirStatus struct {
	Dir     string `json:"dir"`
	Error   string `json:"error,omitempty"`
	Refused bool   `json:"refused,omitempty"`
}

func checkStateDir(home string) *stateDirStatus {
	dir, err := stateDir(home)
	if err != nil {
		return &stateDirStatus{Error: err.Error(), Refused: true}
	}
	s := &stateDirStatus{Dir: dir}
	switch err := statefile.CheckDir(dir); {
	case errors.Is(err, fs.ErrNotExist):
		s.Error = "not there yet (bouncer run makes it)"
	case err != nil:
		s.Error, s.Refused = err.Error(), true
	}
	return s
}

func (s *stateDirStatus) line() string {
	switch {
	case s.Refused:
		return fmt.Sprintf("state dir:     %s: refused: %s", s.Dir, s.Error)
	case s.Error != "":
		return fmt.Sprintf("state dir:     %s: %s", s.Dir, s.Error)
	}
	return fmt.Sprintf("state dir:     %s: yours, and no other user can change it or a directory above it", s.Dir)
}

// ownFilesStatus is which form keeps a server off Bouncer's own files here,
// as bouncer run would find it by trying.
type ownFilesStatus struct {
	Form string   `json:"form"`
	Why  []string `json:"why,omitempty"`
	Line string   `json:"line"`
}

func ownFilesLine() ownFilesStatus {
	form, why := sandbox.ProbeOwn()
	s := ownFilesStatus{Form: form.String(), Why: why}
	switch form {
	case sandbox.OwnNamespace:
		s.Line = "namespace: each server bouncer run starts gets namespaces of its own, where the state directory is hidden and the other own files are read-only"
	case sandbox.OwnLandlock:
		s.Line = "landlock: each server bouncer run starts gets a Landlock domain that grants everything around the own files"
	default:
		s.Line = "arguments: only the argument checks keep a server off the own files"
	}
	if len(why) > 0 {
		s.Line += ": " + strings.Join(why, "; ")
	}
	return s
}
