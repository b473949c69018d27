package initplan

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bouncer-mcp/bouncer/internal/mcpconfig"
	"github.com/bouncer-mcp/bouncer/internal/policy"
	"github.com/bouncer-mcp/bouncer/internal/protect"
)

// Wrap plans a project's config: its filesystem server confined to its
// directory (named relative to the project's policy file, bouncer.yaml),
// the entries naming that file relative to the project, and nothing
// written yet. A user's file names a relative directory in a note, as it
// can't be confined, and its entries name the policy in the state
// directory absolutely.
func TestWrap(t *testing.T) {
	proj, home := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(proj, ".mcp.json"), `{"mcpServers": {"fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "src"]}}}`)
	user := filepath.Join(home, ".gemini", "settings.json")
	writeFile(t, user, `{"mcpServers": {"fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "notes"]}}}`)
	plan := &Plan{Cwd: proj, Home: home, State: filepath.Join(home, ".bouncer")}
	where := mcpconfig.Where{Home: home, Dir: proj}
	never := func(string) bool { return false }

	f := mcpconfig.FoundAt(filepath.Join(proj, ".mcp.json"), where)
	cfg, err := mcpconfig.Load(f.Path, mcpconfig.Kept{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := plan.Wrap(f, cfg, "bouncer", never)
	if err != nil {
		t.Fatal(err)
	}
	if w.PolicyFile != filepath.Join(proj, "bouncer.yaml") || !w.WritePolicy || w.Policy.Old != nil || !w.Rewrite || len(w.Notes) != 0 {
		t.Errorf("project: policy %s (write %v, old %q), rewrite %v, notes %q", w.PolicyFile, w.WritePolicy, w.Policy.Old, w.Rewrite, w.Notes)
	}
	if !strings.Contains(string(w.Policy.New), "- src") {
		t.Errorf("project policy does not confine to src:\n%s", w.Policy.New)
	}
	if !strings.Contains(string(w.Out), `"args": ["run", "--config", ".mcp.json", "--server", "fs", "--policy", "bouncer.yaml"]`) {
		t.Errorf("project entry:\n%s", w.Out)
	}
	if _, err := os.Stat(w.PolicyFile); !os.IsNotExist(err) {
		t.Errorf("the plan wrote %s: %v", w.PolicyFile, err)
	}

	u := mcpconfig.FoundAt(user, where)
	cfg, err = mcpconfig.Load(user, mcpconfig.Kept{})
	if err != nil {
		t.Fatal(err)
	}
	w, err = plan.Wrap(u, cfg, "/opt/bouncer", never)
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Notes) != 1 || !strings.Contains(w.Notes[0], `fs: directory "notes" is relative to wherever the client starts it`) {
		t.Errorf("user notes %q", w.Notes)
	}
	// The user's policy is named, and made (a header alone) since it is
	// not there yet, though nothing is confined: every user file's entries
	// load it, whichever file init finds first.
	want := `"--policy", "` + filepath.Join(home, ".bouncer", "policy.yaml") + `"]`
	if !w.WritePolicy || string(w.Policy.New) != protect.Header || !strings.Contains(string(w.Out), `"command": "/opt/bouncer"`) || !strings.Contains(string(w.Out), want) {
		t.Errorf("user: write policy %v (%q), entry:\n%s", w.WritePolicy, w.Policy.New, w.Out)
	}
}

// FindPolicies gathers the policy files of every config init found: what
// their wrapped entries load (a VS Code entry's ${workspaceFolder} and a
// Claude Code entry's relative --policy resolved as bouncer run resolves
// them) and what init is to write. Guarded keeps the others, and the state
// directory, out of a server's prefixes, but not the server's own policy:
// a server at the project's root is confined to the root.
func TestFindPolicies(t *testing.T) {
	proj, home := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(proj, ".vscode", "mcp.json"), `{"servers": {"a": {"command": "bouncer", "args": ["run", "--config", "${workspaceFolder}/.vscode/mcp.json", "--server", "a", "--policy", "${workspaceFolder}/team.yaml"], "x-bouncer-upstream": {"command": "x"}}}}`)
	writeFile(t, filepath.Join(proj, ".mcp.json"), `{"mcpServers": {"b": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "."]}}}`)
	writeFile(t, filepath.Join(home, ".claude.json"), `{"mcpServers": {"c": {"command": "bouncer", "args": ["run", "--config", "/x", "--server", "c", "--policy", "/etc/mine.yaml", "--policy", "rel.yaml"], "x-bouncer-upstream": {"command": "y"}}}}`)
	plan := &Plan{Cwd: proj, Home: home, State: filepath.Join(home, ".bouncer")}
	plan.FindPolicies(nil, loadPolicyArgs)
	want := map[string]bool{
		filepath.Join(proj, "bouncer.yaml"):            true, // the project's files', to write
		filepath.Join(proj, "team.yaml"):               true,
		filepath.Join(home, ".bouncer", "policy.yaml"): true, // the user's file's, to write
		"/etc/mine.yaml":                               true,
		filepath.Join(proj, "rel.yaml"):                true, // a user's file: relative to where init runs
	}
	if len(plan.Policies) != len(want) {
		t.Errorf("policies %q", plan.Policies)
	}
	for _, p := range plan.Policies {
		if !want[p] {
			t.Errorf("policies %q: %s is not one", plan.Policies, p)
		}
	}
	g := plan.Guarded(filepath.Join(proj, "bouncer.yaml"))
	if strings.Contains(strings.Join(g, "\n"), filepath.Join(proj, "bouncer.yaml")) || g[0] != plan.State || len(g) != len(want) {
		t.Errorf("guarded %q", g)
	}
	// team.yaml, which VS Code's server loads, is another server's
	// policy for the project's filesystem server: the project's entries
	// around it.
	if cover, left := protect.Around(proj, g); strings.Join(cover, " ") != filepath.Join(proj, ".mcp.json")+" "+filepath.Join(proj, ".vscode") || len(left) != 0 {
		t.Errorf("around the project: %q, left %q", cover, left)
	}
}

// loadPolicyArgs is a Loader that names a wrapped entry's --policy files,
// without loading them.
func loadPolicyArgs(args []string, base string) (*policy.Policy, []string, error) {
	var files []string
	for i, a := range args {
		if a == "--policy" && i+1 < len(args) {
			files = append(files, args[i+1])
		}
	}
	return nil, files, nil
}
