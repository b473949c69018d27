package protect

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/bouncer-mcp/bouncer/internal/mcpconfig"
	"github.com/bouncer-mcp/bouncer/internal/policy"
)

func TestRecognize(t *testing.T) {
	tests := []struct {
		l    mcpconfig.Launch
		pack string
		dirs []string
	}{
		{mcpconfig.Launch{Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-filesystem", "/a", "."}}, "filesystem", []string{"/a", "."}},
		{mcpconfig.Launch{Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-filesystem@2026.8.31", "/a"}}, "filesystem", []string{"/a"}},
		{mcpconfig.Launch{Command: "node", Args: []string{"/x/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js", "/b"}}, "filesystem", []string{"/b"}},
		{mcpconfig.Launch{Command: "docker", Args: []string{"run", "-i", "--rm", "--mount", "type=bind,src=/h/d,dst=/projects/d", "mcp/filesystem", "/projects"}}, "filesystem", []string{"/projects"}},
		{mcpconfig.Launch{Command: "/usr/bin/mcp-server-filesystem", Args: []string{"/c"}}, "filesystem", []string{"/c"}},
		{mcpconfig.Launch{Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-github"}}, "github", nil},
		{mcpconfig.Launch{Command: "docker", Args: []string{"run", "-i", "ghcr.io/github/github-mcp-server"}}, "", nil},
		{mcpconfig.Launch{Command: "uvx", Args: []string{"mcp-server-git"}}, "", nil},
	}
	for _, tt := range tests {
		pack, rest, ok := Recognize(tt.l)
		if pack != tt.pack || ok != (tt.pack != "") || (ok && !reflect.DeepEqual(Dirs(rest), tt.dirs)) {
			t.Errorf("%v: pack %q %v, dirs %q", tt.l, pack, ok, Dirs(rest))
		}
	}
}

func TestExtendNew(t *testing.T) {
	e, err := Extend("/p/bouncer.yaml", nil, Confinement{Dirs: []string{".", "/srv/data"}})
	if err != nil {
		t.Fatal(err)
	}
	pol, err := policy.LoadSources(policy.Source{Name: "bouncer.yaml", Dir: "/p", Data: e.New})
	if err != nil {
		t.Fatalf("%v\n%s", err, e.New)
	}
	for _, tool := range []string{"write_file", "edit_file", "create_directory", "move_file"} {
		tl, _ := pol.Lookup(tool)
		if !reflect.DeepEqual(tl.AllowedPathPrefixes, []string{"/p", "/srv/data"}) {
			t.Errorf("%s: %v", tool, tl.AllowedPathPrefixes)
		}
	}
	tl, _ := pol.Lookup("move_file")
	if !reflect.DeepEqual(tl.WriteParams, []string{"source", "destination"}) {
		t.Errorf("move_file write_params %v", tl.WriteParams)
	}
	// Again: nothing missing, nothing changes.
	again, err := Extend("/p/bouncer.yaml", e.New, Confinement{Dirs: []string{".", "/srv/data"}})
	if err != nil || again.Changed() || len(again.Added) != 0 {
		t.Errorf("second extend changed it (%v): %+v", err, again.Added)
	}
	if got := Describe(pol, "filesystem", "/p"); got != "writes confined to /p, /srv/data; sends: none" {
		t.Errorf("describe: %s", got)
	}
}

func TestExtendExisting(t *testing.T) {
	old := `# mine
send_email:
  exfiltrating: true
  sink_params: [to]
write_file:
  write_params: [path]
  allowed_path_prefixes:
    - out   # build output
edit_file:
  write_params: [path]
  allowed_path_prefixes: [out]
create_directory:
  max_calls: 0
`
	e, err := Extend("/p/bouncer.yaml", []byte(old), Confinement{Dirs: []string{"src"}})
	if err != nil {
		t.Fatal(err)
	}
	got := string(e.New)
	if !strings.HasPrefix(got, "# mine\nsend_email:\n  exfiltrating: true\n  sink_params: [to]\nwrite_file:\n  write_params: [path]\n  allowed_path_prefixes:\n    - out   # build output\n    - src\nedit_file:") {
		t.Errorf("block list not extended in place:\n%s", got)
	}
	if !strings.Contains(got, "\nmove_file:\n  write_params: [source, destination]\n  allowed_path_prefixes:\n    - src\n") {
		t.Errorf("missing tool not added:\n%s", got)
	}
	if len(e.Left) != 2 || !strings.Contains(e.Left[1], "edit_file (/p/bouncer.yaml:9): its allowed_path_prefixes is not a list init can add to; add src there") ||
		!strings.Contains(e.Left[0], "create_directory (/p/bouncer.yaml:12) is configured in a way init leaves alone") {
		t.Errorf("left: %q", e.Left)
	}
	pol, err := policy.LoadSources(policy.Source{Name: "bouncer.yaml", Dir: "/p", Data: e.New})
	if err != nil {
		t.Fatal(err)
	}
	if got := Describe(pol, "filesystem", "/p"); got != "edit_file writes confined to /p/out; move_file writes confined to /p/src; write_file writes confined to /p/{out, src}; sends: none; calls per session: create_directory 0" {
		t.Errorf("describe: %s", got)
	}
	if _, err := Extend("/p/bouncer.yaml", []byte("write_file:\n  bogus: 1\n"), Confinement{Dirs: []string{"."}}); err == nil || !strings.Contains(err.Error(), "/p/bouncer.yaml:2") {
		t.Errorf("bad policy: %v", err)
	}
}

func TestDescribe(t *testing.T) {
	pol, _ := policy.LoadSources()
	if got := Describe(pol, "github", ""); !strings.HasPrefix(got, "sends gated by the github pack; calls per session: create_repository 1, merge_pull_request 1") {
		t.Errorf("github: %s", got)
	}
	if got := Describe(pol, "filesystem", ""); got != "create_directory, edit_file, move_file, write_file writes: not confined; sends: none" {
		t.Errorf("filesystem without policy: %s", got)
	}
	// A server no pack was written for: the line says what the fallback
	// does to its tools, which must be what the fallback does.
	got := Describe(pol, "", "")
	if got != "no pack; by the fallback: destination-shaped arguments and tools named for sending gated, tools named for deleting capped at 2 calls per session, writes not confined" {
		t.Errorf("unknown: %s", got)
	}
	if d := pol.For("delete_customer", []string{"id"}); d.MaxCalls == nil || !strings.Contains(got, fmt.Sprintf("capped at %d calls", *d.MaxCalls)) {
		t.Errorf("the fallback's delete budget is not the one described: %+v", d)
	}
	if s := pol.For("notify_team", []string{"body"}); !s.Exfiltrating {
		t.Errorf("a tool named for sending is not gated: %+v", s)
	}
	if d := pol.For("post_to", []string{"webhook_url"}); !d.Exfiltrating {
		t.Errorf("a destination-shaped argument is not gated: %+v", d)
	}
	if w := pol.For("write_report", []string{"path"}); len(w.WriteParams) == 0 || len(w.AllowedPathPrefixes) != 0 {
		t.Errorf("the fallback's writes are not as described (named, not confined): %+v", w)
	}
}

// FuzzExtend: for any policy file that loads, extending it gives one that
// loads and keeps every entry the user had, or an error; a second run adds
// nothing.
func FuzzExtend(f *testing.F) {
	for _, s := range []string{"", "write_file:\n  write_params: [path]\n  allowed_path_prefixes:\n    - out\n", "x:\n  max_calls: 1", "write_file: {write_params: [path], allowed_path_prefixes: [a]}\n", "# c\n"} {
		f.Add([]byte(s), "src")
	}
	f.Fuzz(func(t *testing.T, old []byte, dir string) {
		before, err := policy.LoadSources(policy.Source{Name: "p.yaml", Dir: "/p", Data: old})
		if err != nil || dir == "" {
			return
		}
		e, err := Extend("/p/p.yaml", old, Confinement{Dirs: []string{dir}})
		if err != nil {
			return
		}
		after, err := policy.LoadSources(policy.Source{Name: "p.yaml", Dir: "/p", Data: e.New})
		if err != nil {
			t.Fatalf("extended policy does not load: %v", err)
		}
		for _, n := range before.Names() {
			b, _ := before.Lookup(n)
			a, _ := after.Lookup(n)
			if b.Fallback != a.Fallback || b.Exfiltrating != a.Exfiltrating || !reflect.DeepEqual(b.WriteParams, a.WriteParams) || len(a.AllowedPathPrefixes) < len(b.AllowedPathPrefixes) {
				t.Fatalf("entry %s changed:\n%s\n---\n%s", n, old, e.New)
			}
		}
		again, err := Extend("/p/p.yaml", e.New, Confinement{Dirs: []string{dir}})
		if err != nil || again.Changed() {
			t.Fatalf("second run (%v):\n%s\n---\n%s", err, e.New, again.New)
		}
	})
}
