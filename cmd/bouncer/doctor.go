package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/bouncer-mcp/bouncer/internal/sandbox"
)

const doctorSynopsis = `bouncer doctor [--json] [--policy-dir DIR]`

// cmdDoctor shows what confinement this machine offers and what
// `bouncer run --sandbox auto` (and strict) would do with it.
func cmdDoctor(args []string) int {
	fs, home := newFlags("doctor", doctorSynopsis)
	asJSON := fs.Bool("json", false, "print one JSON object instead of text")
	policyDir := fs.String("policy-dir", "", "the policy install `DIR` to show (default $BOUNCER_HOME/policy)")
	if done, status := parseFlags(fs, args); done {
		return status
	}
	if fs.NArg() > 0 {
		return usageError("doctor takes no arguments")
	}
	c := sandbox.Probe()
	auto, _ := c.Plan(sandbox.Auto)
	strictPlan, strictErr := c.Plan(sandbox.Strict)
	if *asJSON {
		out := struct {
			sandbox.Capabilities
			Auto        string           `json:"run_sandbox_auto"`
			Strict      string           `json:"run_sandbox_strict,omitempty"`
			StrictError string           `json:"run_sandbox_strict_error,omitempty"`
			PolicySet   *policySetStatus `json:"policy_set"`
		}{Capabilities: c, Auto: auto, Strict: strictPlan, PolicySet: policySet(*home, *policyDir)}
		if strictErr != nil {
			out.StrictError = strictErr.Error()
		}
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			errorf("doctor: %v", err)
			return exitFail
		}
		return exitOK
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
	for _, l := range policySet(*home, *policyDir).lines() {
		fmt.Fprintln(w, l)
	}
	return exitOK
}
