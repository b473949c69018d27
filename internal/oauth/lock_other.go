//go:build !unix

package oauth

import "context"

// lockFile does nothing here: two processes may then refresh at once.
func lockFile(ctx context.Context, path string) (unlock func(), err error) {
	return func() {}, nil
}
