package main

// cmdApprove is not built yet.
func cmdApprove(args []string) int {
	errorf("approve: not implemented yet")
	return exitFail
}
