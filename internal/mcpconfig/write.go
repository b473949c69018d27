package mcpconfig

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"github.com/bouncer-mcp/bouncer/internal/unixshim"
)

// Write replaces the config file with data. It first keeps the bytes it
// replaces as FILE.bak, then writes a temporary file in the same directory,
// fsyncs it and renames it over the file, so a crash leaves either the old
// or the new config, never half of one. Both files get the original's mode
// (and owner, where we may set it). A symlinked config is written through
// to its target, so dotfile managers keep their link.
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
	if err := writeAtomic(real+".bak", cur, fi.Mode().Perm(), fi); err != nil {
		return fmt.Errorf("backup %s.bak: %w", path, err)
	}
	if err := writeAtomic(real, data, fi.Mode().Perm(), fi); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// Create writes a new file at path with mode perm, atomically, creating
// its directory (0700 when it is the user's, see dirPerm) if needed. It
// refuses a path that exists by then: someone else made it meanwhile.
func Create(path string, data []byte, perm, dirPerm os.FileMode) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, dirPerm); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if _, err := os.Lstat(path); err == nil {
		return fmt.Errorf("%s: appeared since it was read; nothing written, run the command again", path)
	}
	// The rename below would replace a file created in between; a hard
	// link does not, so the new file is linked into place instead.
	tmp := path + ".bouncer-new"
	if err := writeAtomic(tmp, data, perm, nil); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	defer os.Remove(tmp)
	if err := os.Link(tmp, path); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	syncDir(dir)
	return nil
}

// writeAtomic writes data to path through a temporary file in the same
// directory, with mode perm and like's owner (when like is not nil).
func writeAtomic(path string, data []byte, perm os.FileMode, like os.FileInfo) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	name := tmp.Name()
	ok := false
	defer func() {
		if !ok {
			tmp.Close()
			os.Remove(name)
		}
	}()
	if err := tmp.Chmod(perm); err != nil {
		return err
	}
	if like != nil {
		if st, isUnix := like.Sys().(*unixshim.SysStat); isUnix && int(st.Uid) != os.Getuid() {
			// Only root gets here with another user's file; keep it theirs.
			if err := tmp.Chown(int(st.Uid), int(st.Gid)); err != nil {
				return err
			}
		}
	}
	if _, err := tmp.Write(data); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(name, path); err != nil {
		return err
	}
	ok = true
	syncDir(dir)
	return nil
}

// syncDir makes a rename or link in dir durable; not all filesystems
// support it, so failure is not an error.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}
