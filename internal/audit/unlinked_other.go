//go:build !unix

package audit

import "os"

// unlinked is never true where there is no Unix: bouncer run refuses to
// start there (the audit log needs file locking), so no Log appends.
func unlinked(*os.File) bool { return false }
