package main

// cmdSign is not built yet.
func cmdSign(args []string) int {
	errorf("sign: not implemented yet")
	return exitFail
}
