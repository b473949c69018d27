package main

// cmdCheck is not built yet.
func cmdCheck(args []string) int {
	errorf("check: not implemented yet")
	return exitFail
}
