// Package layering checks the direction of the imports between Bouncer's
// packages, so that the package map issue 22 drew stays drawn: leaves stay
// leaves, the transports only move messages, and product code never leans
// on test code.
package layering

import (
	"os/exec"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/bouncer-mcp/bouncer/"

// imports lists each package of the module with the module's packages its
// non-test files import, as go list reports them.
func imports(t *testing.T) map[string][]string {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, module+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	m := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		pkg := strings.TrimPrefix(f[0], module)
		m[pkg] = nil
		for _, imp := range f[1:] {
			if rest, ok := strings.CutPrefix(imp, module); ok {
				m[pkg] = append(m[pkg], rest)
			}
		}
	}
	if len(m) < 20 {
		t.Fatalf("go list found %d packages; is the test run inside the module?", len(m))
	}
	return m
}

func TestLayering(t *testing.T) {
	m := imports(t)
	// Leaves: one rule each, importing none of Bouncer's packages, so
	// every caller can use them and none of them can drift by
	// depending on a caller.
	leaves := []string{"dest", "display", "envexpand", "filepos", "fsresolve", "jsontext", "pathtree", "redirect", "secret", "unixshim"}
	for _, l := range leaves {
		pkg := "internal/" + l
		if _, ok := m[pkg]; !ok {
			t.Errorf("%s: no such package (update the list)", pkg)
		}
		if len(m[pkg]) > 0 {
			t.Errorf("%s is a leaf but imports %v", pkg, m[pkg])
		}
	}
	// Near-leaves: what each may import, and nothing else. Taint records
	// a destination in the forms its receivers read it as, which are
	// dest's to say (dest.NumberForms), so it leans on dest alone.
	only := map[string][]string{
		"internal/taint": {"internal/dest"},
	}
	for pkg, ok := range only {
		if _, found := m[pkg]; !found {
			t.Errorf("%s: no such package (update the list)", pkg)
		}
		for _, imp := range m[pkg] {
			allowed := false
			for _, o := range ok {
				allowed = allowed || imp == o
			}
			if !allowed {
				t.Errorf("%s may import only %v, but imports %s", pkg, ok, imp)
			}
		}
	}
	// What each package may not import.
	forbidden := map[string][]string{
		// The transports move messages; they judge nothing.
		"internal/transport": {"internal/proxy", "internal/engine", "internal/approval", "internal/audit", "internal/taint", "internal/policy", "internal/session"},
		// The engine decides; it neither moves messages nor writes the log.
		"internal/engine": {"internal/proxy", "internal/transport", "internal/audit", "internal/approval", "internal/setup"},
		// The JSONC parser knows nothing of MCP clients.
		"internal/jsonc":      {"internal/mcpconfig", "internal/hooks", "internal/initplan"},
		"internal/yamlstrict": {"internal/policy", "internal/bundle"},
	}
	for pkg, bad := range forbidden {
		for _, imp := range m[pkg] {
			for _, b := range bad {
				if imp == b {
					t.Errorf("%s imports %s", pkg, imp)
				}
			}
		}
	}
	var users []string
	for pkg, imps := range m {
		for _, imp := range imps {
			// Product code never depends on test code.
			if strings.HasPrefix(imp, "internal/testsupport/") && !strings.HasPrefix(pkg, "internal/testsupport/") {
				t.Errorf("%s (product code) imports %s (test code)", pkg, imp)
			}
			// Only the command wires the pump.
			if imp == "internal/proxy" && pkg != "cmd/bouncer" {
				users = append(users, pkg)
			}
		}
	}
	sort.Strings(users)
	if len(users) > 0 {
		t.Errorf("only cmd/bouncer may import internal/proxy; also: %v", users)
	}
}
