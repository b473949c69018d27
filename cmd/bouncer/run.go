package main

// cmdRun is not built yet.
func cmdRun(args []string) int {
	errorf("run: not implemented yet")
	return exitFail
}
