package main

// cmdServe is not built yet.
func cmdServe(args []string) int {
	errorf("serve: not implemented yet")
	return exitFail
}
