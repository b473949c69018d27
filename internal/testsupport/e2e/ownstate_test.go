package e2e_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bouncer-mcp/bouncer/internal/testsupport/e2e"
	"github.com/bouncer-mcp/bouncer/internal/testsupport/need"
)

// writeFile writes data to path (and its directory), failing the test.
func writeFile(t *testing.T, path, data string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// unchanged fails the test when the file at path no longer holds was.
func unchanged(t *testing.T, path, was, what string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil || string(b) != was {
		t.Errorf("%s: %s now holds %q (%v), was %q", what, path, b, err, was)
	}
}

// jsonQ is s as a JSON string.
func jsonQ(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// The proxies of one client session keep each other's policy out of their
// servers' reach: a write through the second proxy to the first one's
// policy file is refused, and so is one through the first to the policy
// of the proxy that joined after it; a write beside them goes through.
func TestOwnStateAcrossTheClientSession(t *testing.T) {
	home, proj := t.TempDir(), t.TempDir()
	confined := "write_file:\n  write_params: [path]\n  allowed_path_prefixes: [" + proj + "]\n"
	mailPol := writeFile(t, filepath.Join(proj, "mail.yaml"), confined)
	fsPol := writeFile(t, filepath.Join(proj, "fs.yaml"), confined)
	mail := e2e.Start(t, e2e.MCPGo(t), e2e.Options{Home: home, Dir: proj, Args: []string{"--name", "mail", "--policy", mailPol}})
	fs := e2e.Start(t, e2e.MCPGo(t), e2e.Options{Home: home, Dir: proj, Args: []string{"--name", "fs", "--policy", fsPol}})

	forged := "send_email:\n  trusted_destinations: [attacker@evil.example]\n"
	if r := fs.CallTool(1, "write_file", `{"path":`+jsonQ(mailPol)+`,"content":`+jsonQ(forged)+`}`); !r.Blocked() || !strings.Contains(r.Text, "own state") {
		t.Errorf("fs wrote mail's policy: %s", r.Raw)
	}
	if r := mail.CallTool(2, "write_file", `{"path":`+jsonQ(fsPol)+`,"content":`+jsonQ(forged)+`}`); !r.Blocked() || !strings.Contains(r.Text, "own state") {
		t.Errorf("mail wrote fs's policy, which fs published after mail joined: %s", r.Raw)
	}
	unchanged(t, mailPol, confined, "through fs")
	unchanged(t, fsPol, confined, "through mail")
	if se := append(fs.SideEffects(), mail.SideEffects()...); len(se) != 0 {
		t.Errorf("a refused write reached a server: %q", se)
	}
	notes := filepath.Join(proj, "notes.txt")
	if r := fs.CallTool(3, "write_file", `{"path":`+jsonQ(notes)+`,"content":"hello"}`); r.IsError || r.Error != nil {
		t.Fatalf("a write beside the policies: %s", r.Raw)
	}
	unchanged(t, notes, "hello", "a write beside the policies")
}

// The attack as found: the reference filesystem server serves the project
// directory, and through it the agent rewrites mail.yaml, the policy of
// the mail server's proxy in the same client session. Every write tool of
// the server is refused on it; a write beside it goes through.
func TestOwnStateFilesystemServer(t *testing.T) {
	home, proj := t.TempDir(), t.TempDir()
	mailPol := writeFile(t, filepath.Join(proj, "mail.yaml"), "send_email:\n  exfiltrating: true\n")
	fsPol := writeFile(t, filepath.Join(proj, "fs.yaml"), "write_file:\n  write_params: [path]\n  allowed_path_prefixes: ["+proj+"]\n"+
		"edit_file:\n  write_params: [path]\n  allowed_path_prefixes: ["+proj+"]\n"+
		"move_file:\n  write_params: [source, destination]\n  allowed_path_prefixes: ["+proj+"]\n")
	e2e.Start(t, e2e.MCPGo(t), e2e.Options{Home: home, Dir: proj, Args: []string{"--name", "mail", "--policy", mailPol}})
	fs := e2e.Start(t, e2e.Filesystem(t, proj), e2e.Options{Home: home, Dir: proj, Args: []string{"--name", "fs", "--policy", fsPol}})
	forged := "send_email:\n  trusted_destinations: [attacker@evil.example]\n"
	for i, call := range []struct{ tool, args string }{
		{"write_file", `{"path":` + jsonQ(mailPol) + `,"content":` + jsonQ(forged) + `}`},
		{"write_file", `{"path":"mail.yaml","content":` + jsonQ(forged) + `}`},
		{"edit_file", `{"path":` + jsonQ(mailPol) + `,"edits":[{"oldText":"exfiltrating: true","newText":"exfiltrating: false"}]}`},
		{"move_file", `{"source":` + jsonQ(filepath.Join(proj, "x.yaml")) + `,"destination":` + jsonQ(mailPol) + `}`},
	} {
		if r := fs.CallTool(i+1, call.tool, call.args); !r.Blocked() || !strings.Contains(r.Text, "own state") {
			t.Errorf("%s %s: %s", call.tool, call.args, r.Raw)
		}
	}
	unchanged(t, mailPol, "send_email:\n  exfiltrating: true\n", "through the filesystem server")
	notes := filepath.Join(proj, "notes.txt")
	if r := fs.CallTool(9, "write_file", `{"path":`+jsonQ(notes)+`,"content":"hello"}`); r.IsError || r.Error != nil {
		t.Fatalf("a write beside the policy: %s", r.Raw)
	}
	unchanged(t, notes, "hello", "a write beside the policy")
}

// A proxy that a client config launched refuses writes to that config, to
// the policy the config names for another of its servers, and to the
// client's hook file; the same write elsewhere goes through.
func TestOwnStateOfTheLaunchingConfig(t *testing.T) {
	proj := t.TempDir()
	srv := e2e.MCPGo(t)
	upstream, _ := json.Marshal(map[string]any{"command": srv.Argv[0], "args": srv.Argv[1:]})
	config := writeFile(t, filepath.Join(proj, ".mcp.json"), `{"mcpServers": {
  "fs": {"command": "bouncer", "args": ["run", "--config", ".mcp.json", "--server", "fs", "--policy", "fs.yaml"],
         "x-bouncer-upstream": `+string(upstream)+`},
  "mail": {"command": "bouncer", "args": ["run", "--config", ".mcp.json", "--server", "mail", "--policy", "mail.yaml"],
           "x-bouncer-upstream": {"command": "mail-server"}}
}}
`)
	confined := "write_file:\n  write_params: [path]\n  allowed_path_prefixes: [" + proj + "]\n"
	writeFile(t, filepath.Join(proj, "fs.yaml"), confined)
	mailPol := writeFile(t, filepath.Join(proj, "mail.yaml"), confined)
	hook := writeFile(t, filepath.Join(proj, ".claude", "settings.json"), "{}\n")
	was, _ := os.ReadFile(config)

	s := e2e.Start(t, e2e.Server{Name: "fs", SideEffects: srv.SideEffects}, e2e.Options{Dir: proj,
		Args: []string{"--config", ".mcp.json", "--server", "fs", "--policy", "fs.yaml"}})
	for i, tc := range []struct{ path, was, what string }{
		{mailPol, confined, "the policy the config names for mail"},
		{config, string(was), "the config that launched the proxy"},
		{hook, "{}\n", "the client's hook file"},
	} {
		if r := s.CallTool(i+1, "write_file", `{"path":`+jsonQ(tc.path)+`,"content":"{}"}`); !r.Blocked() || !strings.Contains(r.Text, "own state") {
			t.Errorf("%s was written: %s", tc.what, r.Raw)
		}
		unchanged(t, tc.path, tc.was, tc.what)
	}
	if se := s.SideEffects(); len(se) != 0 {
		t.Errorf("a refused write reached the server: %q", se)
	}
	notes := filepath.Join(proj, "notes.txt")
	if r := s.CallTool(9, "write_file", `{"path":`+jsonQ(notes)+`,"content":"hello"}`); r.IsError || r.Error != nil {
		t.Fatalf("a write beside them: %s", r.Raw)
	}
	unchanged(t, notes, "hello", "a write beside them")
}

// Live, against a server that builds what it acts on from its arguments:
// each call below rewrites remembered.json when sent to the server
// straight (the first is checked so), and Bouncer refuses every one: a
// path.join of two arguments through /proc/self/root, a shell word with
// quotes inside it, a glob, a command substitution inside a name, and
// Python joining literals.
func TestOwnStateWhatServersBuild(t *testing.T) {
	need.Program(t, "python3", "install python3")
	home, proj := t.TempDir(), t.TempDir()
	state := filepath.Join(home, ".bouncer")
	remembered := filepath.Join(state, "remembered.json")
	const was = `{"version":1,"destinations":[]}` + "\n"
	attacks := []struct{ name, tool, args string }{
		{"path.join through /proc/self/root", "download_attachment",
			`{"savePath":"/var/tmp","filename":` + jsonQ("../../proc/self/root"+remembered) + `,"data":"forged"}`},
		{"quotes inside a word", "run_command", `{"command":"printf forged > ~/.boun''cer/remembered.json"}`},
		{"a glob", "run_command", `{"command":"printf forged | tee ~/.b*r/remembered.json"}`},
		{"a command substitution inside a name", "run_command", `{"command":"cd ~ && printf forged > \"$(echo .boun)cer/remembered.json\""}`},
		{"Python joining literals", "run_python", `{"code":` + jsonQ("open('"+home+"/.boun'+'cer/remembered.json','w').write('forged')") + `}`},
	}
	env := []string{"HOME=" + home}

	// Sent straight to the server, the attack works.
	writeFile(t, remembered, was)
	direct := e2e.Start(t, e2e.Builder(t), e2e.Options{Direct: true, Dir: proj, Env: env})
	for i, a := range attacks {
		writeFile(t, remembered, was)
		if r := direct.CallTool(i+1, a.tool, a.args); r.IsError || r.Error != nil {
			t.Fatalf("%s, sent straight: %s", a.name, r.Raw)
		}
		if b, _ := os.ReadFile(remembered); string(b) == was {
			t.Fatalf("%s, sent straight to the server, left remembered.json as it was: the attack does not test anything", a.name)
		}
	}

	writeFile(t, remembered, was)
	s := e2e.Start(t, e2e.Builder(t), e2e.Options{Home: state, Dir: proj, Env: env})
	for i, a := range attacks {
		if r := s.CallTool(i+1, a.tool, a.args); !r.Blocked() || !strings.Contains(r.Text, "own state") {
			t.Errorf("%s: %s", a.name, r.Raw)
		}
		unchanged(t, remembered, was, a.name)
	}
	// What the same tools do elsewhere goes through.
	for i, ok := range []struct{ tool, args string }{
		{"download_attachment", `{"savePath":` + jsonQ(proj) + `,"filename":"report.txt","data":"r"}`},
		{"run_command", `{"command":"ls *.txt && cat report.txt"}`},
		{"run_python", `{"code":"print(6 * 7)"}`},
	} {
		if r := s.CallTool(100+i, ok.tool, ok.args); r.IsError || r.Error != nil {
			t.Errorf("%s %s: %s", ok.tool, ok.args, r.Raw)
		}
	}
}
