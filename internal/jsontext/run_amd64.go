//go:build amd64 && !purego

package jsontext

import "golang.org/x/sys/cpu"

// haveBlocks says runBlocks can run here: it needs AVX2.
var haveBlocks = cpu.X86.HasAVX2

// runBlocks returns the index of s's first byte that stops a run, as RunOf
// defines it, looking at whole 32-byte blocks only: len(s) rounded down to
// a multiple of 32 when none of them holds one. (run_amd64.s)
//
//go:noescape
func runBlocks(s string, ascii bool) int
