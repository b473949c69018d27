package main

import (
	"fmt"
	"os"
)

// cmdPolicy dispatches the policy verbs. push and pull (policy as an OCI
// artifact) are in policy_oci.go.
func cmdPolicy(args []string) int {
	if len(args) == 0 {
		return usageError("policy: give push or pull; see bouncer policy --help")
	}
	switch args[0] {
	case "-h", "-help", "--help":
		fmt.Fprintf(os.Stdout, "Usage: %s\n", policySynopsis)
		return exitOK
	case "push":
		return policyPush(args[1:])
	case "pull":
		return policyPull(args[1:])
	}
	return usageError(fmt.Sprintf("policy: unknown %q; give push or pull", args[0]))
}
