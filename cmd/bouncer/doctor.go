package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/bouncer-mcp/bouncer/internal/sandbox"
)

const doctorSynopsis = `bouncer doctor [--json] [--policy-dir DIR] [--trust FILE]

Shows what confinement this machine offers (Landlock, seccomp, user namespaces) and what
bouncer run --sandbox auto and strict would apply with it, which form keeps a server off
Bouncer's own files, and checks the installed policy set as bouncer run --policy-dir
would. Exits 2 when an installed set would stop run.`

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
	if *asJSON {
		out := struct {
			sandbox.Capabilities
			Auto        string           `json:"run_sandbox_auto"`
			Strict      string           `json:"run_sandbox_strict,omitempty"`
			StrictError string           `json:"run_sandbox_strict_error,omitempty"`
			OwnFiles    ownFilesStatus   `json:"own_files"`
			PolicySet   *policySetStatus `json:"policy_set"`
		}{Capabilities: c, Auto: auto, Strict: strictPlan, OwnFiles: own, PolicySet: ps}
		if strictErr != nil {
			out.StrictError = strictErr.Error()
		}
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			return failed(fmt.Errorf("doctor: %v", err))
		}
		return ps.verdict()
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
	return ps.verdict()
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
