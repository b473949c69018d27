//go:build !unix

package session

import (
	"errors"

	"github.com/bouncer-mcp/bouncer/internal/taint"
)

type shared struct{}

func (d *shared) failed() bool                                     { return true }
func (d *shared) share(byte, string, *taint.Store)                 {}
func (d *shared) write(byte, string, []uint64)                     {}
func (d *shared) sync(func(kind byte, server string, hs []uint64)) {}
func (d *shared) publishOwn([]string) error                        { return nil }
func (d *shared) ownFiles() ([]string, uint64)                     { return nil, 0 }
func dirName(c Client) string                                      { return "" }

func openShared(dir string, log func(string)) (*shared, [taint.KeySize]byte, error) {
	return nil, [taint.KeySize]byte{}, errors.New("client sessions are not supported on this system")
}
