package engine

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/bouncer-mcp/bouncer/internal/fsresolve"
)

// TestOwnState: no argument of any tool reaches Bouncer's own state,
// whatever the policy allows, in any spelling a server may read.
func TestOwnState(t *testing.T) {
	root := t.TempDir()
	home := filepath.Join(root, "home")
	state := filepath.Join(home, ".bouncer")
	proj := filepath.Join(home, "proj")
	for _, d := range []string{state, proj, filepath.Join(proj, "docs")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	pol := filepath.Join(proj, "bouncer.yaml")
	os.WriteFile(pol, []byte("x: {}\n"), 0o600)
	os.WriteFile(filepath.Join(state, "remembered.json"), []byte("{}"), 0o600)
	link := filepath.Join(proj, "docs", "state-link")
	if err := os.Symlink(state, link); err != nil {
		t.Fatal(err)
	}
	policyText := "write_file:\n  write_params: [path]\n  allowed_path_prefixes: [" + home + "]\n" +
		"move_file:\n  write_params: [source, destination]\n  allowed_path_prefixes: [" + home + "]\n" +
		"download_attachment:\n  write_params: [savePath, filename]\n"
	e, _ := newEngine(t, policyText, Options{
		Own: []string{state, pol}, Home: home, WorkDir: proj, Resolve: fsresolve.Existing,
	})
	deny := []struct{ name, tool, args string }{
		{"the remembered file", "write_file", `{"path":"` + state + `/remembered.json","content":"x"}`},
		{"the state directory itself", "write_file", `{"path":"` + state + `"}`},
		{"the policy file", "write_file", `{"path":"` + pol + `"}`},
		{"the policy file, relative", "write_file", `{"path":"bouncer.yaml"}`},
		{"the policy file, relative with dots", "write_file", `{"path":"./docs/../bouncer.yaml"}`},
		{"the state, relative from a parent", "download_attachment", `{"savePath":"../.bouncer","filename":"remembered.json"}`},
		{"a file name alone", "download_attachment", `{"savePath":"/tmp","filename":"bouncer.yaml"}`},
		{"through a symlink", "write_file", `{"path":"` + link + `/remembered.json"}`},
		{"home-relative", "read_file", `{"path":"~/.bouncer/audit.jsonl"}`},
		{"a file URI", "read_file", `{"uri":"file://` + state + `/key"}`},
		{"percent-encoded", "read_file", `{"path":"` + filepath.Dir(state) + `/%2ebouncer/audit.jsonl"}`},
		{"backslashes", "read_file", `{"path":"` + filepath.Dir(state) + `\\.bouncer\\audit.jsonl"}`},
		{"full-width solidus", "read_file", `{"path":"` + filepath.Dir(state) + `／.bouncer／audit.jsonl"}`},
		{"other case", "read_file", `{"path":"` + filepath.Dir(state) + `/.BOUNCER/audit.jsonl"}`},
		{"nested in a list of objects", "push_files", `{"files":[{"path":"ok.txt"},{"path":"` + pol + `"}]}`},
		{"an argument not named like a path", "send_email", `{"to":"a@b.example","attachments":["` + pol + `"]}`},
		{"a write to an ancestor", "move_file", `{"source":"` + home + `","destination":"/tmp/x"}`},
		// Spellings a shell or a server expands, in a tool with no path
		// confinement and in an argument not named like a path.
		{"$HOME", "open_doc", `{"path":"$HOME/.bouncer/remembered.json"}`},
		{"${HOME}", "run", `{"arg":"${HOME}/.bouncer/remembered.json"}`},
		{"~name", "run", `{"arg":"~alice/.bouncer/key"}`},
		{"another variable", "run", `{"arg":"$BOUNCER_STATE/.bouncer/key"}`},
		{"a space before ~", "run", `{"arg":" ~/.bouncer/key"}`},
		{"cut at a NUL", "open_doc", `{"path":"` + state + `\u0000.txt"}`},
		{"a percent-encoded NUL", "open_doc", `{"path":"` + state + `%00.txt"}`},
		{"percent-encoded twice", "open_doc", `{"path":"` + filepath.Dir(state) + `/%252ebouncer/audit.jsonl"}`},
		// A path inside a command line or code, which a shell or an
		// interpreter reads.
		{"in a shell command", "execute_command", `{"command":"cat ~/.bouncer/remembered.json"}`},
		{"after a redirection", "execute_command", `{"command":"echo x >` + state + `/key"}`},
		{"in code", "run_python", `{"code":"open('` + state + `/remembered.json','w')"}`},
		{"in a flag", "run", `{"args":["-o` + state + `/key"]}`},
		{"in a flag after =", "run", `{"args":["--output=` + pol + `"]}`},
	}
	for _, tc := range deny {
		d := e.Decide(call(tc.tool, tc.args))
		if d.Verdict != Deny || d.Rule != RulePath {
			t.Errorf("%s: %s %s: got %s/%s %q, want a path deny", tc.name, tc.tool, tc.args, d.Verdict, d.Rule, d.Reason)
		}
	}
	allow := []struct{ name, tool, args string }{
		{"a file in the project", "write_file", `{"path":"` + proj + `/notes.txt","content":"see ~/.bouncer/audit.jsonl"}`},
		{"a read of an ancestor", "list_directory", `{"path":"` + home + `"}`},
		{"a look-alike name", "write_file", `{"path":"` + proj + `/docs/bouncer.yaml.bak"}`},
		{"a sibling named like the state", "write_file", `{"path":"` + state + `x/a.txt"}`},
		{"prose with a slash", "post", `{"text":"and/or"}`},
		{"a command elsewhere", "execute_command", `{"command":"ls -la ` + proj + ` && cat ~/notes.txt"}`},
		{"a command reading an ancestor", "execute_command", `{"command":"ls ` + home + `"}`},
	}
	for _, tc := range allow {
		d := e.Decide(call(tc.tool, tc.args))
		if d.Rule == RulePath {
			t.Errorf("%s: %s %s: got %s/%s %q, want no path deny", tc.name, tc.tool, tc.args, d.Verdict, d.Rule, d.Reason)
		}
	}
}
