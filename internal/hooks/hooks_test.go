package hooks

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/bouncer-mcp/bouncer/internal/mcpconfig"
)

func TestPlanClaude(t *testing.T) {
	old := []byte(`{
  // mine
  "model": "opus",
  "permissions": {
    "deny": ["Bash(bouncer approve:*)", "Read(.env)",]
  }
}
`)
	h, err := Plan("/p/.claude/settings.json", mcpconfig.ClaudeCode, old, "bouncer hook prompt", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := `{
  // mine
  "model": "opus",
  "permissions": {
    "deny": ["Bash(bouncer approve:*)", "Read(.env)", "Bash(bouncer trust:*)", "Bash(bouncer hook:*)"]
  },
  "hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": "bouncer hook prompt"}]}]}
}
`
	if string(h.New) != want {
		t.Fatalf("got:\n%s\nwant:\n%s", h.New, want)
	}
	if !h.Added.Hook || !reflect.DeepEqual(h.Added.Deny, []string{"Bash(bouncer trust:*)", "Bash(bouncer hook:*)"}) {
		t.Errorf("added %+v", h.Added)
	}
	// Twice: nothing more.
	h2, err := Plan("/p/.claude/settings.json", mcpconfig.ClaudeCode, h.New, "/opt/bouncer hook prompt", nil, nil)
	if err != nil || string(h2.New) != string(h.New) || !h2.Added.Empty() {
		t.Errorf("second plan changed it (%v): %+v", err, h2.Added)
	}
	// Undo removes what was added, and keeps the user's deny rule.
	undone, removed, err := Undo("/p/.claude/settings.json", mcpconfig.ClaudeCode, h.New, h.Added)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(undone), `"deny": ["Bash(bouncer approve:*)", "Read(.env)"]`) || strings.Contains(string(undone), "hook prompt") {
		t.Errorf("undo:\n%s", undone)
	}
	if !removed.Hook || len(removed.Deny) != 2 {
		t.Errorf("removed %+v", removed)
	}
}

func TestPlanNewFiles(t *testing.T) {
	h, err := Plan("/p/.claude/settings.json", mcpconfig.ClaudeCode, nil, "bouncer hook prompt", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(h.New, &v); err != nil {
		t.Fatalf("%v\n%s", err, h.New)
	}
	if h.Added.Created != string(h.New) || len(h.Added.Deny) != 3 {
		t.Errorf("added %+v", h.Added)
	}
	c, err := Plan("/p/.cursor/hooks.json", mcpconfig.Cursor, nil, "bouncer hook prompt", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := "{\n  \"version\": 1,\n  \"hooks\": {\"beforeSubmitPrompt\": [{\"command\": \"bouncer hook prompt\"}]}\n}\n"
	if string(c.New) != want {
		t.Errorf("cursor:\n%s", c.New)
	}
	// An existing mcpconfig.Cursor file with other hooks keeps them.
	old := []byte("{\"version\": 1, \"hooks\": {\"beforeSubmitPrompt\": [{\"command\": \"./audit.sh\"}], \"stop\": []}}")
	c, err = Plan("/p/.cursor/hooks.json", mcpconfig.Cursor, old, "bouncer hook prompt", nil, nil)
	if err != nil || string(c.New) != "{\"version\": 1, \"hooks\": {\"beforeSubmitPrompt\": [{\"command\": \"./audit.sh\"}, {\"command\": \"bouncer hook prompt\"}], \"stop\": []}}" {
		t.Errorf("cursor existing (%v):\n%s", err, c.New)
	}
	undone, _, err := Undo("/p/.cursor/hooks.json", mcpconfig.Cursor, c.New, c.Added)
	if err != nil || string(undone) != string(old) {
		t.Errorf("cursor undo (%v):\n%s", err, undone)
	}
	// A hooks key of the wrong type is refused, naming it.
	if _, err := Plan("/p/.claude/settings.json", mcpconfig.ClaudeCode, []byte(`{"hooks": []}`), "bouncer hook prompt", nil, nil); err == nil || !strings.Contains(err.Error(), "hooks is not an object") {
		t.Errorf("err %v", err)
	}
}

// Gemini CLI keeps its hooks in the settings.json that holds its servers:
// the BeforeAgent group goes in beside them, comments kept, and comes out
// again: to the byte while the file is what init left (init --undo takes
// the hook out before it puts the servers back), and piece by piece once
// something else changed it.
func TestPlanGemini(t *testing.T) {
	path, client, ok := File("/p/.gemini/settings.json", "/home/me")
	if !ok || path != "/p/.gemini/settings.json" || client != mcpconfig.Gemini || Event(client) != "BeforeAgent" {
		t.Fatalf("File: %q %q %v", path, client, ok)
	}
	if path, _, _ := File("/home/me/.gemini/settings.json", "/home/me"); path != "/home/me/.gemini/settings.json" {
		t.Errorf("user's file: %q", path)
	}
	old := []byte("{\n  // Gemini CLI's settings take comments.\n  \"mcpServers\": {\"a\": {\"command\": \"x\"}},\n}\n")
	h, err := Plan(path, client, old, "bouncer hook prompt", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := "{\n  // Gemini CLI's settings take comments.\n  \"mcpServers\": {\"a\": {\"command\": \"x\"}},\n  \"hooks\": {\"BeforeAgent\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"bouncer hook prompt\"}]}]}\n}\n"
	if string(h.New) != want || !h.Added.Hook || len(h.Added.Deny) != 0 {
		t.Errorf("planned %+v:\n%s", h.Added, h.New)
	}
	st, err := Inspect(path, client, h.New)
	if err != nil || st.Hook != "bouncer hook prompt" {
		t.Errorf("inspect: %+v %v", st, err)
	}
	var a Added
	a.Merge(h)
	if undone, removed, err := Undo(path, client, h.New, a); err != nil || !removed.Hook || string(undone) != string(old) {
		t.Errorf("undo (%v) %+v:\n%s", err, removed, undone)
	}
	// Changed since by someone else: the hook and the keys init made for
	// it come out, the rest stays.
	changed := []byte(strings.Replace(string(h.New), `"x"`, `"y"`, 1))
	undone, removed, err := Undo(path, client, changed, a)
	if err != nil || !removed.Hook || strings.Contains(string(undone), "hooks") || !strings.Contains(string(undone), `"y"`) {
		t.Errorf("undo (%v) %+v:\n%s", err, removed, undone)
	}
}

// TestCommandByPath: a hook that runs bouncer by a path with spaces
// (macOS's Application Support) or under another name (a release binary)
// is known again on the next run, and undo removes it.
func TestCommandByPath(t *testing.T) {
	for _, c := range []struct {
		program, want string
		isPrompt      bool
	}{
		{"bouncer", "bouncer hook prompt", true},
		{"/opt/bouncer", "/opt/bouncer hook prompt", true},
		{"/Users/me/Library/Application Support/bouncer", "'/Users/me/Library/Application Support/bouncer' hook prompt", true},
		{"/home/o'brien/bin/bouncer", `'/home/o'\''brien/bin/bouncer' hook prompt`, true},
		{"/opt/bouncer_1.0_darwin_arm64", "/opt/bouncer_1.0_darwin_arm64 hook prompt", false},
	} {
		cmd := Command(c.program)
		if cmd != c.want || IsPrompt(cmd) != c.isPrompt {
			t.Errorf("%s: %q (prompt hook: %v)", c.program, cmd, IsPrompt(cmd))
		}
		if w := shellWords(cmd); len(w) != 3 || w[0] != c.program {
			t.Errorf("%s: read back as %q", c.program, w)
		}
		for _, client := range []mcpconfig.Client{mcpconfig.ClaudeCode, mcpconfig.Cursor, mcpconfig.Gemini} {
			h, err := Plan("/h/hooks.json", client, []byte("{}\n"), cmd, nil, nil)
			if err != nil || !h.Added.Hook || h.Added.Command != cmd {
				t.Fatalf("%s, %s: %v %+v", c.program, client, err, h.Added)
			}
			again, err := Plan("/h/hooks.json", client, h.New, cmd, nil, nil)
			if err != nil || !again.Added.Empty() {
				t.Errorf("%s, %s: added again: %+v", c.program, client, again.Added)
			}
			undone, removed, err := Undo("/h/hooks.json", client, h.New, h.Added)
			if err != nil || !removed.Hook || strings.Contains(string(undone), "hook prompt") {
				t.Errorf("%s, %s: undo (%v):\n%s", c.program, client, err, undone)
			}
		}
	}
}

// TestPlanReplacesStale: a prompt hook whose bouncer stale says is
// gone runs the new command instead; one it keeps stays, and a hook of
// another program is never touched.
func TestPlanReplacesStale(t *testing.T) {
	old := []byte(`{"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": "/gone/bouncer hook prompt"}]}, {"hooks": [{"type": "command", "command": "lint-prompt"}]}]}, "permissions": {"deny": ["Bash(bouncer approve:*)", "Bash(bouncer trust:*)", "Bash(bouncer hook:*)"]}}`)
	gone := func(p string) bool { return p == "/gone/bouncer" }
	h, err := Plan("/h/.claude/settings.json", mcpconfig.ClaudeCode, old, "/new/bouncer hook prompt", gone, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(string(old), "/gone/bouncer", "/new/bouncer", 1)
	if string(h.New) != want || h.Replaced != "/gone/bouncer hook prompt" || !h.Added.Empty() {
		t.Errorf("replaced %q, added %+v:\n%s", h.Replaced, h.Added, h.New)
	}
	// The replaced hook was the user's: undo gives it back its command,
	// as the file wrote it, and touches nothing else.
	undone, removed, err := Undo("/h/.claude/settings.json", mcpconfig.ClaudeCode, h.New, Added{Command: "/new/bouncer hook prompt", Was: h.ReplacedJSON})
	if err != nil || string(undone) != string(old) || removed.Was != `"/gone/bouncer hook prompt"` || removed.Hook {
		t.Errorf("undo (%v), removed %+v:\n%s", err, removed, undone)
	}
	escaped := []byte(`{"hooks": {"beforeSubmitPrompt": [{"command": "\/gone\/bouncer hook prompt"}]}}`)
	c, err := Plan("/h/.cursor/hooks.json", mcpconfig.Cursor, escaped, "/new/bouncer hook prompt", gone, nil)
	if err != nil || c.ReplacedJSON != `"\/gone\/bouncer hook prompt"` {
		t.Fatalf("cursor (%v): replaced %q", err, c.ReplacedJSON)
	}
	undone, _, err = Undo("/h/.cursor/hooks.json", mcpconfig.Cursor, c.New, Added{Command: "/new/bouncer hook prompt", Was: c.ReplacedJSON})
	if err != nil || string(undone) != string(escaped) {
		t.Errorf("cursor undo (%v):\n%s", err, undone)
	}
	kept, err := Plan("/h/.claude/settings.json", mcpconfig.ClaudeCode, old, "/new/bouncer hook prompt", func(string) bool { return false }, nil)
	if err != nil || string(kept.New) != string(old) || kept.Replaced != "" {
		t.Errorf("a hook that still runs was changed (%v):\n%s", err, kept.New)
	}
}

// FuzzPlan: whatever settings file a user has, adding the hook gives a
// file that parses, holds the hook, and is not changed by a second run;
// undo gives a file that parses.
func FuzzPlan(f *testing.F) {
	for _, s := range []string{"{}", `{"hooks": {"UserPromptSubmit": []}}`, "{\n  // c\n  \"a\": 1,\n}", `{"permissions": {"deny": []}, "hooks": {}}`, `{"version": 1, "hooks": {"beforeSubmitPrompt": [{"command": "x"}]}}`, "[]", `{"hooks": 1}`} {
		f.Add([]byte(s), false)
	}
	f.Fuzz(func(t *testing.T, data []byte, cursor bool) {
		client := mcpconfig.ClaudeCode
		if cursor {
			client = mcpconfig.Cursor
		}
		for _, client := range []mcpconfig.Client{client, mcpconfig.Gemini} {
			h, err := Plan("s.json", client, data, "bouncer hook prompt", nil, nil)
			if err != nil {
				continue
			}
			h2, err := Plan("s.json", client, h.New, "bouncer hook prompt", nil, nil)
			if err != nil || string(h2.New) != string(h.New) {
				t.Fatalf("not idempotent (%v):\n%q\n%q", err, h.New, h2.New)
			}
			if _, _, err := Undo("s.json", client, h.New, h.Added); err != nil {
				t.Fatalf("undo: %v\n%q", err, h.New)
			}
			// The file as init left it comes back as it was, to the byte.
			var a Added
			a.Merge(h)
			if undone, _, err := Undo("s.json", client, h.New, a); a.Created == "" && (err != nil || string(undone) != string(data)) {
				t.Fatalf("undo (%v):\n%q\n%q\n%q", err, data, h.New, undone)
			}
		}
	})
}

// TestMerge: what init records of an edit is what undo must take back,
// on top of what it recorded before: a hook it added (by the command it
// wrote, even when a later run points it at another bouncer), the user's
// own hook it pointed at this bouncer (by what the user had, kept from
// the first time), and a file it created (whole, as it now is).
func TestMerge(t *testing.T) {
	const cmd, newCmd = "bouncer hook prompt", "/new/bouncer hook prompt"
	users := []byte(`{"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": "/gone/bouncer hook prompt"}]}]}}`)
	gone := func(p string) bool { return p != "/opt/kept/bouncer" } // every other bouncer is gone
	plan := func(old []byte, command string) Edit {
		t.Helper()
		h, err := Plan("/p/.claude/settings.json", mcpconfig.ClaudeCode, old, command, gone, nil)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	created := plan(nil, cmd)
	replacedOwn := plan(created.New, newCmd)
	replacedUsers := plan(users, newCmd)
	again := plan(replacedUsers.New, cmd)
	for _, c := range []struct {
		name  string
		had   Added
		edits []Edit
		want  Added
	}{
		{"a file init created", Added{}, []Edit{created},
			Added{Hook: true, Command: cmd, Deny: DenyRules, Created: string(created.New)}},
		{"init's own hook pointed at another bouncer", Added{}, []Edit{created, replacedOwn},
			Added{Hook: true, Command: newCmd, Deny: DenyRules, Created: string(replacedOwn.New)}},
		{"the user's hook pointed at this bouncer", Added{}, []Edit{replacedUsers},
			Added{Command: newCmd, Was: `"/gone/bouncer hook prompt"`, Deny: DenyRules,
				Before: string(users), After: string(replacedUsers.New), Made: [][]string{{"permissions"}, {"permissions", "deny"}}}},
		{"the user's hook pointed twice: what the user had is kept", Added{}, []Edit{replacedUsers, again},
			Added{Command: cmd, Was: `"/gone/bouncer hook prompt"`, Deny: DenyRules,
				Before: string(users), After: string(again.New), Made: [][]string{{"permissions"}, {"permissions", "deny"}}}},
		{"edited by someone else in between: no snapshot", Added{}, []Edit{replacedUsers, plan([]byte(strings.Replace(string(replacedUsers.New), "{", `{"model": "x", `, 1)), cmd)},
			Added{Command: cmd, Was: `"/gone/bouncer hook prompt"`, Deny: DenyRules, Made: [][]string{{"permissions"}, {"permissions", "deny"}}}},
	} {
		a := c.had
		for _, h := range c.edits {
			a.Merge(h)
		}
		if !reflect.DeepEqual(a, c.want) {
			t.Errorf("%s: recorded %+v, want %+v", c.name, a, c.want)
		}
	}
}

// Undo of a file that existed gives it back byte for byte: from the
// snapshot while nothing else changed it, and otherwise by taking out
// what init added and the keys it made for that, once empty, so no
// "deny": [] or "UserPromptSubmit": [] is left behind.
func TestUndoExisting(t *testing.T) {
	for _, tt := range []struct {
		name, before string
	}{
		{"one key", "{\n  \"theme\": \"dark\"\n}\n"},
		{"comments and a deny list of the user's", "{\n  // mine\n  \"theme\": \"dark\",\n  \"permissions\": {\"deny\": [\"Read(.env)\"]},\n  \"hooks\": {}\n}\n"},
		{"one line", `{"theme": "dark"}`},
		{"empty", "{}\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h, err := Plan("/h/.claude/settings.json", mcpconfig.ClaudeCode, []byte(tt.before), "bouncer hook prompt", nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			var a Added
			a.Merge(h)
			undone, removed, err := Undo("/h/.claude/settings.json", mcpconfig.ClaudeCode, h.New, a)
			if err != nil || string(undone) != tt.before || !removed.Hook || len(removed.Deny) != len(DenyRules) {
				t.Errorf("from the snapshot: %q, %+v, %v", undone, removed, err)
			}
			// The user changed the theme since: piece by piece.
			edited := strings.Replace(string(h.New), `"dark"`, `"light"`, 1)
			undone, removed, err = Undo("/h/.claude/settings.json", mcpconfig.ClaudeCode, []byte(edited), a)
			if want := strings.Replace(tt.before, `"dark"`, `"light"`, 1); err != nil || string(undone) != want {
				t.Errorf("piece by piece:\n%s\nwant:\n%s\n(%v)", undone, want, err)
			}
			if !removed.Hook || len(removed.Deny) != len(DenyRules) {
				t.Errorf("removed %+v", removed)
			}
		})
	}
}

// EditRules spells each path as Claude Code reads a rule in that settings
// file (checked with Claude Code 2.1.197 against a loopback API: Edit(...)
// denies Write and NotebookEdit too; "/x" in a project's settings is below
// the project; "~/x" below home; "//x" the absolute /x), and leaves out a
// path its patterns would read otherwise.
func TestEditRules(t *testing.T) {
	keep := []Keep{
		{Path: "/home/me/.bouncer", Dir: true},
		{Path: "/home/me/proj/bouncer.yaml"},
		{Path: "/home/me/proj/.mcp.json"},
		{Path: "/home/me/.claude.json"},
		{Path: "/srv/team/policy.yaml"},
		{Path: "/home/me/proj/we*rd.yaml"},
		{Path: "/home/me/proj/bouncer.yaml"},
	}
	rules, skipped := EditRules("/home/me/proj/.claude/settings.json", "/home/me", keep)
	want := []string{"Edit(~/.bouncer/**)", "Edit(/bouncer.yaml)", "Edit(/.mcp.json)", "Edit(~/.claude.json)", "Edit(//srv/team/policy.yaml)"}
	if !reflect.DeepEqual(rules, want) || !reflect.DeepEqual(skipped, []string{"/home/me/proj/we*rd.yaml"}) {
		t.Errorf("project settings: %q (skipped %q), want %q", rules, skipped, want)
	}
	rules, _ = EditRules("/home/me/.claude/settings.json", "/home/me", keep[:3])
	if want := []string{"Edit(~/.bouncer/**)", "Edit(~/proj/bouncer.yaml)", "Edit(~/proj/.mcp.json)"}; !reflect.DeepEqual(rules, want) {
		t.Errorf("user settings: %q, want %q", rules, want)
	}
	// Planned in: after the Bash rules, each once, and undone with them.
	h, err := Plan("/home/me/proj/.claude/settings.json", mcpconfig.ClaudeCode, nil, "bouncer hook prompt", nil, append(rules, rules[0]))
	if err != nil {
		t.Fatal(err)
	}
	if got := h.Added.Deny; !reflect.DeepEqual(got, append(append([]string(nil), DenyRules...), rules...)) {
		t.Errorf("added %q", got)
	}
}
