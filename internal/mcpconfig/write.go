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
func (c *Config) Write(data []byte) error {
	real, err := filepath.EvalSymlinks(c.Path)
	if err != nil {
		return fmt.Errorf("%s: %w", c.Path, err)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return fmt.Errorf("%s: %w", c.Path, err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s: not a regular file", c.Path)
	}
	cur, err := os.ReadFile(real)
	if err != nil {
		return fmt.Errorf("%s: %w", c.Path, err)
	}
	if !bytes.Equal(cur, c.data) {
		return fmt.Errorf("%s: changed since it was read; nothing written, run the command again", c.Path)
	}
	if err := writeAtomic(real+".bak", cur, fi); err != nil {
		return fmt.Errorf("backup %s.bak: %w", c.Path, err)
	}
	if err := writeAtomic(real, data, fi); err != nil {
		return fmt.Errorf("%s: %w", c.Path, err)
	}
	return nil
}

// writeAtomic writes data to path through a temporary file in the same
// directory, with like's mode and owner.
func writeAtomic(path string, data []byte, like os.FileInfo) error {
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
	if err := tmp.Chmod(like.Mode().Perm()); err != nil {
		return err
	}
	if st, isUnix := like.Sys().(*unixshim.SysStat); isUnix && int(st.Uid) != os.Getuid() {
		// Only root gets here with another user's file; keep it theirs.
		if err := tmp.Chown(int(st.Uid), int(st.Gid)); err != nil {
			return err
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
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync() // make the rename durable; not all filesystems support it
		d.Close()
	}
	return nil
}
