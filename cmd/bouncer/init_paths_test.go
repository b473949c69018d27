package main

import (
	"testing"

	"github.com/bouncer-mcp/bouncer/internal/mcpconfig"
)

// init names a path inside the project relative to it, and one outside
// absolutely; "inside" is internal/pathtree's rule, by whole components,
// so a directory whose name starts with ".." is inside, and a sibling
// whose name starts like the project is not.
func TestInitNamesProjectPaths(t *testing.T) {
	vs := mcpconfig.Found{Client: mcpconfig.VSCode, Workspace: "/w/proj"}
	for _, c := range []struct{ abs, want string }{
		{"/w/proj/bouncer.yaml", "${workspaceFolder}/bouncer.yaml"},
		{"/w/proj/..shared/bouncer.yaml", "${workspaceFolder}/..shared/bouncer.yaml"},
		{"/w/proj/../other/bouncer.yaml", "/w/proj/../other/bouncer.yaml"},
		{"/w/projx/bouncer.yaml", "/w/projx/bouncer.yaml"},
		{"/elsewhere/bouncer.yaml", "/elsewhere/bouncer.yaml"},
	} {
		if got := projectArg(vs, c.abs); got != c.want {
			t.Errorf("projectArg(%q) = %q, want %q", c.abs, got, c.want)
		}
	}
	in := &initRun{cwd: "/w/proj", home: "/home/u"}
	for _, c := range []struct{ p, want string }{
		{"/w/proj/.vscode/mcp.json", ".vscode/mcp.json"},
		{"/w/proj/..cache/x.json", "..cache/x.json"},
		{"/home/u/.claude.json", "~/.claude.json"},
		{"/home/user2/.claude.json", "/home/user2/.claude.json"},
	} {
		if got := in.show(c.p); got != c.want {
			t.Errorf("show(%q) = %q, want %q", c.p, got, c.want)
		}
	}
}
