package pathtree

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestWithin(t *testing.T) {
	for _, c := range []struct {
		path, dir string
		want      bool
	}{
		{"/out", "/out", true},
		{"/out/a", "/out", true},
		{"/out/a/b", "/out", true},
		{"/outx", "/out", false},            // a component, not a string prefix
		{"/outx/a", "/out", false},          //
		{"/ou", "/out", false},              //
		{"/out", "/out/a", false},           // an ancestor is not within
		{"/out/", "/out", true},             // trailing separators are cleaned away
		{"/out", "/out/", true},             //
		{"/out/a/", "/out/", true},          //
		{"//out//a", "/out", true},          // so are doubled ones
		{"/out/./a", "/out", true},          // and "."
		{"/out/../etc", "/out", false},      // an inner ".." is resolved lexically
		{"/out/a/../b", "/out", true},       //
		{"/a/b", "/a/b/..", true},           //
		{"/../out/a", "/out", true},         // ".." above the root is the root
		{"/", "/", true},                    // the root holds everything absolute
		{"/anything/at/all", "/", true},     //
		{"/", "/out", false},                //
		{"/Out/a", "/out", false},           // case matters
		{"a/b", "a", true},                  // two relative paths compare as from one directory
		{"a", "a", true},                    //
		{"ab", "a", false},                  //
		{"x", ".", true},                    // "." holds what does not climb out of it
		{".", ".", true},                    //
		{"..", ".", false},                  //
		{"../x", ".", false},                //
		{"../x", "..", true},                //
		{"../..", "..", false},              // a rest of ".." climbs out
		{"../../x", "..", false},            //
		{"x", "..", false},                  //
		{"../a/b", "../a", true},            //
		{"a", "/", false},                   // relative and absolute never contain each other
		{"/a", ".", false},                  //
		{"out/a", "/out", false},            //
		{"/out/a", "out", false},            //
		{"", "/out", false},                 // empty is no path
		{"/out", "", false},                 //
		{"", "", false},                     //
		{"/out/..a", "/out", true},          // "..a" is a name, not ".."
		{"..a", ".", true},                  //
		{"/out/a\x00b", "/out", true},       // bytes are bytes
		{"/tmp/é/x", "/tmp/é", true},        //
		{"/tmp/e\u0301/x", "/tmp/é", false}, // no Unicode normalization: callers normalize
	} {
		if got := Within(c.path, c.dir); got != c.want {
			t.Errorf("Within(%q, %q) = %v, want %v", c.path, c.dir, got, c.want)
		}
	}
}

func TestBelow(t *testing.T) {
	for _, c := range []struct {
		path, dir, rest string
		ok              bool
	}{
		{"/w/a/b", "/w", "a/b", true},
		{"/w/", "/w", ".", true},
		{"/w/a", "/", "w/a", true},
		{"/w/..cache/x", "/w", "..cache/x", true}, // a name that starts with "..", not a climb
		{"/wx/a", "/w", "", false},
		{"/w/../x", "/w", "", false},
		{"../a/b", "..", "a/b", true},
		{"a", "/w", "", false},
	} {
		rest, ok := Below(c.path, c.dir)
		if rest != c.rest || ok != c.ok {
			t.Errorf("Below(%q, %q) = %q, %v; want %q, %v", c.path, c.dir, rest, ok, c.rest, c.ok)
		}
	}
}

func TestWithinFold(t *testing.T) {
	for _, c := range []struct {
		path, dir string
		want      bool
	}{
		{"/Users/A/.Bouncer/x", "/users/a/.bouncer", true},
		{"/users/a/.bouncer", "/USERS/A/.BOUNCER", true},
		{"/users/a/.bouncerx", "/users/a/.bouncer", false},
		{"/users/a", "/users/a/.bouncer", false},
		{"/K/x", "/\u212a", true}, // KELVIN SIGN lowers to k, as strings.ToLower does
	} {
		if got := WithinFold(c.path, c.dir); got != c.want {
			t.Errorf("WithinFold(%q, %q) = %v, want %v", c.path, c.dir, got, c.want)
		}
	}
	if Within("/Users/A", "/users/a") {
		t.Error("Within must keep case; only WithinFold folds it")
	}
}

func TestWithinAny(t *testing.T) {
	dirs := []string{"/srv/data", "/tmp/out/"}
	for path, want := range map[string]bool{
		"/srv/data/x": true, "/tmp/out": true, "/tmp/outx": false, "/srv": false, "/etc/passwd": false,
	} {
		if got := WithinAny(path, dirs); got != want {
			t.Errorf("WithinAny(%q, %q) = %v, want %v", path, dirs, got, want)
		}
	}
	if WithinAny("/x", nil) {
		t.Error("no directory contains anything")
	}
}

// relOracle is the rule said another way, by the standard library: path
// is within dir when the way from dir to path does not climb out.
func relOracle(path, dir string) bool {
	if path == "" || dir == "" {
		return false
	}
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

func FuzzWithin(f *testing.F) {
	for _, s := range [][2]string{
		{"/out/a", "/out"}, {"/outx", "/out"}, {"/", "/"}, {"/a", "/"}, {"a/b", "a"},
		{"../..", ".."}, {"x", "."}, {"../x", "."}, {"/out/../etc", "/out"}, {"a", "/"},
		{"", ""}, {"/out/", "/out//"}, {"..a", "."}, {"/a/./b/../c", "/a/c/."},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, path, dir string) {
		got, want := Within(path, dir), relOracle(path, dir)
		if got != want {
			t.Fatalf("Within(%q, %q) = %v, filepath.Rel says %v", path, dir, got, want)
		}
		if rest, ok := Below(path, dir); ok != got {
			t.Fatalf("Below(%q, %q) says %v, Within %v", path, dir, ok, got)
		} else if rel, _ := filepath.Rel(dir, path); ok && rest != rel {
			t.Fatalf("Below(%q, %q) = %q, filepath.Rel gives %q", path, dir, rest, rel)
		}
		if got && !Within(filepath.Clean(path)+"/", dir+"/") {
			t.Fatalf("a trailing separator changed Within(%q, %q)", path, dir)
		}
		if WithinFold(path, dir) != Within(strings.ToLower(path), strings.ToLower(dir)) {
			t.Fatalf("WithinFold(%q, %q) is not Within of the lower-cased paths", path, dir)
		}
	})
}
