// Package unixshim is the part of golang.org/x/sys/unix that Bouncer's
// state files use (package statefile, the audit log, the client config
// writer and the sandbox probe), under the same names.
//
// On Unix every name is x/sys/unix's own: a type alias, the same constant,
// or a function that only calls it, so the packages importing this one
// behave exactly as if they imported x/sys/unix. Elsewhere (Windows) the
// names exist so that `bouncer` still builds there, and every call fails
// with ErrUnsupported: file locking, owner and mode checks are what keep
// the audit log and the approval codes trustworthy, and Bouncer does not
// have them on Windows. `bouncer run` and the commands that work with a
// running proxy refuse to start there (cmd/bouncer/platform_other.go).
package unixshim

import "errors"

// ErrUnsupported is what every call returns where there is no Unix.
var ErrUnsupported = errors.New("not supported without Unix: the audit log and approval codes need Unix file locking, ownership and permissions")
