package mcpconfig

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// A Gemini CLI settings file as its users write it (JSONC), with a
// client's own key (trust) and a server that passes a variable.
const geminiSettings = `{
  // Gemini CLI refuses a key it does not know in a server entry.
  "theme": "Default",
  "mcpServers": {
    "desk": {
      "command": "helpdesk",
      "args": ["--data", "$HOME/data"],
      "env": {"TOKEN": "${TOKEN}"},
      "trust": false,
    },
    "remote": {"httpUrl": "https://mcp.example/mcp", "timeout": 5000}
  }
}
`

// In a KeepsOriginal client's file the wrapped entry holds only what the client
// knows; the original is kept in the state directory, where Resolve,
// Servers and Undo find it, and Undo puts the file back byte for byte.
func TestKeptOriginals(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, ".gemini", "settings.json")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(geminiSettings), 0o644); err != nil {
		t.Fatal(err)
	}
	k := Kept{State: filepath.Join(dir, "state")}
	c, err := Load(path, k)
	if err != nil {
		t.Fatal(err)
	}
	if c.Client != Gemini || !c.Client.KeepsOriginal() {
		t.Fatalf("client %q", c.Client)
	}
	out, changes, err := c.Wrap(WrapOptions{ConfigArg: ".gemini/settings.json", Remote: true})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), UpstreamKey) {
		t.Fatalf("the wrapped file holds %s:\n%s", UpstreamKey, out)
	}
	for _, ch := range changes {
		if ch.Status != Wrapped || ch.Kept == "" {
			t.Fatalf("change %+v: want wrapped, with the original to keep", ch)
		}
	}
	if changes[0].Kept != `{
      "command": "helpdesk",
      "args": ["--data", "$HOME/data"],
      "env": {"TOKEN": "${TOKEN}"},
      "trust": false,
    }` {
		t.Errorf("kept %q", changes[0].Kept)
	}
	if !strings.Contains(string(out), `"trust": false,`) || !strings.Contains(string(out), `"timeout": 5000,`) {
		t.Errorf("the client's own keys are not on the wrapped entries:\n%s", out)
	}

	// Wrapped, but nothing kept yet: run refuses, naming where it looked.
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Resolve(Lookup{File: path, Server: "desk", Getenv: os.LookupEnv, Kept: k})
	if err == nil || !strings.Contains(err.Error(), `server "desk" has no original entry kept for it in `+k.Path()) {
		t.Fatalf("resolve with nothing kept: %v", err)
	}

	if err := k.Record(path, changes); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(k.Path())
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("%s: %v, %v", k.Path(), fi, err)
	}
	env := map[string]string{"HOME": "/home/me", "TOKEN": "t0k"}
	r, err := Resolve(Lookup{File: path, Server: "desk", Kept: k, Getenv: func(n string) (string, bool) { v, ok := env[n]; return v, ok }})
	if err != nil {
		t.Fatal(err)
	}
	want := Entry{Command: "helpdesk", Args: []string{"--data", "/home/me/data"}, Env: map[string]string{"TOKEN": "t0k"}}
	if !reflect.DeepEqual(r.Entry, want) {
		t.Errorf("resolved %+v, want %+v", r.Entry, want)
	}
	// A relative --config names the same file.
	wd, _ := os.Getwd()
	if err := os.Chdir(dir); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chdir(wd) })
	if r, err := Resolve(Lookup{File: ".gemini/settings.json", Server: "remote", Kept: k, Getenv: os.LookupEnv}); err != nil || r.URL != "https://mcp.example/mcp" {
		t.Errorf("relative --config: %+v, %v", r.Entry, err)
	}

	c, err = Load(path, k)
	if err != nil {
		t.Fatal(err)
	}
	servers, err := c.Servers("")
	if err != nil {
		t.Fatal(err)
	}
	if len(servers) != 2 || !servers[0].Wrapped || servers[0].Launch.Command != "helpdesk" || !servers[1].Wrapped || !servers[1].Remote {
		t.Errorf("servers %+v", servers)
	}
	// Wrapping again changes nothing.
	if again, ch, err := c.Wrap(WrapOptions{ConfigArg: ".gemini/settings.json", Remote: true}); err != nil || string(again) != string(out) || ch[0].Status != AlreadyWrapped {
		t.Errorf("wrap again: %v %+v", err, ch)
	}
	undone, restored, err := c.Undo("", nil)
	if err != nil {
		t.Fatal(err)
	}
	if string(undone) != geminiSettings {
		t.Errorf("undo is not the original:\n%s", undone)
	}
	if err := k.Record(path, restored); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(k.Path()); strings.TrimSpace(string(b)) != "{}" {
		t.Errorf("restored entries are still kept: %s", b)
	}

	// An entry the user replaced since is theirs: what is kept for it
	// is not its original.
	if err := k.Record(path, changes); err != nil {
		t.Fatal(err)
	}
	c, err = Parse(path, []byte(strings.Replace(string(out), `"--server", "desk"`, `"--server", "other"`, 1)))
	if err != nil {
		t.Fatal(err)
	}
	if c.kept, err = k.of(path); err != nil {
		t.Fatal(err)
	}
	if servers, _ := c.Servers(""); servers[0].Kept || !servers[0].HandWrapped {
		t.Errorf("an entry that no longer launches its own --server has its kept original: %+v", servers[0])
	}
	if _, ch, err := c.Undo("", []string{"desk"}); err != nil || ch[0].Status != NotWrapped {
		t.Errorf("undo restored the kept original over an entry the user replaced: %v %+v", err, ch)
	}
}

// A kept file that another user may write is not trusted: it says what
// bouncer run starts.
func TestKeptRefusesUntrusted(t *testing.T) {
	k := Kept{State: t.TempDir()}
	if err := os.WriteFile(k.Path(), []byte("{}"), 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(k.Path(), 0o666); err != nil {
		t.Fatal(err)
	}
	if _, err := k.of("/x/.gemini/settings.json"); err == nil {
		t.Fatal("a world-writable kept file was read")
	}
}
