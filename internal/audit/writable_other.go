//go:build !unix

package audit

// freeBytes has no statfs to ask here (Bouncer runs on Linux and macOS).
func freeBytes(string) (uint64, error) { return 0, errNoStatfs }
