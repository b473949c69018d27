// Package statefile is the one way Bouncer writes, reads back, locks and
// checks its own files: those in the state directory (pending approvals,
// remembered destinations, OAuth tokens, shipping cursors, pinned tool
// lists, the client session's key, what init added to a hook file) and
// the few it writes for the user (a bundle beside a signed file, a review
// pack, an installed policy set's high-water mark, the client configs,
// hook files and policy files `bouncer init` writes), which are replaced
// the same way.
//
// # Writing: one durability
//
// Write replaces a file whole: a temporary file in the same directory,
// created 0600, written, flushed to disk (fsync), renamed over the old
// name, and then the directory flushed (fsync) so that the rename itself
// is on disk. When Write returns nil the new content is on disk under its
// name and survives a crash or a power loss. Whatever happens before that,
// a reader (and the file after a crash) sees the old content or the new
// content, never half of one, and a failed Write leaves no temporary file
// behind. An error from the directory's flush is returned too: the new
// content is then in place but may not survive a power loss, and every
// caller treats an error as "may or may not be replaced" (it denies, or it
// says the change may not have been kept). A file system that cannot flush
// a directory at all (EINVAL, ENOTSUP) is taken as it is. Create is the
// same for a file made once and never replaced (the session's key). Before
// this package the copies kept four levels: no flush at all (pinned tool
// lists), the file but not the directory (the review pack), the
// directory's flush tried and its error ignored (approvals, remembered
// destinations, tokens, cursors, bundles, the clients' configs init
// rewrites), and both checked (an installed policy set's mark). The last
// is the one kept, for every file.
//
// # Reading back: what vouches for a file
//
// A state file decides things: which destinations were vouched for,
// which codes a human approved, whose tokens are sent, where shipping
// resumes. ReadOwned trusts a file only if it is a regular file (not a
// symbolic link, which is never followed: Bouncer never links its own
// files), owned by this user (the effective uid), and that no other user
// may write (no group or world write bit): a state file another user can
// write vouches for nothing, so it is refused, never repaired behind the
// user's back. It reads at most max bytes and refuses a longer file whole:
// a file read in part would read as another one. CheckPrivate is the same
// check with read access refused too, for files that hold secrets or full
// call arguments (the audit log); Check is ReadOwned's check on a file
// already open. Before this package one copy read tokens with no check at
// all (it only set 0600 again) and cursors and pinned lists unchecked.
//
// # Opening a file a person names
//
// OpenFile (and Open, ReadFile) is the one way Bouncer opens a file by
// name, its own or one a person named (a policy or trust file, a key, a
// --header-file, a --record file, the audit log and its head): it accepts
// a regular file only, and never waits on anything else. A FIFO would
// hang the open until someone opened its other end; so the name is
// stat'ed first, the open is non-blocking, and the open file is checked
// again. Owners and modes are then the caller's to check (Check,
// CheckPrivate), as each file's trust requires.
//
// # Directories
//
// Dir creates a directory 0700 (with its missing parents) and refuses one
// that is not this user's or that other users may write: they could remove
// or rename what Bouncer keeps there. It follows a symbolic link to the
// directory (a state directory kept elsewhere and linked is a user's
// choice); what it checks is the directory itself, and every directory
// above it (above the name, and above what the name resolves to): each
// must be this user's or root's, and not writable by group or others
// unless it is sticky (/tmp), or whoever can write there could rename the
// state directory away and put their own in its place. CheckShared is the
// same check for a directory or file that other users may read and only
// this user or root may change (a policy set installed for a team, its
// high-water mark). As with ssh's checks, a group-writable directory is
// refused even where the group is the user's own.
//
// # Locks
//
// Lock, TryLock and LockContext take an exclusive flock(2) on a lock file
// (created 0600, never through a symbolic link) beside the file they
// guard; LockOpen takes a shared or exclusive one on a file already open
// (the audit log locks itself). Locks are advisory: they order Bouncer's
// own processes, and the checks above are what keep other users out.
// Waiting is retried when a signal interrupts it (EINTR).
//
// # Not here
//
// The audit log is appended to (O_APPEND, one write a line), never
// replaced, and its head file is rewritten in place with one pwrite
// (internal/audit says why); both use CheckPrivate and LockOpen. The
// client configs `bouncer init` rewrites are the user's files: which file
// is replaced (a symbolic link's target), when (not if it changed since it
// was read) and what backup is kept are internal/mcpconfig's to say; the
// replacing is WriteLike, which keeps the file's mode and owner, at the
// durability above.
//
// # Without Unix
//
// Where there is no Unix (Windows, which builds so that the offline
// commands work there), Write still replaces files (without the
// directory's flush, which Windows does not offer), Dir creates the
// directory without an owner to check, and everything that needs owners,
// permission bits or flock fails with unixshim.ErrUnsupported: nothing is
// trusted or locked there.
package statefile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	unix "github.com/bouncer-mcp/bouncer/internal/unixshim"
)

// Perm is the permission of every file Bouncer keeps for itself, and
// DirPerm that of its directories.
const (
	Perm    fs.FileMode = 0o600
	DirPerm fs.FileMode = 0o700
)

// ErrUntrusted is wrapped by the errors of a file or directory refused by
// its type, owner or mode.
var ErrUntrusted = errors.New("not trusted")

// ErrTooLarge is wrapped by the error of a file longer than a read allows.
var ErrTooLarge = errors.New("too large")

// untrusted is a refusal: the reason, and what the user can do. It does
// not name the file at the front; the caller does, as it names every
// other error about that file.
type untrusted string

func (e untrusted) Error() string        { return string(e) }
func (e untrusted) Is(target error) bool { return target == ErrUntrusted }

// rename is os.Rename; a test makes it fail, as a crash before the rename
// would leave things.
var rename = os.Rename

// Write replaces path with data, 0600, at the durability the package doc
// states. It makes no chmod call (the sandboxed proxy may not) and no
// directory. Errors do not name path; the caller does.
func Write(path string, data []byte) error { return WriteMode(path, data, Perm) }

// WriteMode is Write for a file others may read: perm is set on the new
// file whatever the umask. It is for the files Bouncer writes for the
// user (a bundle is published 0644; a review pack keeps the mode of the
// one it replaces) and for a policy set installed in a shared directory.
func WriteMode(path string, data []byte, perm fs.FileMode) error {
	return replace(path, data, func(tmp *os.File) error {
		if perm != Perm {
			return tmp.Chmod(perm)
		}
		return nil
	})
}

// WriteLike is Write for a file of the user's that Bouncer rewrites (a
// client's config, its backup): the new file gets like's permission bits
// whatever the umask, and like's owner and group where they are another
// user's (only root gets there, and the file stays theirs). like is the
// file being replaced, or the one a backup is of.
func WriteLike(path string, data []byte, like fs.FileInfo) error {
	return replace(path, data, func(tmp *os.File) error {
		if err := tmp.Chmod(like.Mode().Perm()); err != nil {
			return err
		}
		if st, isUnix := like.Sys().(*unix.SysStat); isUnix && int(st.Uid) != os.Getuid() {
			return tmp.Chown(int(st.Uid), int(st.Gid))
		}
		return nil
	})
}

// replace is the one replacement: setup (mode, owner) is applied to the
// temporary file before anything is written to it.
func replace(path string, data []byte, setup func(tmp *os.File) error) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*") // 0600
	if err != nil {
		return err
	}
	name := tmp.Name()
	done := false
	defer func() {
		if !done {
			tmp.Close()
			os.Remove(name)
		}
	}()
	if err := setup(tmp); err != nil {
		return err
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
	if err := rename(name, path); err != nil {
		return err
	}
	done = true
	return SyncDir(dir)
}

// Create makes path hold data, 0600, if it does not exist yet, at Write's
// durability; it fails with an error wrapping fs.ErrExist if it does.
// The file appears whole (written aside, then linked into place), so of
// two processes creating it at once, one wins and the other reads the
// winner's content.
func Create(path string, data []byte) error { return CreateMode(path, data, Perm) }

// CreateMode is Create for a file others may read, as WriteMode is Write:
// perm is set on the new file whatever the umask (a policy file init
// makes in a project is 0644, which a team commits).
func CreateMode(path string, data []byte, perm fs.FileMode) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	name := tmp.Name()
	defer os.Remove(name) // after the link, the name that stays is path
	if perm != Perm {
		if err := tmp.Chmod(perm); err != nil {
			tmp.Close()
			return err
		}
	}
	_, werr := tmp.Write(data)
	serr := tmp.Sync()
	cerr := tmp.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		return err
	}
	if err := os.Link(name, path); err != nil {
		return err
	}
	return SyncDir(dir)
}

// Dir creates dir 0700 if it is missing (and its parents) and checks it is
// a directory of this user that no other user may write.
func Dir(dir string) error {
	if err := os.MkdirAll(dir, DirPerm); err != nil {
		return err
	}
	return CheckDir(dir)
}

// CheckDir is Dir's check alone, for a directory that must exist already:
// a directory of this user's that no other user may write, under
// directories that only this user or root can change.
func CheckDir(dir string) error {
	var st unix.Stat_t
	err := unix.Stat(dir, &st)
	if errors.Is(err, unix.ErrUnsupported) {
		// No owners to check here; nothing read back is trusted either.
		fi, err := os.Stat(dir)
		if err == nil && !fi.IsDir() {
			return untrusted("not a directory")
		}
		return err
	}
	if err != nil {
		return err
	}
	if err := dirRule.check(dir, uint32(st.Mode), int(st.Uid)); err != nil {
		return err
	}
	return checkAbove(dir)
}

// CheckShared refuses path (a directory, or a file in one, that other
// users may read: a policy set installed for a team) unless only this
// user or root can change it: path and every directory above it must be
// owned by this user or root, and none writable by group or others (a
// directory above may be, if it is sticky, as /tmp is). Symbolic links
// are followed; the directories above both the name and what it resolves
// to are checked. Errors name the path at fault, and say what to do.
func CheckShared(path string) error {
	var st unix.Stat_t
	err := unix.Stat(path, &st)
	if errors.Is(err, unix.ErrUnsupported) {
		return nil // no owners here to check; see the package doc
	}
	if err != nil {
		return err
	}
	r := sharedFile
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		r = sharedDir
	}
	if err := r.check(path, uint32(st.Mode), int(st.Uid)); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return checkAbove(path)
}

// checkAbove refuses path if a directory above it lets another user
// change what path names: one owned by a user other than this one and
// root, or one that group or others may write and that isn't sticky (in a
// sticky directory, such as /tmp, only an entry's owner may rename or
// remove it). The directories above the name and above what it resolves
// to (symbolic links followed) are checked. The error names the
// directory at fault.
func checkAbove(path string) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	dirs := above(abs)
	if real, err := filepath.EvalSymlinks(abs); err == nil && real != abs {
		dirs = append(dirs, above(real)...)
	}
	seen := map[string]bool{}
	for _, d := range dirs {
		if seen[d] {
			continue
		}
		seen[d] = true
		var st unix.Stat_t
		if err := unix.Stat(d, &st); err != nil {
			if errors.Is(err, unix.ErrUnsupported) {
				return nil
			}
			return fmt.Errorf("%s, a directory above %s: %w", d, path, err)
		}
		if err := aboveRule.check(d, uint32(st.Mode), int(st.Uid)); err != nil {
			return fmt.Errorf("%s, a directory above %s: %w", d, path, err)
		}
	}
	return nil
}

// above lists the directories above the clean absolute path p, nearest
// first, up to the root.
func above(p string) []string {
	var out []string
	for d := filepath.Dir(p); ; d = filepath.Dir(d) {
		out = append(out, d)
		if d == filepath.Dir(d) {
			return out
		}
	}
}

// ReadOwned reads path, refusing it unless it is a regular file (not a
// symbolic link) owned by this user that no other user may write, and
// refusing it whole if it is longer than max bytes. A missing file is an
// error wrapping fs.ErrNotExist. Errors do not name path; the caller does.
func ReadOwned(path string, max int64) ([]byte, error) {
	f, err := open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if err := Check(f); err != nil {
		return nil, err
	}
	return readAll(f, max, ownTooLarge(max))
}

// ReadCapped reads path, refusing it unless it is a regular file (not a
// symbolic link), and refusing it whole if it is longer than max bytes. It
// checks no owner: it is for files whose trust comes from elsewhere (a
// policy set installed in a shared directory, checked against its
// signature).
func ReadCapped(path string, max int64) ([]byte, error) {
	f, err := open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readAll(f, max, ownTooLarge(max))
}

// open opens path for reading as OpenFile does, without following a
// symbolic link in its last element.
func open(path string) (*os.File, error) {
	f, err := OpenFile(path, os.O_RDONLY|unix.O_NOFOLLOW, 0)
	if err != nil {
		if fi, lerr := os.Lstat(path); lerr == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return nil, untrusted("a symbolic link, which Bouncer does not follow (it never links its own files): remove it")
		}
		return nil, err
	}
	return f, nil
}

// Open opens, for reading, a file a person named: a policy or trust file,
// a key, a --header-file, an audit log or its head, a tools list. It is
// OpenFile with O_RDONLY.
func Open(path string) (*os.File, error) { return OpenFile(path, os.O_RDONLY, 0) }

// ReadFile reads the file a person named at path (Open), refusing it whole
// if it is longer than max bytes.
func ReadFile(path string, max int64) ([]byte, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readAll(f, max, fmt.Errorf("%w: larger than %d bytes", ErrTooLarge, max))
}

// OpenFile is the one way Bouncer opens a file by name (os.OpenFile's
// flag and perm): it accepts a regular file only, and never waits on
// what isn't one. Its errors are os.OpenFile's, *fs.PathError naming
// path, and a refusal is one too (wrapping ErrUntrusted). A FIFO would block the open (or the first read) until
// some other process opened its other end, for ever if none does, and a
// device is no file of anyone's: so the name is looked at first (stat,
// following links), the open is non-blocking, and what was opened is
// looked at again (fstat), since the name may have been replaced in
// between. A FIFO opened for writing with no reader fails with ENXIO,
// which is reported as the FIFO it is.
func OpenFile(path string, flag int, perm fs.FileMode) (*os.File, error) {
	if fi, err := os.Stat(path); err == nil && !fi.Mode().IsRegular() {
		return nil, notRegular(path, fi.Mode())
	}
	f, err := os.OpenFile(path, flag|unix.O_CLOEXEC|unix.O_NONBLOCK, perm)
	if err != nil {
		if fi, serr := os.Stat(path); serr == nil && !fi.Mode().IsRegular() {
			return nil, notRegular(path, fi.Mode())
		}
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, notRegular(path, fi.Mode())
	}
	return f, nil
}

// notRegular is the refusal of a file that isn't a regular one.
func notRegular(path string, m fs.FileMode) error {
	what := "a special file"
	switch {
	case m.IsDir():
		what = "a directory"
	case m&fs.ModeNamedPipe != 0:
		what = "a named pipe (FIFO), which would wait for a writer for ever"
	case m&fs.ModeSocket != 0:
		what = "a socket"
	case m&fs.ModeDevice != 0:
		what = "a device"
	}
	return &fs.PathError{Op: "open", Path: path, Err: untrusted("not a regular file but " + what + ": give a regular file")}
}

// readAll reads f whole, refusing it with tooLarge if it is longer than
// max bytes.
func readAll(f *os.File, max int64, tooLarge error) ([]byte, error) {
	if fi, err := f.Stat(); err == nil && fi.Size() > max {
		return nil, tooLarge
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, tooLarge
	}
	return b, nil
}

// ownTooLarge is the refusal of one of Bouncer's own files longer than
// max bytes.
func ownTooLarge(max int64) error {
	return fmt.Errorf("%w: larger than %d bytes, more than Bouncer ever writes there; nothing in it is used: remove it", ErrTooLarge, max)
}

// Check refuses the open file f unless it is a regular file owned by this
// user that no other user may write.
func Check(f *os.File) error { return checkOpen(f, owned) }

// CheckPrivate refuses the open file f unless it is a regular file owned
// by this user that no other user may read or write.
func CheckPrivate(f *os.File) error { return checkOpen(f, private) }

func checkOpen(f *os.File, r rule) error {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return err
	}
	return r.check(f.Name(), uint32(st.Mode), int(st.Uid))
}

// rule is the one check, in its uses: a file read back, a private file
// (a secret: a token, a --header-file, the audit log), a directory of
// Bouncer's, a directory above one, and a file or directory shared with
// other users (an installed policy set). Each refusal says what to do.
type rule struct {
	typ    uint32 // S_IFREG or S_IFDIR
	kind   string
	deny   uint32 // permission bits that must be clear
	access string // what deny keeps other users from
	why    string // what a refusal means, after the owner or mode
	fix    string // the mode to set, for chmod
	// rootOK: root may own it too (a directory above, a shared set).
	rootOK bool
	// stickyOK: the deny bits may be set on a sticky directory (/tmp),
	// where only an entry's owner may rename or remove it.
	stickyOK bool
}

var (
	owned      = rule{typ: unix.S_IFREG, kind: "a regular file", deny: 0o022, access: "write it", why: ", so nothing in it is trusted", fix: "600"}
	private    = rule{typ: unix.S_IFREG, kind: "a regular file", deny: 0o077, access: "read or write it", fix: "600"}
	dirRule    = rule{typ: unix.S_IFDIR, kind: "a directory", deny: 0o022, access: "write in it", why: ", so what Bouncer keeps in it could be removed or replaced", fix: "700"}
	aboveRule  = rule{typ: unix.S_IFDIR, kind: "a directory", deny: 0o022, access: "write in it", why: ", so they could rename what is in it and put their own in its place", fix: "go-w", rootOK: true, stickyOK: true}
	sharedDir  = rule{typ: unix.S_IFDIR, kind: "a directory", deny: 0o022, access: "write in it", why: ", so they could replace what Bouncer reads from it (an older set, a lower high-water mark)", fix: "go-w", rootOK: true}
	sharedFile = rule{typ: unix.S_IFREG, kind: "a regular file", deny: 0o022, access: "write it", why: ", so nothing in it is trusted", fix: "go-w", rootOK: true}
)

// sticky is S_ISVTX.
const sticky = 0o1000

// check refuses a file of the wrong type, another user's, or one with a
// deny bit set. path is named only in the advice; the caller names it
// first.
func (r rule) check(path string, mode uint32, uid int) error {
	me := os.Geteuid()
	switch {
	case mode&unix.S_IFMT != r.typ:
		return untrusted("not " + r.kind)
	case uid != me && !(r.rootOK && uid == 0):
		who := fmt.Sprintf("not by this user (uid %d)", me)
		if r.rootOK {
			who = fmt.Sprintf("neither by this user (uid %d) nor by root", me)
		}
		return untrusted(fmt.Sprintf("owned by uid %d, %s%s; move what Bouncer keeps there to a directory of yours", uid, who, r.why))
	case r.stickyOK && mode&sticky != 0:
		return nil
	case mode&r.deny != 0:
		advice := "run: chmod " + r.fix + " " + path
		if r.why != "" && r.typ == unix.S_IFREG {
			advice = "remove it or " + advice
		}
		return untrusted(fmt.Sprintf("mode %04o lets other users %s%s; %s", mode&0o777, r.access, r.why, advice))
	}
	return nil
}
