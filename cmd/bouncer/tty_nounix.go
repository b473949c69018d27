//go:build !unix

package main

import "os"

// flushTypeAhead: nothing to flush where the commands that ask questions
// refuse to run (platform_other.go).
func flushTypeAhead(*os.File) {}
