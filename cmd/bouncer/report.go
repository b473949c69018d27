package main

// cmdReport is not built yet.
func cmdReport(args []string) int {
	errorf("report: not implemented yet")
	return exitFail
}
