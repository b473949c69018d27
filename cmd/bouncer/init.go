package main

// cmdInit is not built yet.
func cmdInit(args []string) int {
	errorf("init: not implemented yet")
	return exitFail
}
