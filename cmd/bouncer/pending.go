package main

// cmdPending is not built yet.
func cmdPending(args []string) int {
	errorf("pending: not implemented yet")
	return exitFail
}
