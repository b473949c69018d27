package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/bouncer-mcp/bouncer/internal/filepos"
)

// The exit statuses the contract fixes.
const (
	exitOK    = 0
	exitFail  = 1 // the command ran and refused or failed
	exitUsage = 2 // bad usage, bad input file, bad configuration
)

// exitError is an error that carries its exit status. Commands return
// errors; finish turns them into the status and the one line on stderr,
// so the statuses are decided here, not at each return.
type exitError struct {
	status int
	err    error // nil: already said, nothing more to print
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.status)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// usageErr is bad usage: a flag or argument the command does not take.
func usageErr(format string, a ...any) error {
	return &exitError{exitUsage, fmt.Errorf(format, a...)}
}

// badInput is a bad input file or configuration: a policy, trust file,
// client config or session the command was given.
func badInput(err error) error { return &exitError{exitUsage, err} }

// failed is the command running and refusing or failing.
func failed(err error) error { return &exitError{exitFail, err} }

// silently ends with status, the reason already said.
func silently(status int) error { return &exitError{status: status} }

// status is the exit status of a command's outcome: 0 for nil, the
// status an exitError carries, 2 for a problem in a policy, trust or
// client config file (which name the file and line), and 1 otherwise.
func status(err error) int {
	var ee *exitError
	var fe *filepos.Error // a policy, trust or client config file's problem
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ee):
		return ee.status
	case errors.As(err, &fe):
		return exitUsage
	}
	return exitFail
}

// finish says what went wrong, once, as "bouncer: ..." on stderr, and
// returns the exit status.
func finish(err error) int {
	var ee *exitError
	if err != nil && !(errors.As(err, &ee) && ee.err == nil) {
		fmt.Fprintf(os.Stderr, "bouncer: %v\n", err)
	}
	return status(err)
}
