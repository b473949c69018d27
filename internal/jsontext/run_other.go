//go:build !amd64 || purego

package jsontext

// haveBlocks is false: runBlocks has no vector form on this architecture,
// and RunOf tests eight bytes at a time.
const haveBlocks = false

// runBlocks is never called here (haveBlocks is false).
func runBlocks(string, bool) int { return 0 }
