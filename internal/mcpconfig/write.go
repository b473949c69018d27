package mcpconfig

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/bouncer-mcp/bouncer/internal/statefile"
)

// Write replaces the config file with data. It first keeps the bytes it
// replaces as FILE.bak, then replaces the file whole (statefile.WriteLike:
// a temporary file flushed and renamed over it), so a crash leaves either
// the old or the new config, never half of one. Both files get the
// original's mode (and owner, where we may set it). A symlinked config is
// written through to its target, so dotfile managers keep their link.
//
// If the file changed since Load read it, nothing is written: the user (or
// their client) edited it meanwhile and the rewrite would undo that.
func (c *Config) Write(data []byte) error { return Replace(c.Path, c.data, data) }

// Replace writes data over the file at path, as Config.Write does, provided
// it still holds old: FILE.bak keeps old, the file's mode and owner are
// kept, and a symlink is written through.
func Replace(path string, old, data []byte) error {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s: not a regular file", path)
	}
	cur, err := os.ReadFile(real)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if !bytes.Equal(cur, old) {
		return fmt.Errorf("%s: changed since it was read; nothing written, run the command again", path)
	}
	if err := statefile.WriteLike(real+".bak", cur, fi); err != nil {
		return fmt.Errorf("backup %s.bak: %w", path, err)
	}
	if err := statefile.WriteLike(real, data, fi); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// Create writes a new file at path with mode perm, whole, creating its
// directory (0700 when it is the user's, see dirPerm) if needed. It
// refuses a path that exists by then: someone else made it meanwhile.
// The file is linked into place (statefile.CreateMode), which, unlike a
// rename, does not replace a file created in between.
func Create(path string, data []byte, perm, dirPerm os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), dirPerm); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := statefile.CreateMode(path, data, perm); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%s: appeared since it was read; nothing written, run the command again", path)
		}
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
