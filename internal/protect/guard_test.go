package protect

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/bouncer-mcp/bouncer/internal/policy"
)

// tree makes files (ending in "/": directories) and links ("name -> target")
// under a new temporary directory and returns it.
func tree(t *testing.T, entries ...string) string {
	t.Helper()
	root := t.TempDir()
	for _, e := range entries {
		if name, target, ok := strings.Cut(e, " -> "); ok {
			if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
				t.Fatal(err)
			}
			continue
		}
		p := filepath.Join(root, e)
		if strings.HasSuffix(e, "/") {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestAround(t *testing.T) {
	for _, c := range []struct {
		name    string
		entries []string
		dir     string   // served, relative to the tree ("" for its root)
		guarded []string // relative to the tree
		cover   []string
		left    []string
	}{
		{"nothing guarded inside", []string{"src/a.go", "README.md"}, "", []string{"../elsewhere"},
			[]string{""}, nil},
		{"the policy file at the top", []string{"src/a.go", "README.md", "bouncer.yaml", ".git/"}, "", []string{"bouncer.yaml"},
			[]string{".git", "README.md", "src"}, []string{"bouncer.yaml"}},
		{"a guarded file that does not exist yet is still left out", []string{"src/a.go", ".claude/commands/x.md"}, "", []string{".claude/settings.json"},
			[]string{".claude/commands", "src"}, nil},
		{"a config deeper down: its directory is listed", []string{".vscode/mcp.json", ".vscode/settings.json", "docs/"}, "", []string{".vscode/mcp.json", ".vscode/mcp.json.bak"},
			[]string{".vscode/settings.json", "docs"}, []string{".vscode/mcp.json"}},
		{"the state directory inside the served one", []string{"home/.bouncer/audit.jsonl", "home/notes/", "home/.bashrc"}, "home", []string{"home/.bouncer"},
			[]string{"home/.bashrc", "home/notes"}, []string{"home/.bouncer"}},
		{"served directory inside the state directory", []string{".bouncer/x/"}, ".bouncer/x", []string{".bouncer"},
			nil, []string{".bouncer/x"}},
		{"only guarded files", []string{".mcp.json", "bouncer.yaml"}, "", []string{".mcp.json", "bouncer.yaml"},
			nil, []string{".mcp.json", "bouncer.yaml"}},
		{"a link to the policy file is left out", []string{"bouncer.yaml", "src/", "p.yaml -> bouncer.yaml"}, "", []string{"bouncer.yaml"},
			[]string{"src"}, []string{"bouncer.yaml", "p.yaml"}},
		{"a link above the served directory is left out, not followed", []string{"bouncer.yaml", "src/", "up -> ."}, "", []string{"bouncer.yaml"},
			[]string{"src"}, []string{"bouncer.yaml", "up"}},
		{"a link elsewhere is kept", []string{"bouncer.yaml", "data -> /nonexistent/data"}, "", []string{"bouncer.yaml"},
			[]string{"data"}, []string{"bouncer.yaml"}},
		{"a guarded path reached through a link to the served directory", []string{"real/bouncer.yaml", "real/src/", "proj -> real"}, "proj", []string{"real/bouncer.yaml"},
			[]string{"proj/src"}, []string{"proj/bouncer.yaml"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := tree(t, c.entries...)
			abs := func(rel []string) []string {
				var out []string
				for _, r := range rel {
					out = append(out, filepath.Join(root, r))
				}
				return out
			}
			cover, left := Around(filepath.Join(root, c.dir), abs(c.guarded))
			if !reflect.DeepEqual(cover, abs(c.cover)) || !reflect.DeepEqual(left, abs(c.left)) {
				t.Errorf("cover %q, left %q;\nwant cover %q, left %q", cover, left, abs(c.cover), abs(c.left))
			}
			// What it covers, the engine's way (links followed), holds no
			// guarded path.
			if g := Covered(cover, abs(c.guarded)); len(g) > 0 {
				t.Errorf("%q cover %q", cover, g)
			}
		})
	}
}

// A server whose directory is the state directory, or lies in another
// server's policy: the write tools are refused (max_calls: 0), never left
// unconfined.
func TestExtendRefuse(t *testing.T) {
	e, err := Extend("/p/bouncer.yaml", nil, Confinement{Refuse: true, Guarded: []string{"/p/bouncer.yaml"}})
	if err != nil {
		t.Fatal(err)
	}
	pol, err := policy.LoadSources(policy.Source{Name: "bouncer.yaml", Dir: "/p", Data: e.New})
	if err != nil {
		t.Fatalf("%v\n%s", err, e.New)
	}
	for _, tool := range []string{"write_file", "edit_file", "create_directory", "move_file"} {
		tl, _ := pol.Lookup(tool)
		if tl.MaxCalls == nil || *tl.MaxCalls != 0 || len(tl.WriteParams) == 0 {
			t.Errorf("%s: %+v", tool, tl)
		}
	}
	if !strings.Contains(string(e.New), "replace max_calls: 0 with allowed_path_prefixes") {
		t.Errorf("the file does not say why:\n%s", e.New)
	}
	if got := Describe(pol, "filesystem", "/p"); got != "writes refused; sends: none" {
		t.Errorf("describe: %s", got)
	}
	again, err := Extend("/p/bouncer.yaml", e.New, Confinement{Refuse: true})
	if err != nil || again.Changed() || len(again.Left) != 0 {
		t.Errorf("second extend: %v, changed %v, left %q", err, again.Changed(), again.Left)
	}
	// A file that names the tools without confining them is said to.
	mine := "write_file:\n  write_params: [path]\n"
	e, err = Extend("/p/bouncer.yaml", []byte(mine), Confinement{Refuse: true})
	if err != nil || !strings.Contains(strings.Join(e.Left, "\n"), "write_file (/p/bouncer.yaml:1) is configured in a way init leaves alone, and does not confine") {
		t.Errorf("left %q, %v", e.Left, err)
	}
}

// A prefix already in the file that covers a guarded path is reported, and
// Extend never writes one itself.
func TestExtendGuarded(t *testing.T) {
	old := "write_file:\n  write_params: [path]\n  allowed_path_prefixes: [.]\n"
	e, err := Extend("/p/bouncer.yaml", []byte(old), Confinement{Dirs: []string{"src"}, Guarded: []string{"/p/bouncer.yaml", "/p/.mcp.json"}})
	if err != nil {
		t.Fatal(err)
	}
	left := strings.Join(e.Left, "\n")
	if !strings.Contains(left, "write_file (/p/bouncer.yaml:1): its allowed_path_prefixes cover /p/bouncer.yaml, /p/.mcp.json, another server's policy or Bouncer's state directory") {
		t.Errorf("left %q", e.Left)
	}
	if _, err := Extend("/p/bouncer.yaml", nil, Confinement{Dirs: []string{"."}, Guarded: []string{"/p/bouncer.yaml"}}); err == nil || !strings.Contains(err.Error(), "a bug; nothing written") {
		t.Errorf("a covering prefix was written: %v", err)
	}
	// Listed: the file says the list is what the directory holds.
	e, err = Extend("/p/bouncer.yaml", nil, Confinement{Dirs: []string{"README.md", "src"}, Guarded: []string{"/p/bouncer.yaml"}, Listed: true})
	if err != nil || !strings.Contains(string(e.New), "a new entry at\n# a level listed here is refused until you add it") {
		t.Errorf("%v\n%s", err, e.New)
	}
}

func TestShowPaths(t *testing.T) {
	for in, want := range map[string]string{
		"/p":                  "/p",
		"/p/a /p/b /q":        "/p/{a, b}, /q",
		"/p/a /q/x /q/y /q/z": "/p/a, /q/{x, y, z}",
		"/p/.v/s /p/a /p/b":   "/p/.v/s, /p/{a, b}",
	} {
		if got := showPaths(strings.Fields(in)); got != want {
			t.Errorf("%s: %s, want %s", in, got, want)
		}
	}
}

// Directories are written through the one YAML writer: one that YAML
// would read back as something else is quoted, and one it can't hold (not
// UTF-8) is refused, with nothing written.
func TestExtendWritesDirsItReadsBack(t *testing.T) {
	for _, d := range []string{"src", "a dir: with # signs", "- dash", "yes", "ünï"} {
		e, err := Extend("/p/bouncer.yaml", nil, Confinement{Dirs: []string{d}, Guarded: []string{"/p/bouncer.yaml"}})
		if err != nil {
			t.Fatalf("%q: %v", d, err)
		}
		pol, err := policy.LoadSources(policy.Source{Name: "/p/bouncer.yaml", Dir: "/p", Data: e.New})
		if err != nil {
			t.Fatalf("%q: written policy does not load: %v\n%s", d, err, e.New)
		}
		tl, ok := pol.Lookup("write_file")
		if !ok || len(tl.AllowedPathPrefixes) != 1 || tl.AllowedPathPrefixes[0] != filepath.Join("/p", d) {
			t.Errorf("%q: write_file prefixes = %v, want [%s]", d, tl.AllowedPathPrefixes, filepath.Join("/p", d))
		}
	}
	if e, err := Extend("/p/bouncer.yaml", nil, Confinement{Dirs: []string{"bad\xffdir"}, Guarded: []string{"/p/bouncer.yaml"}}); err == nil {
		t.Fatalf("a directory that is not UTF-8 was written:\n%s", e.New)
	}
}
