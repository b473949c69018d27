//go:build linux

// Package faultfs mounts a directory through FUSE, in the kernel, so that
// a test can make the disk fail: with FailSync set, every fsync and
// fdatasync of a file under the mount returns EIO, as a dying disk's
// does. Everything else passes through to the directory (go-fuse's
// loopback file system).
package faultfs

import (
	"context"
	"os"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/bouncer-mcp/bouncer/internal/testsupport/need"
)

// FS is a mounted fault file system.
type FS struct {
	// Dir is where it is mounted.
	Dir  string
	fail atomic.Bool
}

// FailSync makes every sync fail (true) or pass (false) from now on.
func (f *FS) FailSync(fail bool) { f.fail.Store(fail) }

// node is a loopback node whose Fsync fails on demand.
type node struct {
	*fs.LoopbackNode
	fs *FS
}

// WrapChild keeps every node below the root a node.
func (n *node) WrapChild(ctx context.Context, ops fs.InodeEmbedder) fs.InodeEmbedder {
	return &node{LoopbackNode: ops.(*fs.LoopbackNode), fs: n.fs}
}

// Fsync fails with EIO while FailSync is set.
func (n *node) Fsync(ctx context.Context, f fs.FileHandle, flags uint32) syscall.Errno {
	if n.fs.fail.Load() {
		return syscall.EIO
	}
	if s, ok := f.(fs.FileFsyncer); ok {
		return s.Fsync(ctx, flags)
	}
	return 0
}

// Mount mounts a fault file system over a new directory, backed by
// another, both removed when t ends. It needs /dev/fuse and root (or
// fusermount); without them it stops t (need.Missing).
func Mount(t testing.TB) *FS {
	t.Helper()
	if _, err := os.Stat("/dev/fuse"); err != nil {
		need.Missing(t, "/dev/fuse", "a kernel with FUSE and the device node /dev/fuse")
		return nil
	}
	backing, dir := t.TempDir(), t.TempDir()
	f := &FS{Dir: dir}
	root, err := fs.NewLoopbackRoot(backing)
	if err != nil {
		t.Fatal(err)
	}
	top := &node{LoopbackNode: root.(*fs.LoopbackNode), fs: f}
	srv, err := fs.Mount(dir, top, &fs.Options{MountOptions: fuse.MountOptions{
		DirectMount: os.Getuid() == 0,
		FsName:      "bouncer-faultfs",
		Name:        "faultfs",
	}})
	if err != nil {
		need.Missing(t, "a FUSE mount ("+err.Error()+")", "run as root, or install fuse3 for fusermount3")
		return nil
	}
	t.Cleanup(func() { _ = srv.Unmount() })
	return f
}
