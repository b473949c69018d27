//go:build !unix

package session

import "errors"

var errUnsupported = errors.New("not supported on this system")

func lockFile(path string) (func(), error)             { return nil, errUnsupported }
func replaceFile(path string, data []byte) error       { return errUnsupported }
func readOwned(path string, max int64) ([]byte, error) { return nil, errUnsupported }
