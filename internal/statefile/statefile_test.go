//go:build unix

package statefile

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// foreignFile returns a regular file, readable, that another user owns:
// as root, one made in dir and given to nobody (uid 65534); as anyone
// else, root's /etc/passwd. Neither needs a skip.
func foreignFile(t *testing.T, dir string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		return "/etc/passwd"
	}
	p := filepath.Join(dir, "theirs.json")
	write(t, p, "data", 0o644)
	if err := os.Chown(p, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	return p
}

// foreignDir is foreignFile for a directory (as anyone but root: /).
func foreignDir(t *testing.T, dir string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		return "/"
	}
	p := filepath.Join(dir, "theirs")
	mkdir(t, p, 0o700)
	if err := os.Chown(p, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	return p
}

// What another user owns is refused by ReadOwned and Dir, and read by
// ReadCapped, which checks no owner.
func TestAnotherUsers(t *testing.T) {
	dir := t.TempDir()
	f := foreignFile(t, dir)
	if b, err := ReadOwned(f, 1<<20); err == nil || !strings.Contains(err.Error(), "not by this user") || !errors.Is(err, ErrUntrusted) || b != nil {
		t.Errorf("ReadOwned(%s): %q, %v", f, b, err)
	}
	if _, err := ReadCapped(f, 1<<20); err != nil {
		t.Errorf("ReadCapped(%s): %v", f, err)
	}
	if _, err := ReadCapped(f, 3); !errors.Is(err, ErrTooLarge) {
		t.Errorf("ReadCapped(%s) over the limit: %v", f, err)
	}
	d := foreignDir(t, dir)
	if err := Dir(d); err == nil || !strings.Contains(err.Error(), "not by this user") {
		t.Errorf("Dir(%s): %v", d, err)
	}
}

// write makes a real file with mode set exactly (whatever the umask).
func write(t *testing.T, path, content string, mode fs.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

// ReadOwned trusts a regular file of this user that others can't write,
// and refuses everything else whole, with a reason and what to do.
func TestReadOwned(t *testing.T) {
	for _, c := range []struct {
		name  string
		setup func(t *testing.T, path string)
		max   int64
		want  string // "" = read; else a part of the error
		is    error  // the error wraps this, when set
	}{
		{"private", func(t *testing.T, p string) { write(t, p, "data", 0o600) }, 100, "", nil},
		{"readable by others", func(t *testing.T, p string) { write(t, p, "data", 0o644) }, 100, "", nil},
		{"exactly max", func(t *testing.T, p string) { write(t, p, "data", 0o600) }, 4, "", nil},
		{"group writable", func(t *testing.T, p string) { write(t, p, "data", 0o620) },
			100, "mode 0620 lets other users write it, so nothing in it is trusted; remove it or run: chmod 600 ", ErrUntrusted},
		{"world writable", func(t *testing.T, p string) { write(t, p, "data", 0o606) },
			100, "mode 0606 lets other users write it", ErrUntrusted},
		{"symlink to a good file", func(t *testing.T, p string) {
			write(t, p+".real", "data", 0o600)
			if err := os.Symlink(p+".real", p); err != nil {
				t.Fatal(err)
			}
		}, 100, "a symbolic link, which Bouncer does not follow", ErrUntrusted},
		{"directory", func(t *testing.T, p string) {
			if err := os.Mkdir(p, 0o700); err != nil {
				t.Fatal(err)
			}
		}, 100, "not a regular file", ErrUntrusted},
		{"fifo, without waiting for a writer", func(t *testing.T, p string) {
			if err := syscall.Mkfifo(p, 0o600); err != nil {
				t.Fatal(err)
			}
		}, 100, "not a regular file", ErrUntrusted},
		{"one byte over the limit", func(t *testing.T, p string) { write(t, p, "data!", 0o600) },
			4, "larger than 4 bytes", ErrTooLarge},
		{"missing", func(t *testing.T, p string) {}, 100, "no such file", fs.ErrNotExist},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "state.json")
			c.setup(t, p)
			done := make(chan struct{})
			var b []byte
			var err error
			go func() { b, err = ReadOwned(p, c.max); close(done) }()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("ReadOwned did not return")
			}
			if c.want == "" {
				if err != nil || string(b) != "data" {
					t.Fatalf("got %q, %v; want the file's content", b, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %q, %v; want an error with %q", b, err, c.want)
			}
			if b != nil {
				t.Errorf("a refused file gave %q", b)
			}
			if c.is != nil && !errors.Is(err, c.is) {
				t.Errorf("%v does not wrap %v", err, c.is)
			}
		})
	}
}

// ReadCapped refuses what is not a regular file.
func TestReadCappedType(t *testing.T) {
	if _, err := ReadCapped(t.TempDir(), 100); !errors.Is(err, ErrUntrusted) {
		t.Errorf("a directory: %v", err)
	}
}

// CheckPrivate refuses what others may read too; Check only what they
// may write.
func TestCheckPrivate(t *testing.T) {
	for _, c := range []struct {
		mode          fs.FileMode
		check, secret string // "" = accepted
	}{
		{0o600, "", ""},
		{0o400, "", ""},
		{0o640, "", "mode 0640 lets other users read or write it; run: chmod 600 "},
		{0o604, "", "mode 0604 lets other users read or write it"},
		{0o660, "mode 0660 lets other users write it", "mode 0660 lets other users read or write it"},
	} {
		p := filepath.Join(t.TempDir(), "audit.jsonl")
		write(t, p, "x", c.mode)
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range []struct {
			fn   func(*os.File) error
			want string
		}{{Check, c.check}, {CheckPrivate, c.secret}} {
			err := k.fn(f)
			if (k.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), k.want)) {
				t.Errorf("mode %04o: %v, want %q", c.mode, err, k.want)
			}
		}
		f.Close()
	}
}

// Dir makes a missing directory 0700 and refuses one that other users may
// write or that is another user's.
func TestDir(t *testing.T) {
	for _, c := range []struct {
		name  string
		setup func(t *testing.T, dir string)
		want  string
	}{
		{"missing, with a missing parent", func(t *testing.T, d string) {}, ""},
		{"existing 0755", func(t *testing.T, d string) { mkdir(t, d, 0o755) }, ""},
		{"group writable", func(t *testing.T, d string) { mkdir(t, d, 0o775) }, "mode 0775 lets other users write in it, so what Bouncer keeps in it could be removed or replaced; run: chmod 700 "},
		{"world writable", func(t *testing.T, d string) { mkdir(t, d, 0o777) }, "lets other users write in it"},
		{"a file", func(t *testing.T, d string) {
			mkdir(t, filepath.Dir(d), 0o700)
			write(t, d, "", 0o600)
		}, "not a directory"},
		{"a link to a good directory", func(t *testing.T, d string) {
			mkdir(t, d+".real", 0o700)
			if err := os.Symlink(d+".real", d); err != nil {
				t.Fatal(err)
			}
		}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := filepath.Join(t.TempDir(), "home", "state")
			c.setup(t, d)
			err := Dir(d)
			if c.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				fi, err := os.Stat(d)
				if err != nil || !fi.IsDir() {
					t.Fatalf("%v %v", fi, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("%v, want %q", err, c.want)
			}
		})
	}
}

func mkdir(t *testing.T, d string, mode fs.FileMode) {
	t.Helper()
	if err := os.MkdirAll(d, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(d, mode); err != nil {
		t.Fatal(err)
	}
}

// A missing state directory is made 0700, whatever the umask lets
// through, and its missing parents too.
func TestDirMode(t *testing.T) {
	d := filepath.Join(t.TempDir(), "a", "b")
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	if err := Dir(d); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{d, filepath.Dir(d)} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: %v %v, want 0700", p, fi.Mode(), err)
		}
	}
}

// Write replaces a file whole, 0600, and leaves no temporary file.
func TestWrite(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "pending.json")
	write(t, p, "old", 0o644)
	if err := Write(p, []byte("new")); err != nil {
		t.Fatal(err)
	}
	assertFile(t, p, "new", 0o600)
	assertOnly(t, dir, "pending.json")

	// WriteMode sets the mode whatever the umask.
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	b := filepath.Join(dir, "team.yaml.sigstore.json")
	if err := WriteMode(b, []byte("bundle"), 0o644); err != nil {
		t.Fatal(err)
	}
	assertFile(t, b, "bundle", 0o644)

	// A directory that isn't there: an error, and nothing made.
	if err := Write(filepath.Join(dir, "no", "x.json"), []byte("x")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing directory: %v", err)
	}
	assertOnly(t, dir, "pending.json", "team.yaml.sigstore.json")
}

// A crash or a failure before the rename leaves the old content, whole,
// and no temporary file; when the rename happens, the new file is already
// complete, flushed and 0600.
func TestWriteFailsWhole(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "remembered.json")
	write(t, p, "old content", 0o600)
	var atRename []byte
	var atRenameMode fs.FileMode
	rename = func(from, to string) error {
		atRename, _ = os.ReadFile(from)
		if fi, err := os.Stat(from); err == nil {
			atRenameMode = fi.Mode().Perm()
		}
		return &os.LinkError{Op: "rename", Old: from, New: to, Err: syscall.EIO}
	}
	defer func() { rename = os.Rename }()
	err := Write(p, []byte("new content, longer than the old"))
	if !errors.Is(err, syscall.EIO) {
		t.Fatalf("got %v, want the rename's error", err)
	}
	if string(atRename) != "new content, longer than the old" || atRenameMode != 0o600 {
		t.Errorf("at the rename the new file held %q, mode %04o", atRename, atRenameMode)
	}
	assertFile(t, p, "old content", 0o600)
	assertOnly(t, dir, "remembered.json")
}

// Create makes a file once: a second Create fails and leaves the first
// content. CreateMode does the same with the mode it is given, whatever
// the umask.
func TestCreate(t *testing.T) {
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	for _, c := range []struct {
		name   string
		create func(path string, data []byte) error
		mode   fs.FileMode
	}{
		{"Create", Create, 0o600},
		{"CreateMode", func(p string, b []byte) error { return CreateMode(p, b, 0o644) }, 0o644},
	} {
		dir := t.TempDir()
		p := filepath.Join(dir, "key")
		if err := c.create(p, []byte("first")); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if err := c.create(p, []byte("second")); !errors.Is(err, fs.ErrExist) {
			t.Fatalf("second %s: %v, want it to exist", c.name, err)
		}
		assertFile(t, p, "first", c.mode)
		assertOnly(t, dir, "key")
	}
}

// WriteLike replaces a user's file (a client's config) keeping its mode
// whatever the umask, and its owner and group: as root, the file of
// another user (nobody, 65534) stays theirs, and so does a backup made
// like it. As anyone else the file is their own, kept so.
func TestWriteLike(t *testing.T) {
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	dir := t.TempDir()
	p := filepath.Join(dir, ".mcp.json")
	write(t, p, "old", 0o640)
	uid, gid := os.Getuid(), os.Getgid()
	if uid == 0 {
		uid, gid = 65534, 65534
		if err := os.Chown(p, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteLike(p+".bak", []byte("old"), fi); err != nil {
		t.Fatal(err)
	}
	if err := WriteLike(p, []byte("new"), fi); err != nil {
		t.Fatal(err)
	}
	assertFile(t, p, "new", 0o640)
	assertFile(t, p+".bak", "old", 0o640)
	for _, f := range []string{p, p + ".bak"} {
		var st syscall.Stat_t
		if err := syscall.Stat(f, &st); err != nil || int(st.Uid) != uid || int(st.Gid) != gid {
			t.Errorf("%s: owner %d:%d (%v), want %d:%d", f, st.Uid, st.Gid, err, uid, gid)
		}
	}
	assertOnly(t, dir, ".mcp.json", ".mcp.json.bak")
}

func assertFile(t *testing.T, p, content string, mode fs.FileMode) {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil || string(b) != content {
		t.Errorf("%s: %q, %v; want %q", p, b, err, content)
	}
	if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != mode {
		t.Errorf("%s: mode %v, %v; want %04o", p, fi.Mode(), err, mode)
	}
}

// assertOnly checks dir holds exactly names: no temporary file was left.
func assertOnly(t *testing.T, dir string, names ...string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range ents {
		got = append(got, e.Name())
	}
	if strings.Join(got, " ") != strings.Join(names, " ") {
		t.Errorf("%s holds %v, want %v", dir, got, names)
	}
}

// Lock excludes other holders until unlock; TryLock and LockContext say
// so instead of waiting forever; LockOpen's shared locks exclude an
// exclusive one. Each open file is its own holder, as another process's
// would be.
func TestLock(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "pending.json.lock")
	unlock, err := Lock(p)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("lock file: %v %v, want 0600", fi, err)
	}
	if _, err := TryLock(p); !errors.Is(err, ErrLocked) {
		t.Errorf("TryLock while held: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := LockContext(ctx, p); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("LockContext while held: %v", err)
	}
	got := make(chan func())
	go func() {
		u, err := Lock(p)
		if err != nil {
			t.Error(err)
		}
		got <- u
	}()
	select {
	case <-got:
		t.Fatal("a second Lock did not wait")
	case <-time.After(100 * time.Millisecond):
	}
	unlock()
	select {
	case u := <-got:
		u()
	case <-time.After(5 * time.Second):
		t.Fatal("a second Lock was not granted after unlock")
	}
	u, err := LockContext(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	u()

	// Shared locks on an open file: two at once, and no exclusive one.
	f1, _ := os.Open(p)
	f2, _ := os.Open(p)
	defer f1.Close()
	defer f2.Close()
	u1, err1 := LockOpen(f1, true)
	u2, err2 := LockOpen(f2, true)
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	if _, err := TryLock(p); !errors.Is(err, ErrLocked) {
		t.Errorf("TryLock under shared locks: %v", err)
	}
	u1()
	u2()
	u, err = TryLock(p)
	if err != nil {
		t.Fatalf("TryLock after the shared locks: %v", err)
	}
	u()

	// A lock file is never opened through a symbolic link.
	l := filepath.Join(dir, "link.lock")
	if err := os.Symlink(filepath.Join(dir, "elsewhere"), l); err != nil {
		t.Fatal(err)
	}
	if _, err := Lock(l); err == nil {
		t.Error("Lock followed a symbolic link")
	}
	if _, err := os.Lstat(filepath.Join(dir, "elsewhere")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Lock made the link's target: %v", err)
	}
}

// The messages name what to do with the path they are about, and nothing
// of the file's content.
func TestRefusalNamesFix(t *testing.T) {
	p := filepath.Join(t.TempDir(), "pending.json")
	write(t, p, "secret", 0o666)
	_, err := ReadOwned(p, 100)
	if err == nil || !strings.HasSuffix(err.Error(), "chmod 600 "+p) || bytes.Contains([]byte(err.Error()), []byte("secret")) {
		t.Errorf("%v", err)
	}
}

// openWithin runs open in the background and fails the test if it has not
// returned within a few seconds: a FIFO opened the blocking way never
// returns, and the test must not hang with it.
func openWithin(t *testing.T, open func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- open() }()
	select {
	case err := <-done:
		return err
	case <-time.After(5 * time.Second):
		t.Fatal("the open is still waiting after 5s (on a FIFO with no writer)")
		return nil
	}
}

// A FIFO, a directory and a device are refused at once, by every way
// Bouncer opens a file by name: to read, to append, through a symbolic
// link. None waits for the FIFO's other end.
func TestOpenRefusesSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "headers")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(fifo, link); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path, want string
	}{
		{fifo, "named pipe (FIFO)"},
		{link, "named pipe (FIFO)"},
		{dir, "a directory"},
		{"/dev/null", "a device"},
	} {
		for name, open := range map[string]func() error{
			"Open":     func() error { f, err := Open(c.path); f.Close(); return err },
			"ReadFile": func() error { _, err := ReadFile(c.path, 100); return err },
			"append": func() error {
				f, err := OpenFile(c.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
				f.Close()
				return err
			},
			"ReadOwned":  func() error { _, err := ReadOwned(c.path, 100); return err },
			"ReadCapped": func() error { _, err := ReadCapped(c.path, 100); return err },
		} {
			err := openWithin(t, open)
			if c.path == link && (name == "ReadOwned" || name == "ReadCapped") {
				// Bouncer's own files: the link itself is refused.
				if err == nil || !strings.Contains(err.Error(), "symbolic link") {
					t.Errorf("%s(%s): %v", name, c.path, err)
				}
				continue
			}
			if !errors.Is(err, ErrUntrusted) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s(%s): %v, want %q", name, c.path, err, c.want)
			}
		}
	}
	// A regular file, through a link, reads.
	p := filepath.Join(dir, "policy.yaml")
	write(t, p, "x: 1\n", 0o644)
	os.Symlink(p, filepath.Join(dir, "plink"))
	if b, err := ReadFile(filepath.Join(dir, "plink"), 100); err != nil || string(b) != "x: 1\n" {
		t.Errorf("ReadFile through a link: %q %v", b, err)
	}
	if _, err := ReadFile(p, 3); !errors.Is(err, ErrTooLarge) {
		t.Errorf("ReadFile over the limit: %v", err)
	}
}

// A directory another user can write, or that another user (not root)
// owns, is refused, itself or above the path, naming it and the fix; a
// sticky directory that others can write (/tmp) is fine above it.
func TestCheckShared(t *testing.T) {
	base := t.TempDir()
	okDir := filepath.Join(base, "ok", "policy")
	mkdir(t, okDir, 0o755)
	if err := CheckShared(okDir); err != nil {
		t.Errorf("a directory of this user's, 0755, under /tmp: %v", err)
	}
	hw := filepath.Join(okDir, "high-water.json")
	write(t, hw, "{}", 0o644)
	if err := CheckShared(hw); err != nil {
		t.Errorf("a file of this user's, 0644: %v", err)
	}

	open := filepath.Join(base, "open")
	mkdir(t, open, 0o777)
	if err := CheckShared(open); err == nil || !strings.Contains(err.Error(), open+": mode 0777 lets other users write in it") || !strings.HasSuffix(err.Error(), "chmod go-w "+open) {
		t.Errorf("a 0777 directory: %v", err)
	}
	below := filepath.Join(open, "policy")
	mkdir(t, below, 0o755)
	if err := CheckShared(below); err == nil || !strings.Contains(err.Error(), open+", a directory above "+below+": mode 0777") {
		t.Errorf("under a 0777 directory: %v", err)
	}
	if err := Dir(filepath.Join(open, "state")); err == nil || !strings.Contains(err.Error(), "a directory above") {
		t.Errorf("Dir under a 0777 directory: %v", err)
	}
	group := filepath.Join(base, "group")
	mkdir(t, group, 0o775)
	if err := CheckShared(filepath.Join(group)); err == nil || !strings.Contains(err.Error(), "mode 0775") {
		t.Errorf("a group-writable directory: %v", err)
	}
	writable := filepath.Join(okDir, "w.json")
	write(t, writable, "{}", 0o666)
	if err := CheckShared(writable); err == nil || !strings.Contains(err.Error(), "mode 0666 lets other users write it") {
		t.Errorf("a 0666 file: %v", err)
	}

	// Sticky and open to all, as /tmp: others can't rename what is ours.
	stickyDir := filepath.Join(base, "sticky")
	mkdir(t, stickyDir, 0o777|fs.ModeSticky)
	in := filepath.Join(stickyDir, "policy")
	mkdir(t, in, 0o755)
	if err := CheckShared(in); err != nil {
		t.Errorf("under a sticky directory: %v", err)
	}
	// Reached through a link in a safe place, to a bad one: the target's
	// directories are checked too.
	ln := filepath.Join(okDir, "ln")
	os.Symlink(below, ln)
	if err := CheckShared(ln); err == nil || !strings.Contains(err.Error(), open+", a directory above") {
		t.Errorf("through a link: %v", err)
	}

	if os.Geteuid() == 0 {
		theirs := foreignDir(t, base)
		os.Chmod(theirs, 0o755)
		sub := filepath.Join(theirs, "policy")
		mkdir(t, sub, 0o755)
		if err := CheckShared(sub); err == nil || !strings.Contains(err.Error(), theirs+", a directory above "+sub+": owned by uid 65534, neither by this user (uid 0) nor by root") {
			t.Errorf("under another user's directory: %v", err)
		}
	}
}
