//go:build linux

// Package smallfs gives a test a real file system that fills up: a tmpfs
// of a few megabytes, mounted in a user and mount namespace of the test's
// own, so that a full disk (ENOSPC from write(2), statfs saying so) is the
// kernel's and not a mock's, without root and without touching the
// machine's mounts.
package smallfs

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/bouncer-mcp/bouncer/internal/testsupport/need"
)

// envChild names the test a child process runs in its namespaces, and
// envSize the size of its tmpfs.
const (
	envChild = "BOUNCER_SMALLFS_TEST"
	envSize  = "BOUNCER_SMALLFS_SIZE"
)

// Dir runs the calling test again, alone, in a child process with a user
// and mount namespace of its own, in which the directory Dir returns is a
// tmpfs of size bytes, empty, mode 0700, owned by the test's user (root in
// the namespace, which maps to it). In that
// child Dir returns (dir, true) and the test goes on there. In the parent
// it waits for the child, copies its output to the log, fails the test
// when the child failed, and returns ("", false): the caller returns.
func Dir(t *testing.T, size int) (string, bool) {
	t.Helper()
	if os.Getenv(envChild) == t.Name() {
		dir := t.TempDir()
		opts := "size=" + strconv.Itoa(size) + ",mode=0700"
		if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
			t.Fatalf("mounting a %d-byte tmpfs on %s in the test's mount namespace: %v", size, dir, err)
		}
		// Cleanups run last in, first out: the tmpfs goes before TempDir
		// removes its mount point.
		t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
		return dir, true
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(t.Name(), "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	cmd := exec.Command(self, "-test.run="+strings.Join(parts, "/"), "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), envChild+"="+t.Name(), envSize+"="+strconv.Itoa(size))
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:                 syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS,
		UidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
		GidMappingsEnableSetgroups: false,
	}
	out, err := cmd.CombinedOutput()
	if err != nil && len(out) == 0 {
		need.Missing(t, "user and mount namespaces ("+err.Error()+")", "allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, user.max_user_namespaces > 0)")
		return "", false
	}
	t.Logf("the test in its own mount namespace, with a %d-byte tmpfs:\n%s", size, out)
	if err != nil {
		t.Fatalf("the test failed in its namespace: %v", err)
	}
	if !strings.Contains(string(out), "--- PASS: "+t.Name()) {
		t.Fatalf("the child did not run %s", t.Name())
	}
	return "", false
}

// Fill writes a file in dir until its file system is full (ENOSPC) and
// returns the file's path: removing it frees the space again.
func Fill(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 64<<10)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("filling %s: %v", dir, err)
			}
			return path
		}
	}
}
