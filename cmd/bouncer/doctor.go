package main

// cmdDoctor is not built yet.
func cmdDoctor(args []string) int {
	errorf("doctor: not implemented yet")
	return exitFail
}
