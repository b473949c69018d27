package initplan

import (
	"testing"

	"github.com/bouncer-mcp/bouncer/internal/mcpconfig"
)

// init names a path inside the project relative to it, and one outside
// absolutely; "inside" is internal/pathtree's rule, by whole components,
// so a directory whose name starts with ".." is inside, and a sibling
// whose name starts like the project is not.
func TestNamesProjectPaths(t *testing.T) {
	vs := mcpconfig.Found{Client: mcpconfig.VSCode, Workspace: "/w/proj"}
	for _, c := range []struct{ abs, want string }{
		{"/w/proj/bouncer.yaml", "${workspaceFolder}/bouncer.yaml"},
		{"/w/proj/..shared/bouncer.yaml", "${workspaceFolder}/..shared/bouncer.yaml"},
		{"/w/proj/../other/bouncer.yaml", "/w/proj/../other/bouncer.yaml"},
		{"/w/projx/bouncer.yaml", "/w/projx/bouncer.yaml"},
		{"/elsewhere/bouncer.yaml", "/elsewhere/bouncer.yaml"},
	} {
		if got := ProjectArg(vs, c.abs); got != c.want {
			t.Errorf("ProjectArg(%q) = %q, want %q", c.abs, got, c.want)
		}
	}
	plan := &Plan{Cwd: "/w/proj", Home: "/home/u"}
	for _, c := range []struct{ p, want string }{
		{"/w/proj/.vscode/mcp.json", ".vscode/mcp.json"},
		{"/w/proj/..cache/x.json", "..cache/x.json"},
		{"/home/u/.claude.json", "~/.claude.json"},
		{"/home/user2/.claude.json", "/home/user2/.claude.json"},
	} {
		if got := plan.Show(c.p); got != c.want {
			t.Errorf("Show(%q) = %q, want %q", c.p, got, c.want)
		}
	}
}
