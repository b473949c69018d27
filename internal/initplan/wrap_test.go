package initplan

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bouncer-mcp/bouncer/internal/mcpconfig"
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
	if w.WritePolicy || !strings.Contains(string(w.Out), `"command": "/opt/bouncer"`) || strings.Contains(string(w.Out), "--policy") {
		t.Errorf("user: write policy %v, entry:\n%s", w.WritePolicy, w.Out)
	}
}
