package main

// cmdAudit is not built yet.
func cmdAudit(args []string) int {
	errorf("audit: not implemented yet")
	return exitFail
}
