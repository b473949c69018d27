package initplan

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bouncer-mcp/bouncer/internal/mcpconfig"
	"github.com/bouncer-mcp/bouncer/internal/policy"
)

// loadPolicyArg is a Loader for the test: the --policy file of the args,
// over the packs (policy.Load). cmd/bouncer's reads run's own flags; the
// testscripts pin that one.
func loadPolicyArg(args []string, base string) (*policy.Policy, []string, error) {
	for i, a := range args {
		if a == "--policy" && i+1 < len(args) {
			f := args[i+1]
			if !filepath.IsAbs(f) {
				f = filepath.Join(base, f)
			}
			pol, err := policy.Load(f)
			return pol, []string{args[i+1]}, err
		}
	}
	return nil, nil, errors.New("no --policy")
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// The summary groups servers by config, read again as they are once
// written; names the command they launch when all launch one; says what
// is not proxied and what would not start; and names a policy file that
// filesystem servers of two configs share.
func TestSummaryWrite(t *testing.T) {
	proj := t.TempDir()
	fs := `{"command": "bouncer", "args": ["run", "--config", ".mcp.json", "--server", "fs", "--policy", "bouncer.yaml"], "x-bouncer-upstream": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "src"]}}`
	writeFile(t, filepath.Join(proj, ".mcp.json"), `{"mcpServers": {"fs": `+fs+`, "plain": {"command": "uvx", "args": ["mcp-server-git"]}}}`)
	writeFile(t, filepath.Join(proj, ".cursor", "mcp.json"), `{"mcpServers": {"fs": `+strings.Replace(fs, `"bouncer"`, `"/opt/bouncer"`, 1)+`,
	  "bad": {"command": "/opt/bouncer", "args": ["run", "--policy", "missing.yaml"], "x-bouncer-upstream": {"command": "x"}}}}`)
	writeFile(t, filepath.Join(proj, "bouncer.yaml"), "# empty\n")
	plan := &Plan{Cwd: proj, Home: t.TempDir()}
	s := &Summary{Plan: plan, Load: loadPolicyArg}
	for _, p := range []string{".mcp.json", ".cursor/mcp.json"} {
		f := mcpconfig.FoundAt(filepath.Join(proj, p), mcpconfig.Where{Home: plan.Home, Dir: proj})
		s.Done(f, nil)
	}
	s.KeptOut(mcpconfig.FoundAt(filepath.Join(proj, ".mcp.json"), mcpconfig.Where{}), map[string][]string{"fs": {"src/.mcp.json"}})
	// The last line names what is left unprotected, with why: the reason
	// Left recorded, else that it is not wrapped; and the configs init
	// could not read.
	s.Left(mcpconfig.FoundAt(filepath.Join(proj, ".mcp.json"), mcpconfig.Where{}), []mcpconfig.Change{
		{Server: "plain", Status: mcpconfig.Skipped, Reason: "env.T: ${input:t} is filled in by VS Code itself"},
		{Server: "fs", Status: mcpconfig.AlreadyWrapped},
	}, "you answered no")
	s.Unread(mcpconfig.FoundAt(filepath.Join(proj, ".vscode", "mcp.json"), mcpconfig.Where{}), "not read")
	var out bytes.Buffer
	s.Write(&out)
	got := out.String()
	for _, want := range []string{
		"\nWhat is enforced:\n  .mcp.json (Claude Code, project; its servers launch bouncer):\n    fs: ",
		"; kept from its writes: src/.mcp.json (another server's policy, Bouncer's state directory)\n    plain: not proxied; nothing enforced\n",
		"  .cursor/mcp.json (Cursor, project; its servers launch /opt/bouncer):\n    fs: ",
		"    bad: its policy does not load (",
		"): bouncer run will refuse to start it\n",
		"  bouncer.yaml is one policy for the filesystem servers fs (.mcp.json), fs (.cursor/mcp.json): Bouncer lets each write in the directories of all of them",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("summary lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "missing.yaml is one policy") {
		t.Errorf("a policy that does not load is said to be shared:\n%s", got)
	}

	var last bytes.Buffer
	if n := s.WriteLast(&last); n != 2 || last.String() != "\nLeft unprotected, with nothing enforced: plain (.mcp.json: env.T: ${input:t} is filled in by VS Code itself); every server of .vscode/mcp.json (not read).\n" {
		t.Errorf("last line (%d): %q", n, last.String())
	}

	var none bytes.Buffer
	(&Summary{Plan: plan, Load: loadPolicyArg}).Write(&none)
	if none.Len() != 0 {
		t.Errorf("nothing done, yet: %q", none.String())
	}
}

// The other projects of ~/.claude.json are named, per project, with the
// servers init left: unwrapped ones after a wrap, wrapped ones after an
// undo; a directory that is gone says so.
func TestSummaryWriteOthers(t *testing.T) {
	home := t.TempDir()
	theirs := t.TempDir()
	claude := filepath.Join(home, ".claude.json")
	writeFile(t, claude, `{"projects": {
	  "/p": {"mcpServers": {"mine": {"command": "x"}}},
	  "`+theirs+`": {"mcpServers": {"time": {"command": "uvx"}, "two": {"command": "bouncer", "args": ["run"], "x-bouncer-upstream": {"command": "y"}}}},
	  "/gone/project": {"mcpServers": {"old": {"command": "z"}}}
	}}`)
	cfg, err := mcpconfig.Load(claude, mcpconfig.Kept{})
	if err != nil {
		t.Fatal(err)
	}
	s := &Summary{Plan: &Plan{Cwd: "/p", Home: home}}
	s.Others(mcpconfig.FoundAt(claude, mcpconfig.Where{Home: home, Dir: "/p"}), cfg)
	var wrap, undo bytes.Buffer
	s.WriteOthers(&wrap, false)
	s.WriteOthers(&undo, true)
	if want := "\nNot wrapped: the servers of other projects in ~/.claude.json, which Claude Code starts only in that project's directory:\n  " + theirs + ": time\n  /gone/project: old (no such directory now)\nTo wrap them, run bouncer init in each of those directories.\n"; wrap.String() != want {
		t.Errorf("after a wrap:\n%s\nwant:\n%s", wrap.String(), want)
	}
	if want := "\nStill wrapped: the servers of other projects in ~/.claude.json, which Claude Code starts only in that project's directory:\n  " + theirs + ": two\nTo restore them, run bouncer init --undo in each of those directories.\n"; undo.String() != want {
		t.Errorf("after an undo:\n%s\nwant:\n%s", undo.String(), want)
	}
}
