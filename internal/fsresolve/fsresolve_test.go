package fsresolve

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bouncer-mcp/bouncer/internal/testsupport/need"
)

func TestExisting(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(root, "out", "sub"), 0o700))
	must(os.MkdirAll(filepath.Join(root, "secret"), 0o700))
	must(os.Symlink(filepath.Join(root, "secret"), filepath.Join(root, "out", "abs")))
	must(os.Symlink("../secret", filepath.Join(root, "out", "rel")))
	must(os.Symlink("sub/..", filepath.Join(root, "out", "dotdot")))
	must(os.Symlink("loop", filepath.Join(root, "out", "loop")))
	must(os.WriteFile(filepath.Join(root, "out", "file"), nil, 0o600))
	must(os.Symlink("file", filepath.Join(root, "out", "tofile")))
	cases := []struct{ in, want string }{
		{"/out/new.txt", "/out/new.txt"},       // missing file in an existing dir
		{"/out/abs/x", "/secret/x"},            // absolute link
		{"/out/rel/x", "/secret/x"},            // relative link
		{"/out/abs/../x", "/x"},                // .. applies to the link's target
		{"/out/dotdot/new", "/out/new"},        // a link containing ..
		{"/out/./sub//f", "/out/sub/f"},        // . and doubled slashes
		{"/out/file/below", "/out/file/below"}, // below a regular file: nothing exists
		{"/../../out/sub", "/out/sub"},         // .. above / stays at /
	}
	for _, c := range cases {
		in := root + c.in
		if strings.HasPrefix(c.in, "/../../") {
			in = "/../.." + root + strings.TrimPrefix(c.in, "/../..")
		}
		got, err := Existing(in)
		if err != nil {
			t.Errorf("Existing(%s): %v", c.in, err)
			continue
		}
		if want := root + c.want; got != want {
			t.Errorf("Existing(%s) = %s, want %s", c.in, got, want)
		}
	}
	if _, err := Existing(filepath.Join(root, "out", "loop", "x")); err == nil {
		t.Error("a link loop resolved")
	}
	// ".." after something missing or not a directory: the kernel fails,
	// mkdir -p creates the missing part, a cleaning server skips it.
	for _, p := range []string{"/out/a/b/../../abs/y", "/out/new/../x", "/out/file/../x", "/out/sub/file2/..", "/out/tofile/../x"} {
		if got, err := Existing(root + p); err == nil || !strings.Contains(err.Error(), `give the path without ".."`) {
			t.Errorf("Existing(%s) = %q, %v; want an error", p, got, err)
		}
	}
	if _, err := Existing("relative/path"); err == nil {
		t.Error("a relative path resolved")
	}
}

// Names equal under Unicode normalization but not as bytes are refused
// where a server could take one for the other.
func TestExistingUnicode(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	const nfc, nfd = "caf\u00e9", "cafe\u0301"
	must(os.MkdirAll(filepath.Join(root, "out", "both"), 0o700))
	must(os.MkdirAll(filepath.Join(root, "secret"), 0o700))
	must(os.Symlink(filepath.Join(root, "secret"), filepath.Join(root, "out", nfc)))
	must(os.Symlink(filepath.Join(root, "secret"), filepath.Join(root, "out", "\u212aey"))) // Kelvin sign
	must(os.Mkdir(filepath.Join(root, "out", "both", nfc), 0o700))
	if err := os.Mkdir(filepath.Join(root, "out", "both", nfd), 0o700); errors.Is(err, fs.ErrExist) {
		need.Skip(t, "the file system normalizes names: Lstat finds both spellings")
	} else {
		must(err)
	}
	must(os.Mkdir(filepath.Join(root, "out", "na\u00efve"), 0o700))
	cases := []struct {
		in      string
		missing bool // want an *AmbiguousError with Missing
		ok      string
	}{
		{in: "/out/" + nfd + "/x", missing: true},          // the attack: NFD spelling of an NFC link
		{in: "/out/Key/x", missing: true},                  // ASCII spelling of a Kelvin-sign link
		{in: "/out/both/" + nfd + "/x", missing: false},    // exists, but so does its NFC twin
		{in: "/out/both/" + nfc, missing: false},           // and the other way round
		{in: "/out/" + nfc + "/x", ok: "/secret/x"},        // the exact name: followed
		{in: "/out/na\u00efve/x", ok: "/out/na\u00efve/x"}, // non-ASCII with no twin
		{in: "/out/cafe/x", ok: "/out/cafe/x"},             // not equal under normalization
		{in: "/out/CAF\u00c9/x", ok: "/out/CAF\u00c9/x"},   // case is not folded
	}
	for _, c := range cases {
		got, err := Existing(root + c.in)
		if c.ok != "" {
			if err != nil || got != root+c.ok {
				t.Errorf("Existing(%+q) = %q, %v; want %q", c.in, got, err, root+c.ok)
			}
			continue
		}
		var amb *AmbiguousError
		if !errors.As(err, &amb) || amb.Missing != c.missing {
			t.Errorf("Existing(%+q) = %q, %v; want an ambiguity (missing=%v)", c.in, got, err, c.missing)
		}
	}
	// A file system that normalizes names (macOS) finds the entry under
	// both spellings and lists it under one: no ambiguity.
	norm := OS
	norm.Lstat = func(p string) (fs.FileInfo, error) {
		return os.Lstat(strings.Replace(p, nfd, nfc, 1))
	}
	norm.ReadDirNames = func(d string) ([]string, error) {
		names, err := readDirNames(d)
		for i, n := range names {
			if n == nfd {
				names[i] = nfc
			}
		}
		return names, err
	}
	if got, err := norm.Existing(root + "/out/both/" + nfd + "/x"); err != nil || got != root+"/out/both/"+nfd+"/x" {
		t.Errorf("normalizing file system: %q, %v", got, err)
	}
	// A directory that can't be listed can't be searched for look-alikes.
	fsys := OS
	fsys.ReadDirNames = func(string) ([]string, error) { return nil, os.ErrPermission }
	if _, err := fsys.Existing(root + "/out/new"); err == nil {
		t.Error("resolved a missing name in a directory that can't be listed")
	}
	// An existing non-ASCII name in a directory that may not be listed is
	// taken as it is.
	if got, err := fsys.Existing(root + "/out/na\u00efve"); err != nil || got != root+"/out/na\u00efve" {
		t.Errorf("existing name, unlistable directory: %q, %v", got, err)
	}
}

// FuzzExisting: any absolute input resolves to a clean absolute path or an
// error, never a panic.
func FuzzExisting(f *testing.F) {
	for _, s := range []string{"/", "/tmp/../etc/./passwd", "/proc/self/root/x", "//a//b/", "/a/\x00b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		if !filepath.IsAbs(p) {
			return
		}
		got, err := Existing(p)
		if err != nil {
			return
		}
		if !filepath.IsAbs(got) || filepath.Clean(got) != got {
			t.Fatalf("Existing(%q) = %q, not clean and absolute", p, got)
		}
	})
}
