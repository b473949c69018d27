package mcpconfig

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

const claudeCode = `{
  "zeta": {"keep": [1, 2.50, "x"]},
  "mcpServers": {
    "fs": {
      "type": "stdio",
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"],
      "env": {"TOKEN": "a\u0040b"},
      "x-custom": {"nested": null}
    },
    "remote": {"type": "http", "url": "https://mcp.example/mcp"},
    "git": {
      "command": "uvx",
      "args": ["mcp-server-git"]
    }
  },
  "alpha": true
}
`

// canonical is a config already in the style render writes, so that
// wrap-then-undo must give back the very same bytes.
const canonical = `{
  "mcpServers": {
    "fs": {
      "command": "npx",
      "args": ["-y", "server-filesystem"],
      "env": {
        "B": "2",
        "A": "1"
      }
    }
  },
  "other": 1
}
`

const vscode = `{
    "inputs": [],
    "servers": {
        "github": {
            "type": "stdio",
            "command": "docker",
            "args": ["run", "-i", "ghcr.io/github/github-mcp-server"]
        }
    }
}`

func wrap(t *testing.T, text string, opts WrapOptions) ([]byte, []Change) {
	t.Helper()
	c, err := Parse("cfg.json", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if opts.ConfigArg == "" {
		opts.ConfigArg = "/abs/cfg.json"
	}
	out, ch, err := c.Wrap(opts)
	if err != nil {
		t.Fatal(err)
	}
	if !json.Valid(out) {
		t.Fatalf("wrap produced invalid JSON:\n%s", out)
	}
	return out, ch
}

// decode returns the document as generic values for semantic comparison.
func decode(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestWrap(t *testing.T) {
	tests := []struct {
		name    string
		text    string
		opts    WrapOptions
		block   string
		changes []string
	}{
		{"claude code", claudeCode, WrapOptions{}, "mcpServers",
			[]string{"fs: wrapped", "remote: left alone (remote servers need bouncer run --url (coming))", "git: wrapped"}},
		{"only named", claudeCode, WrapOptions{Servers: []string{"git"}}, "mcpServers", []string{"git: wrapped"}},
		{"vscode servers", vscode, WrapOptions{}, "servers", []string{"github: wrapped"}},
		{"unknown client's variables", `{"servers": {"gh": {"command": "x", "env": {"T": "${input:tok}"}}}}`, WrapOptions{}, "servers",
			[]string{"gh: left alone (env.T: ${input:tok} is in a file bouncer can't tell the client of, so not how the client expands it (docs/clients.md lists the files it knows))"}},
		{"not an object", `{"mcpServers": {"a": 3}}`, WrapOptions{}, "mcpServers", []string{"a: left alone (not an object)"}},
		{"bad args", `{"mcpServers": {"a": {"command": "x", "args": "y"}}}`, WrapOptions{}, "mcpServers", []string{"a: left alone (args is not a list of strings)"}},
		{"hand-wrapped", `{"mcpServers": {"a": {"command": "/usr/local/bin/bouncer", "args": ["run", "--", "x"]}, "b": {"command": "bouncer", "args": ["serve"]}}}`, WrapOptions{}, "mcpServers",
			[]string{"a: already wrapped (already launches bouncer run)", "b: wrapped"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, ch := wrap(t, tt.text, tt.opts)
			var got []string
			for _, c := range ch {
				got = append(got, c.String())
			}
			if !reflect.DeepEqual(got, tt.changes) {
				t.Errorf("changes = %q, want %q", got, tt.changes)
			}
			before, after := decode(t, []byte(tt.text)), decode(t, out)
			for _, c := range ch {
				orig := before[tt.block].(map[string]any)[c.Server]
				e := after[tt.block].(map[string]any)[c.Server]
				if c.Status != Wrapped {
					if !reflect.DeepEqual(orig, e) {
						t.Errorf("%s changed though left alone: %v", c.Server, e)
					}
					continue
				}
				m := e.(map[string]any)
				if !reflect.DeepEqual(m[UpstreamKey], orig) {
					t.Errorf("%s: upstream %v, want the original %v", c.Server, m[UpstreamKey], orig)
				}
				wantArgs := []any{"run", "--config", "/abs/cfg.json", "--server", c.Server}
				if m["command"] != "bouncer" || !reflect.DeepEqual(m["args"], wantArgs) {
					t.Errorf("%s: launches %v %v", c.Server, m["command"], m["args"])
				}
				if typ, had := orig.(map[string]any)["type"]; had && m["type"] != typ {
					t.Errorf("%s: type %v not kept", c.Server, m["type"])
				}
			}
			// Everything outside the block is untouched, semantically.
			for k, v := range before {
				if k != tt.block && !reflect.DeepEqual(after[k], v) {
					t.Errorf("key %s changed", k)
				}
			}
		})
	}
}

func TestWrapKeepsOtherBytes(t *testing.T) {
	out, _ := wrap(t, claudeCode, WrapOptions{Servers: []string{"git"}})
	s := string(out)
	// The parts of the file outside the rewritten entry are byte-identical,
	// key order, spacing and escapes included.
	head := claudeCode[:strings.Index(claudeCode, `"git"`)]
	tail := claudeCode[strings.Index(claudeCode, "\n  },\n  \"alpha\""):]
	if !strings.HasPrefix(s, head) || !strings.HasSuffix(s, tail) {
		t.Fatalf("bytes outside the entry changed:\n%s", s)
	}
	if strings.Index(s, `"zeta"`) > strings.Index(s, `"mcpServers"`) || strings.Index(s, `"mcpServers"`) > strings.Index(s, `"alpha"`) {
		t.Error("key order changed")
	}
}

func TestIdempotentAndUndo(t *testing.T) {
	for _, text := range []string{claudeCode, canonical, vscode, strings.ReplaceAll(canonical, "\n", "\r\n")} {
		once, _ := wrap(t, text, WrapOptions{})
		twice, ch := wrap(t, string(once), WrapOptions{})
		if string(once) != string(twice) {
			t.Errorf("second wrap changed the file:\n%s\n---\n%s", once, twice)
		}
		for _, c := range ch {
			if c.Status == Wrapped {
				t.Errorf("second wrap wrapped %s again", c.Server)
			}
		}
		c, err := Parse("cfg.json", once)
		if err != nil {
			t.Fatal(err)
		}
		undone, _, err := c.Undo("", nil)
		if err != nil {
			t.Fatal(err)
		}
		if string(undone) != text {
			t.Errorf("undo is not byte-identical:\n%q\n%q", undone, text)
		}
		if strings.Contains(text, "\r\n") && strings.Contains(strings.ReplaceAll(string(once), "\r\n", ""), "\n") {
			t.Error("CRLF file got LF lines")
		}
	}
}

func TestVSCodeIndentUnit(t *testing.T) {
	out, _ := wrap(t, vscode, WrapOptions{})
	if !strings.Contains(string(out), "\n            \"command\": \"bouncer\",") {
		t.Errorf("wrapped entry does not use the file's 4-space unit:\n%s", out)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, text, want string
	}{
		{"two trailing commas", "{\n  \"mcpServers\": {},,\n}", "cfg.json:2:20: not valid JSON"},
		{"open comment", "{\n  /* hi\n  \"servers\": {}\n}", "cfg.json:2:3: not valid JSON: a /* comment is never closed"},
		{"truncated", "{\"mcpServers\": {", "cfg.json:1:17: not valid JSON: unexpected end of input"},
		{"empty", "", "cfg.json:1:1: not valid JSON"},
		{"bom", "\xef\xbb\xbf{\"servers\": {}}", "byte-order mark"},
		{"array root", "[]", "cfg.json:1:1: the top level is not a JSON object"},
		{"block not object", "{\n \"mcpServers\": []}", `cfg.json:2:16: "mcpServers" is not an object`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("cfg.json", []byte(tt.text))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
			var ce *Error
			if !errors.As(err, &ce) {
				t.Errorf("not an *Error: %T", err)
			}
		})
	}
	c, err := Parse("cfg.json", []byte(`{"x": 1}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Wrap(WrapOptions{}); err == nil || !strings.Contains(err.Error(), `cfg.json: no "mcpServers"`) {
		t.Errorf("no block: err = %v", err)
	}
}

func TestUnknownServer(t *testing.T) {
	c, err := Parse("cfg.json", []byte(claudeCode))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Wrap(WrapOptions{Servers: []string{"nope", "fs"}}); err == nil || !strings.Contains(err.Error(), `no server named "nope"`) {
		t.Errorf("err = %v", err)
	}
}

func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, ".mcp.json")
	if err := os.WriteFile(path, []byte(claudeCode), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o640); err != nil {
		t.Fatal(err)
	}
	c, err := Load(path, Kept{})
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := c.Wrap(WrapOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Write(out); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	bak, _ := os.ReadFile(path + ".bak")
	if string(got) != string(out) || string(bak) != claudeCode {
		t.Errorf("file or backup wrong:\n%s\n---\n%s", got, bak)
	}
	for _, p := range []string{path, path + ".bak"} {
		fi, _ := os.Stat(p)
		if fi.Mode().Perm() != 0o640 {
			t.Errorf("%s mode %v, want 0640", p, fi.Mode().Perm())
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Errorf("stray files left: %v", entries)
	}
	// A file edited since Load is not overwritten.
	if err := os.WriteFile(path, []byte(`{"mcpServers": {}}`), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := c.Write(out); err == nil || !strings.Contains(err.Error(), "changed since it was read") {
		t.Errorf("err = %v", err)
	}
	if got, _ := os.ReadFile(path); string(got) != `{"mcpServers": {}}` {
		t.Error("edited file was overwritten")
	}
}

func TestWriteThroughSymlink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "real.json")
	link := filepath.Join(dir, "link.json")
	if err := os.WriteFile(target, []byte(canonical), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	c, err := Load(link, Kept{})
	if err != nil {
		t.Fatal(err)
	}
	out, _, _ := c.Wrap(WrapOptions{})
	if err := c.Write(out); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Lstat(link); fi.Mode()&os.ModeSymlink == 0 {
		t.Error("symlink replaced by a file")
	}
	if got, _ := os.ReadFile(target); string(got) != string(out) {
		t.Error("target not rewritten")
	}
}

// Create makes a new file (and its directory) with the modes given, and
// refuses a name that is taken by then, a dangling symbolic link
// included, writing nothing.
func TestCreate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".claude")
	p := filepath.Join(dir, "settings.json")
	if err := Create(p, []byte("{}\n"), 0o644, 0o700); err != nil {
		t.Fatal(err)
	}
	for f, want := range map[string]os.FileMode{p: 0o644, dir: 0o700} {
		if fi, err := os.Stat(f); err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: %v, %v; want %04o", f, fi.Mode(), err, want)
		}
	}
	link := filepath.Join(dir, "hooks.json")
	if err := os.Symlink(filepath.Join(dir, "gone"), link); err != nil {
		t.Fatal(err)
	}
	for _, taken := range []string{p, link} {
		if err := Create(taken, []byte("x"), 0o600, 0o700); err == nil || !strings.Contains(err.Error(), "appeared since it was read; nothing written") {
			t.Errorf("%s: err = %v", taken, err)
		}
	}
	if got, _ := os.ReadFile(p); string(got) != "{}\n" {
		t.Errorf("%s now holds %q", p, got)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Errorf("stray files left: %v", entries)
	}
}

func resolve(file, server string) (Resolved, error) {
	return Resolve(Lookup{File: file, Server: server, Getenv: func(string) (string, bool) { return "", false }})
}

func TestResolve(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "mcp.json")
	text := `{"mcpServers": {
  "fs": {"command": "bouncer", "args": ["run"], "x-bouncer-upstream": {"command": "npx", "args": ["-y", "srv"], "env": {"K": "v"}, "cwd": "sub"}},
  "plain": {"command": "npx"},
  "badargs": {"x-bouncer-upstream": {"command": "npx", "args": [1]}},
  "nocmd": {"x-bouncer-upstream": {"args": []}},
  "notobj": {"x-bouncer-upstream": "npx"}
}, "servers": {"fs": {}}}`
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	only := filepath.Join(dir, "only.json")
	if err := os.WriteFile(only, []byte(strings.Replace(text, `"servers": {"fs": {}}`, `"x": 1`, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := resolve(only, "fs")
	if err != nil {
		t.Fatal(err)
	}
	want := Entry{Command: "npx", Args: []string{"-y", "srv"}, Env: map[string]string{"K": "v"}, Cwd: filepath.Join(dir, "sub")}
	if !reflect.DeepEqual(r.Entry, want) {
		t.Errorf("got %+v, want %+v", r.Entry, want)
	}
	for server, msg := range map[string]string{
		"fs":      `mcp.json:7:16: server "fs" is in both mcpServers and servers`,
		"plain":   `server "plain" was never wrapped (no x-bouncer-upstream); run bouncer init first`,
		"badargs": `mcp.json:4:64: server "badargs": x-bouncer-upstream.args must be a list of strings`,
		"nocmd":   `x-bouncer-upstream.command must be a non-empty string`,
		"notobj":  `x-bouncer-upstream is not an object`,
		"missing": `no server named "missing"`,
	} {
		if _, err := resolve(path, server); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%s: err = %v, want %q", server, err, msg)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{claudeCode, canonical, vscode, vscodeComments, `{"mcpServers": {"a": {"command": "x", "x-bouncer-upstream": {}}}}`, "{", `{"servers": []}`,
		"{\"mcpServers\": {\"a\": {\"command\": \"x\" /* c */, \"type\": \"stdio\",}}}", `{"mcpServers": {"r": {"type": "http", "url": "https://x"}}}`} {
		f.Add([]byte(s), false, false)
		f.Add([]byte(s), true, true)
	}
	f.Fuzz(func(t *testing.T, data []byte, remote, strict bool) {
		// A KeepsOriginal client's file (Gemini CLI's) keeps its originals out
		// of the file, here in memory as Kept.Record would.
		name := "f.json"
		if strict {
			name = "/p/.gemini/settings.json"
		}
		c, err := Parse(name, data)
		if err != nil {
			return
		}
		opts := WrapOptions{ConfigArg: "/c.json", Remote: remote, ExtraArgs: []string{"--policy", "p.yaml"}}
		out, changes, err := c.Wrap(opts)
		if err != nil {
			return
		}
		c2, err := Parse(name, out)
		if err != nil {
			t.Fatalf("wrapped output does not parse: %v\n%q\n%q", err, data, out)
		}
		if strict {
			c2.kept = map[string]map[string]keptEntry{}
			for _, ch := range changes {
				if ch.Kept != "" {
					if c2.kept[ch.Block] == nil {
						c2.kept[ch.Block] = map[string]keptEntry{}
					}
					c2.kept[ch.Block][ch.Server] = keptEntry{Entry: ch.Kept}
				}
			}
			if strings.Contains(string(out), UpstreamKey) && !strings.Contains(string(data), UpstreamKey) {
				t.Fatalf("a strict client's file got %s:\n%q", UpstreamKey, out)
			}
		}
		// A strict JSON file (what Claude Desktop and Claude Code read with
		// JSON.parse) stays strict JSON; that a JSONC file stays JSONC is
		// the Parse above, whose reader internal/jsonc checks against
		// encoding/json.
		if json.Valid(data) && !json.Valid(out) {
			t.Fatalf("wrap of JSON made invalid JSON:\n%q\n%q", data, out)
		}
		again, _, err := c2.Wrap(opts)
		if err != nil || string(again) != string(out) {
			t.Fatalf("wrap is not idempotent: %v", err)
		}
		wrappedAny, hadWrapped := false, false
		for _, ch := range changes {
			wrappedAny = wrappedAny || ch.Status == Wrapped
			hadWrapped = hadWrapped || ch.Status == AlreadyWrapped
		}
		undone, _, err := c2.Undo("", nil)
		if err != nil {
			return // a pre-existing malformed x-bouncer-upstream
		}
		if wrappedAny && !hadWrapped && string(undone) != string(data) {
			t.Fatalf("undo of wrap is not the original:\n%q\n%q", data, undone)
		}
	})
}

// A key repeated anywhere on the path init reads or rewrites (a server
// block, an entry, its launch keys, the x-bouncer-upstream entry inside
// it) is refused at the second key's place, because the client keeps the
// last of two equal keys (JSON.parse, VS Code's jsonc-parser) and the file
// would mean one server to it and another to bouncer. A repeat elsewhere
// in the file (the client's own settings, another project's servers) is
// not init's business and is left to the client.
func TestDuplicateKeys(t *testing.T) {
	for _, tt := range []struct {
		name, text, project, want string
	}{
		{"command", "{\"mcpServers\": {\"files\": {\n  \"command\": \"npx\",\n  \"command\": \"curl\"}}}", "",
			`cfg.json:3:3: "command" appears twice in mcpServers.files (first at line 2); clients keep the last one, and bouncer won't guess which you meant: remove one of the two "command" keys`},
		{"args", `{"servers": {"g": {"command": "docker", "args": ["a"], "args": ["b"]}}}`, "",
			`cfg.json:1:56: "args" appears twice in servers.g (first at line 1)`},
		{"env key", `{"mcpServers": {"g": {"command": "x", "env": {"TOKEN": "a", "TOKEN": "b"}}}}`, "",
			`"TOKEN" appears twice in mcpServers.g.env`},
		{"header", `{"mcpServers": {"r": {"url": "https://x", "headers": {"Authorization": "a", "Authorization": "b"}}}}`, "",
			`"Authorization" appears twice in mcpServers.r.headers`},
		{"url", `{"mcpServers": {"r": {"url": "https://a", "url": "https://b"}}}`, "",
			`remove one of the two "url" keys`},
		{"upstream command", `{"mcpServers": {"fs": {"command": "bouncer", "args": ["run"], "x-bouncer-upstream": {"command": "npx", "command": "sh"}}}}`, "",
			`"command" appears twice in mcpServers.fs.x-bouncer-upstream`},
		{"nested in an entry", `{"mcpServers": {"fs": {"command": "x", "oauth": {"a": [{"k": 1, "k": 2}]}}}}`, "",
			`"k" appears twice in mcpServers.fs.oauth.a[0]`},
		{"server", "{\"mcpServers\": {\"a\": {},\n \"a\": {}}}", "",
			`cfg.json:2:2: "a" appears twice in mcpServers (first at line 1)`},
		{"block", `{"servers": {}, "servers": {}}`, "",
			`cfg.json:1:17: "servers" appears twice in the top level (first at line 1)`},
		{"project's server", `{"projects": {"/p": {"mcpServers": {"fs": {"command": "a", "command": "b"}}}}}`, "/p",
			`"command" appears twice in projects[/p].mcpServers.fs`},
		{"project", `{"projects": {"/p": {"mcpServers": {}}, "/p": {}}}`, "/p",
			`"/p" appears twice in projects`},
		{"a name that writes to the terminal", `{"mcpServers": {"x\u001b[2J\u202e": {"env": {"K": "", "K": ""}}}}`, "",
			`"K" appears twice in mcpServers.x\x1b[2J\u202e.env (first at line 1)`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse("cfg.json", []byte(tt.text))
			if err == nil {
				_, _, err = c.Wrap(WrapOptions{Project: tt.project, Remote: true})
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
			var ce *Error
			if !errors.As(err, &ce) || ce.Line == 0 {
				t.Errorf("not an *Error with a line: %#v", err)
			}
		})
	}
	// Off the path: the client's own settings, and another project's
	// servers, which init neither reads nor rewrites.
	for _, text := range []string{
		`{"theme": "dark", "theme": "light", "mcpServers": {"fs": {"command": "npx"}}}`,
		`{"inputs": [{"id": "a", "id": "b"}], "servers": {"fs": {"command": "npx"}}}`,
		`{"projects": {"/other": {"mcpServers": {"x": {"command": "a", "command": "b"}}}, "/p": {"mcpServers": {"fs": {"command": "npx"}}}}}`,
	} {
		c, err := Parse("cfg.json", []byte(text))
		if err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		if _, ch, err := c.Wrap(WrapOptions{Project: "/p"}); err != nil || len(ch) != 1 || ch[0].Status != Wrapped {
			t.Errorf("%s: changes %v, err %v", text, ch, err)
		}
	}
}

// bouncer run --config reads the x-bouncer-upstream entry through the same
// check: a repeated command there is refused, not resolved to the first.
func TestResolveDuplicateKeys(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mcp.json")
	text := "{\"mcpServers\": {\"fs\": {\"command\": \"bouncer\", \"args\": [\"run\"],\n  \"x-bouncer-upstream\": {\"command\": \"npx\",\n    \"command\": \"sh\"}}}}"
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := resolve(path, "fs")
	if want := `mcp.json:3:5: "command" appears twice in mcpServers.fs.x-bouncer-upstream (first at line 2)`; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("err = %v, want %q", err, want)
	}
}

// TestWrapRelaunch: an entry wrapped before gets the new command where
// Relaunch says so, and nothing else of it changes; Undo gives back the
// original entry whatever the command became.
func TestWrapRelaunch(t *testing.T) {
	orig := `{
  "mcpServers": {
    "a": {"command": "npx", "args": ["srv-a"]},
    "b": {"command": "uvx", "args": ["srv-b"]},
    "c": {"command": "uvx", "args": ["srv-c"]}
  }
}
`
	c, err := Parse("/h/.cursor/mcp.json", []byte(orig))
	if err != nil {
		t.Fatal(err)
	}
	wrapped, _, err := c.Wrap(WrapOptions{Command: "bouncer", Servers: []string{"a", "b"}})
	if err != nil {
		t.Fatal(err)
	}
	// b launches the user's own wrapper, which Relaunch keeps.
	wrapped = []byte(strings.Replace(string(wrapped), `"command": "bouncer",
      "args": ["run", "--config", "/h/.cursor/mcp.json", "--server", "b"]`, `"command": "/usr/local/bin/my-wrapper",
      "args": ["run", "--config", "/h/.cursor/mcp.json", "--server", "b"]`, 1))
	c, err = Parse("/h/.cursor/mcp.json", wrapped)
	if err != nil {
		t.Fatal(err)
	}
	out, changes, err := c.Wrap(WrapOptions{Command: "/opt/my bin/bouncer", Relaunch: func(cur string) bool { return cur == "bouncer" }})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ch := range changes {
		got = append(got, ch.String())
	}
	want := []string{`a: command updated (was "bouncer")`, "b: already wrapped", "c: wrapped"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("changes %q, want %q", got, want)
	}
	if strings.Count(string(out), `"command": "/opt/my bin/bouncer"`) != 2 || !strings.Contains(string(out), `"command": "/usr/local/bin/my-wrapper"`) {
		t.Errorf("wrapped:\n%s", out)
	}
	c, err = Parse("/h/.cursor/mcp.json", out)
	if err != nil {
		t.Fatal(err)
	}
	servers, _ := c.Servers("")
	if servers[0].Command != "/opt/my bin/bouncer" || servers[1].Command != "/usr/local/bin/my-wrapper" {
		t.Errorf("servers %+v", servers)
	}
	undone, _, err := c.Undo("", nil)
	if err != nil || string(undone) != orig {
		t.Errorf("undo (%v):\n%s", err, undone)
	}
}

// TestOtherProjects lists the servers of ~/.claude.json's other projects,
// wrapped or not, and nothing of the project init runs in.
func TestOtherProjects(t *testing.T) {
	c, err := Parse("/h/.claude.json", []byte(`{
  "mcpServers": {"top": {"command": "x"}},
  "projects": {
    "/p": {"mcpServers": {"mine": {"command": "x"}}},
    "/q": {"mcpServers": {"one": {"command": "x"}, "two": {"command": "bouncer", "args": ["run"], "x-bouncer-upstream": {"command": "y"}}}},
    "/r": {"mcpServers": {}},
    "/s": {"allowedTools": []},
    "/t": {"mcpServers": {"hand": {"command": "/opt/bouncer", "args": ["run", "--", "z"]}}}
  }
}`))
	if err != nil {
		t.Fatal(err)
	}
	got := c.OtherProjects("/p")
	want := []ProjectServers{
		{Dir: "/q", Unwrapped: []string{"one"}, Wrapped: []string{"two"}},
		{Dir: "/t", Wrapped: []string{"hand"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}
