package main

// cmdVerify is not built yet.
func cmdVerify(args []string) int {
	errorf("verify: not implemented yet")
	return exitFail
}
