package initplan

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/bouncer-mcp/bouncer/internal/hooks"
	"github.com/bouncer-mcp/bouncer/internal/statefile"
)

// The record is a state file: made with its directory (0700) on the
// first update, 0600, read back as written, an entry dropped when nothing
// is left of it and the others kept; and one that another user may write
// is refused, not trusted to say what undo removes from the user's files.
func TestRecord(t *testing.T) {
	state := filepath.Join(t.TempDir(), "home", ".bouncer")
	r := Record{State: state}
	if a, err := r.Get("/p/.claude/settings.json"); err != nil || !a.Empty() {
		t.Fatalf("no record yet: %+v, %v", a, err)
	}
	claude := hooks.Added{Hook: true, Command: "bouncer hook prompt", Deny: []string{"Bash(bouncer approve:*)"}}
	cursor := hooks.Added{Created: "{}\n"}
	if err := r.Update("/p/.claude/settings.json", func(a *hooks.Added) { *a = claude }); err != nil {
		t.Fatal(err)
	}
	if err := r.Update("/p/.cursor/hooks.json", func(a *hooks.Added) { *a = cursor }); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]os.FileMode{state: 0o700, filepath.Join(state, RecordFile): 0o600} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: %v, %v; want %04o", p, fi.Mode(), err, want)
		}
	}
	b, _ := os.ReadFile(filepath.Join(state, RecordFile))
	want := "{\n  \"/p/.claude/settings.json\": {\n    \"hook\": true,\n    \"deny\": [\n      \"Bash(bouncer approve:*)\"\n    ],\n    \"command\": \"bouncer hook prompt\"\n  },\n  \"/p/.cursor/hooks.json\": {\n    \"created\": \"{}\\n\"\n  }\n}\n"
	if string(b) != want {
		t.Errorf("%s holds:\n%s\nwant:\n%s", RecordFile, b, want)
	}
	if a, err := r.Get("/p/.claude/settings.json"); err != nil || !reflect.DeepEqual(a, claude) {
		t.Errorf("read back %+v, %v", a, err)
	}
	if err := r.Forget("/p/.claude/settings.json"); err != nil {
		t.Fatal(err)
	}
	if a, _ := r.Get("/p/.claude/settings.json"); !a.Empty() {
		t.Errorf("forgotten, still %+v", a)
	}
	if a, _ := r.Get("/p/.cursor/hooks.json"); !reflect.DeepEqual(a, cursor) {
		t.Errorf("the other entry is now %+v", a)
	}
	entries, _ := os.ReadDir(state)
	if len(entries) != 1 {
		t.Errorf("stray files left: %v", entries)
	}

	if err := os.Chmod(filepath.Join(state, RecordFile), 0o620); err != nil {
		t.Fatal(err)
	}
	_, err := r.Get("/p/.cursor/hooks.json")
	if !errors.Is(err, statefile.ErrUntrusted) || !strings.Contains(err.Error(), filepath.Join(state, RecordFile)+": mode 0620") {
		t.Errorf("a record others may write: %v", err)
	}
	if err := r.Forget("/p/.cursor/hooks.json"); !errors.Is(err, statefile.ErrUntrusted) {
		t.Errorf("updating a record others may write: %v", err)
	}
}

// The configs whose servers init wrapped are listed with the hook files
// (Files, which every proxy counts as Bouncer's own), until undo leaves
// none wrapped.
func TestRecordWrappedConfigs(t *testing.T) {
	r := Record{State: filepath.Join(t.TempDir(), ".bouncer")}
	if err := r.Update("/p/.claude/settings.json", func(a *hooks.Added) { a.Hook = true }); err != nil {
		t.Fatal(err)
	}
	if err := r.Wrapped("/p/.vscode/mcp.json", true); err != nil {
		t.Fatal(err)
	}
	if files, err := r.Files(); err != nil || !reflect.DeepEqual(files, []string{"/p/.claude/settings.json", "/p/.vscode/mcp.json"}) {
		t.Errorf("files %q, %v", files, err)
	}
	if err := r.Wrapped("/p/.vscode/mcp.json", false); err != nil {
		t.Fatal(err)
	}
	if files, err := r.Files(); err != nil || !reflect.DeepEqual(files, []string{"/p/.claude/settings.json"}) {
		t.Errorf("after undo: files %q, %v", files, err)
	}
}
