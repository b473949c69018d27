//go:build !race

package taint

// raceEnabled: the race detector makes sync.Pool drop items on purpose.
const raceEnabled = false
