package mcpconfig

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestPlanHookClaude(t *testing.T) {
	old := []byte(`{
  // mine
  "model": "opus",
  "permissions": {
    "deny": ["Bash(bouncer approve:*)", "Read(.env)",]
  }
}
`)
	h, err := PlanHook("/p/.claude/settings.json", ClaudeCode, old, "bouncer hook prompt")
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
	h2, err := PlanHook("/p/.claude/settings.json", ClaudeCode, h.New, "/opt/bouncer hook prompt")
	if err != nil || string(h2.New) != string(h.New) || !h2.Added.Empty() {
		t.Errorf("second plan changed it (%v): %+v", err, h2.Added)
	}
	// Undo removes what was added, and keeps the user's deny rule.
	undone, removed, err := UndoHook("/p/.claude/settings.json", ClaudeCode, h.New, h.Added)
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

func TestPlanHookNewFiles(t *testing.T) {
	h, err := PlanHook("/p/.claude/settings.json", ClaudeCode, nil, "bouncer hook prompt")
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
	c, err := PlanHook("/p/.cursor/hooks.json", Cursor, nil, "bouncer hook prompt")
	if err != nil {
		t.Fatal(err)
	}
	want := "{\n  \"version\": 1,\n  \"hooks\": {\"beforeSubmitPrompt\": [{\"command\": \"bouncer hook prompt\"}]}\n}\n"
	if string(c.New) != want {
		t.Errorf("cursor:\n%s", c.New)
	}
	// An existing Cursor file with other hooks keeps them.
	old := []byte("{\"version\": 1, \"hooks\": {\"beforeSubmitPrompt\": [{\"command\": \"./audit.sh\"}], \"stop\": []}}")
	c, err = PlanHook("/p/.cursor/hooks.json", Cursor, old, "bouncer hook prompt")
	if err != nil || string(c.New) != "{\"version\": 1, \"hooks\": {\"beforeSubmitPrompt\": [{\"command\": \"./audit.sh\"}, {\"command\": \"bouncer hook prompt\"}], \"stop\": []}}" {
		t.Errorf("cursor existing (%v):\n%s", err, c.New)
	}
	undone, _, err := UndoHook("/p/.cursor/hooks.json", Cursor, c.New, c.Added)
	if err != nil || string(undone) != string(old) {
		t.Errorf("cursor undo (%v):\n%s", err, undone)
	}
	// A hooks key of the wrong type is refused, naming it.
	if _, err := PlanHook("/p/.claude/settings.json", ClaudeCode, []byte(`{"hooks": []}`), "bouncer hook prompt"); err == nil || !strings.Contains(err.Error(), "hooks is not an object") {
		t.Errorf("err %v", err)
	}
}

// FuzzPlanHook: whatever settings file a user has, adding the hook gives a
// file that parses, holds the hook, and is not changed by a second run;
// undo gives a file that parses.
func FuzzPlanHook(f *testing.F) {
	for _, s := range []string{"{}", `{"hooks": {"UserPromptSubmit": []}}`, "{\n  // c\n  \"a\": 1,\n}", `{"permissions": {"deny": []}, "hooks": {}}`, `{"version": 1, "hooks": {"beforeSubmitPrompt": [{"command": "x"}]}}`, "[]", `{"hooks": 1}`} {
		f.Add([]byte(s), false)
	}
	f.Fuzz(func(t *testing.T, data []byte, cursor bool) {
		client := ClaudeCode
		if cursor {
			client = Cursor
		}
		h, err := PlanHook("s.json", client, data, "bouncer hook prompt")
		if err != nil {
			return
		}
		h2, err := PlanHook("s.json", client, h.New, "bouncer hook prompt")
		if err != nil || string(h2.New) != string(h.New) {
			t.Fatalf("not idempotent (%v):\n%q\n%q", err, h.New, h2.New)
		}
		if _, _, err := UndoHook("s.json", client, h.New, h.Added); err != nil {
			t.Fatalf("undo: %v\n%q", err, h.New)
		}
	})
}
