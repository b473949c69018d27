//go:build !unix

package transport

import (
	"syscall"

	"github.com/bouncer-mcp/bouncer/internal/unixshim"
)

// kill has no process groups to signal here; bouncer run refuses to start
// on systems without Unix (cmd/bouncer/platform_other.go), so nothing calls it.
func kill(int, syscall.Signal) error { return unixshim.ErrUnsupported }
