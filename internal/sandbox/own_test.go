package sandbox

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestNewOwnFiles(t *testing.T) {
	root := t.TempDir()
	state := filepath.Join(root, ".bouncer")
	os.Mkdir(state, 0o700)
	link := filepath.Join(root, "state-link")
	os.Symlink(state, link)
	o := NewOwnFiles(state, []string{
		state, link, // the state directory, as written and through a link
		filepath.Join(state, "trust.yaml"),                   // inside it: hidden with it
		filepath.Join(link, "policy", "set.yaml"),            // inside it through the link
		"/etc/bouncer/trust.yaml", "/etc/bouncer/trust.yaml", // twice
		"relative.yaml",
		"/home/me/proj/bouncer.yaml",
		"/home/me/proj/../proj/mail.yaml",
	})
	want := OwnFiles{
		Hidden:   []string{state},
		ReadOnly: []string{"/etc/bouncer/trust.yaml", "/home/me/proj/bouncer.yaml", "/home/me/proj/mail.yaml"},
	}
	if !reflect.DeepEqual(o, want) {
		t.Errorf("got %+v\nwant %+v", o, want)
	}
}

// tree makes a directory tree under root: a name ending in / is a
// directory, "name -> target" a symbolic link, anything else a file.
func tree(t *testing.T, root string, entries ...string) {
	t.Helper()
	for _, e := range entries {
		p, target, isLink := strings.Cut(e, " -> ")
		p = filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		var err error
		switch {
		case isLink:
			err = os.Symlink(strings.ReplaceAll(target, "ROOT", root), p)
		case strings.HasSuffix(e, "/"):
			err = os.MkdirAll(p, 0o755)
		default:
			err = os.WriteFile(p, nil, 0o600)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestPins(t *testing.T) {
	root, _ := filepath.EvalSymlinks(t.TempDir())
	tree(t, root,
		"home/.bouncer/remembered.json",
		"home/proj/bouncer.yaml",
		"home/proj/cfg -> ../dotfiles", // a relative link to a directory
		"home/dotfiles/mail.yaml",
		"home/policy.yaml -> ROOT/home/proj/bouncer.yaml", // an absolute link to a file
		"etc/bouncer/set/a.yaml",
		"home/loop -> loop",
	)
	r := func(p string) string { return filepath.Join(root, p) }
	o := OwnFiles{
		Hidden: []string{r("home/.bouncer")},
		ReadOnly: []string{
			r("home/proj/bouncer.yaml"),
			r("home/proj/cfg/mail.yaml"),
			r("home/policy.yaml"),
			r("etc/bouncer"),            // a directory, read-only whole
			r("etc/bouncer/set/a.yaml"), // inside it: nothing more to do
			r("home/.bouncer/key"),      // hidden already (and missing)
			r("home/missing.yaml"),
		},
	}
	ps, missing, err := pins(o, nil)
	if err != nil {
		t.Fatal(err)
	}
	// What lies in the tree, by depth; above it, directories only.
	var inRoot []string
	for _, p := range ps {
		if rest, ok := strings.CutPrefix(p.Path, root+"/"); ok {
			inRoot = append(inRoot, p.Kind.String()+" "+rest)
		} else if p.Path == root || strings.HasPrefix(root, p.Path+"/") {
			if p.Kind != pinDir {
				t.Errorf("%s above the tree is pinned as %s", p.Path, p.Kind)
			}
		} else {
			t.Errorf("%s %s is outside the tree", p.Kind, p.Path)
		}
	}
	wantInRoot := []string{
		"directory etc",
		"directory home",
		"read-only etc/bouncer",
		"hidden home/.bouncer",
		"directory home/dotfiles",
		"link home/policy.yaml",
		"directory home/proj",
		"read-only home/dotfiles/mail.yaml",
		"read-only home/proj/bouncer.yaml",
		"link home/proj/cfg",
	}
	if !reflect.DeepEqual(inRoot, wantInRoot) {
		t.Errorf("pins in the tree:\n%s\nwant\n%s", strings.Join(inRoot, "\n"), strings.Join(wantInRoot, "\n"))
	}
	if want := []string{r("home/.bouncer/key"), r("home/missing.yaml")}; !reflect.DeepEqual(missing, want) {
		t.Errorf("missing %v, want %v", missing, want)
	}
	// A link that loops is an error, not a hang.
	if _, _, err := pins(OwnFiles{ReadOnly: []string{r("home/loop")}}, nil); err == nil || !strings.Contains(err.Error(), "too many levels") {
		t.Errorf("loop: %v", err)
	}
}

func TestSeatbeltProfile(t *testing.T) {
	for _, tc := range []struct {
		name string
		pins []pin
		want string // the lines after the header
		err  string
	}{
		{"none", nil, "", ""},
		{"each kind", []pin{{"/Users", pinDir}, {"/Users/me", pinDir}, {"/Users/me/.bouncer", pinHidden},
			{"/Users/me/p.yaml", pinLink}, {"/Users/me/proj/bouncer.yaml", pinReadOnly}},
			`(deny file-write-unlink file-write-create (literal "/Users"))
(deny file-write-unlink file-write-create (literal "/Users/me"))
(deny file-read* file-write* (subpath "/Users/me/.bouncer"))
(deny file-write-unlink file-write-create (literal "/Users/me/p.yaml"))
(deny file-write* (subpath "/Users/me/proj/bouncer.yaml"))
`, ""},
		{"quotes and backslashes", []pin{{`/Users/me/a "b"\c`, pinReadOnly}}, `(deny file-write* (subpath "/Users/me/a \"b\"\\c"))` + "\n", ""},
		{"a control character", []pin{{"/Users/me/a\nb", pinReadOnly}}, "", `seatbelt: the path "/Users/me/a\nb" has a control character`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := seatbeltProfile(tc.pins)
			switch {
			case tc.err != "":
				if err == nil || err.Error() != tc.err {
					t.Fatalf("err %v, want %s", err, tc.err)
				}
			case err != nil:
				t.Fatal(err)
			case got != "(version 1)\n(allow default)\n"+tc.want:
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

// TestSeatbeltCommand builds the command on a tree laid out as macOS lays
// out a temporary directory, /var a link to /private/var: the rules name
// the resolved paths, which Seatbelt matches, and pin the link too.
func TestSeatbeltCommand(t *testing.T) {
	root, _ := filepath.EvalSymlinks(t.TempDir())
	tree(t, root, "private/var/folders/x/.bouncer/", "private/var/folders/x/proj/bouncer.yaml", "var -> private/var")
	o := OwnFiles{Hidden: []string{root + "/var/folders/x/.bouncer"}, ReadOnly: []string{root + "/var/folders/x/proj/bouncer.yaml"}}
	path, args, setup, err := seatbeltCommand(o, []string{"/usr/bin/node", "server.js"}, launchPlan{}, Launch{}.launcher)
	if err != nil {
		t.Fatal(err)
	}
	if path != "/usr/bin/sandbox-exec" || len(args) != 4 || args[0] != "-p" || args[2] != "/usr/bin/node" || args[3] != "server.js" || setup != nil {
		t.Fatalf("%s %q", path, args)
	}
	for _, rule := range []string{
		`(deny file-write-unlink file-write-create (literal "` + root + `/var"))`,
		`(deny file-write-unlink file-write-create (literal "` + root + `/private/var/folders/x"))`,
		`(deny file-read* file-write* (subpath "` + root + `/private/var/folders/x/.bouncer"))`,
		`(deny file-write* (subpath "` + root + `/private/var/folders/x/proj/bouncer.yaml"))`,
	} {
		if !strings.Contains(args[1], rule+"\n") {
			t.Errorf("no %s in\n%s", rule, args[1])
		}
	}
	if strings.Contains(args[1], `"`+root+`/var/folders`) {
		t.Errorf("a rule names the path through the link, which Seatbelt never sees:\n%s", args[1])
	}
}

func TestViews(t *testing.T) {
	mounts := parseMountinfo(`21 26 0:20 / /proc rw,relatime - proc proc rw
26 1 254:0 / / rw,relatime - ext4 /dev/vda rw
30 26 254:0 /data/home /home rw,relatime - ext4 /dev/vda rw
31 26 254:0 /data/home/me /mnt/my\040home rw,relatime - ext4 /dev/vda rw
32 26 0:40 / /tmp rw - tmpfs tmpfs rw
33 30 0:41 / /home/me/.cache rw - tmpfs tmpfs rw
bad line
34 26 254:0 /elsewhere /srv rw - ext4 /dev/vda rw
`)
	for _, tc := range []struct {
		path string
		want []string
	}{
		// In /home's mount, at /data/home/me/.bouncer of the file system,
		// which / shows too, and the bind mount with a space in its name.
		{"/home/me/.bouncer", []string{"/data/home/me/.bouncer", "/mnt/my home/.bouncer"}},
		// Seen from the other side.
		{"/data/home/me/proj/bouncer.yaml", []string{"/home/me/proj/bouncer.yaml", "/mnt/my home/proj/bouncer.yaml"}},
		// A file system mounted once.
		{"/tmp/x", nil},
		{"/home/me/.cache/x", nil},
		// /srv shows another part of the file system.
		{"/etc/bouncer/trust.yaml", nil},
	} {
		if got := views(mounts, tc.path); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("views(%s) = %q, want %q", tc.path, got, tc.want)
		}
	}
}
