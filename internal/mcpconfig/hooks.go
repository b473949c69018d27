package mcpconfig

import (
	"fmt"
	"path/filepath"
	"strings"
)

// DenyRules are the Claude Code permissions.deny rules init adds: an agent
// with a shell could otherwise run `bouncer approve` or `bouncer trust` as
// the user, or `bouncer hook prompt` with a made-up prompt that vouches for
// an attacker's address.
var DenyRules = []string{"Bash(bouncer approve:*)", "Bash(bouncer trust:*)", "Bash(bouncer hook:*)"}

// HookFile returns the file where the client that reads config keeps its
// prompt-submit hook (Claude Code's settings.json, Cursor's hooks.json),
// beside the config: the project's for a project file, the user's for a
// user file. ok is false for a client with no hook init installs.
func HookFile(config, home string) (path string, client Client, ok bool) {
	abs, err := filepath.Abs(config)
	if err != nil {
		return "", "", false
	}
	ws := Workspace(abs, home)
	switch client = ClientOf(abs); client {
	case ClaudeCode:
		if ws != "" {
			return filepath.Join(ws, ".claude", "settings.json"), client, true
		}
		return filepath.Join(home, ".claude", "settings.json"), client, true
	case Cursor:
		if ws != "" {
			return filepath.Join(ws, ".cursor", "hooks.json"), client, true
		}
		return filepath.Join(home, ".cursor", "hooks.json"), client, true
	}
	return "", client, false
}

// IsPromptHook reports whether a hook command runs `bouncer hook prompt`
// (by name or by path).
func IsPromptHook(command string) bool {
	f := strings.Fields(command)
	if len(f) < 3 || f[1] != "hook" || f[2] != "prompt" {
		return false
	}
	b := filepath.Base(strings.Trim(f[0], `'"`))
	return b == "bouncer" || b == "bouncer.exe"
}

// HookEdit is what init changes in a client's hook file.
type HookEdit struct {
	Path   string
	Client Client
	// Old is the file as read, nil when it does not exist.
	Old []byte
	// New is the file to write; equal to Old when nothing is missing.
	New []byte
	// Added says what New adds: the hook, and which deny rules.
	Added Added
}

// Added records what init added to a hook file, so that --undo removes
// that and nothing the user had.
type Added struct {
	Hook bool     `json:"hook,omitempty"`
	Deny []string `json:"deny,omitempty"`
	// Created is the whole file when init created it: undo deletes the
	// file if it still holds exactly that.
	Created string `json:"created,omitempty"`
}

// Empty reports whether nothing was added.
func (a Added) Empty() bool { return !a.Hook && len(a.Deny) == 0 && a.Created == "" }

// PlanHook returns the edit that adds the prompt hook running command (and,
// for Claude Code, DenyRules) to the hook file at path, which holds old
// (nil when missing). What is there already is not added again.
func PlanHook(path string, client Client, old []byte, command string) (HookEdit, error) {
	h := HookEdit{Path: path, Client: client, Old: old}
	text := old
	if old == nil {
		text = []byte("{}\n")
	}
	d, err := ParseDoc(path, text)
	if err != nil {
		return h, err
	}
	var hookAt []string
	var hookValue string
	var commands []string
	switch client {
	case ClaudeCode:
		hookAt = []string{"hooks", "UserPromptSubmit"}
		hookValue = `{"hooks": [{"type": "command", "command": ` + jsonString(command) + `}]}`
		groups, err := d.array(hookAt...)
		if err != nil {
			return h, err
		}
		for _, g := range groups {
			if hs, ok := g.get("hooks"); ok && hs.kind == '[' {
				for _, x := range hs.elems {
					if c, ok := x.get("command"); ok && c.kind == '"' {
						commands = append(commands, c.str)
					}
				}
			}
		}
	case Cursor:
		if old == nil {
			text = []byte("{\n  \"version\": 1\n}\n")
			if d, err = ParseDoc(path, text); err != nil {
				return h, err
			}
		}
		hookAt = []string{"hooks", "beforeSubmitPrompt"}
		hookValue = `{"command": ` + jsonString(command) + `}`
		hs, err := d.array(hookAt...)
		if err != nil {
			return h, err
		}
		for _, x := range hs {
			if c, ok := x.get("command"); ok && c.kind == '"' {
				commands = append(commands, c.str)
			}
		}
	default:
		return h, fmt.Errorf("%s: %s has no prompt hook bouncer init installs", path, client)
	}
	has := false
	for _, c := range commands {
		has = has || IsPromptHook(c)
	}
	if !has {
		if err := d.Append(hookValue, hookAt...); err != nil {
			return h, err
		}
		h.Added.Hook = true
	}
	if client == ClaudeCode {
		deny, err := d.array("permissions", "deny")
		if err != nil {
			return h, err
		}
		present := map[string]bool{}
		for _, x := range deny {
			if x.kind == '"' {
				present[x.str] = true
			}
		}
		for _, r := range DenyRules {
			if !present[r] {
				if err := d.Append(jsonString(r), "permissions", "deny"); err != nil {
					return h, err
				}
				h.Added.Deny = append(h.Added.Deny, r)
			}
		}
	}
	h.New = d.Bytes()
	if old == nil {
		h.Added.Created = string(h.New)
	} else if h.Added.Empty() {
		h.New = old
	}
	return h, nil
}

// UndoHook returns the hook file's text without what a records (only what
// is still there, in the form init wrote it), and what it removed.
func UndoHook(path string, client Client, text []byte, a Added) ([]byte, Added, error) {
	var removed Added
	d, err := ParseDoc(path, text)
	if err != nil {
		return nil, removed, err
	}
	if a.Hook {
		var at []string
		match := func(x *node) bool { return false }
		switch client {
		case ClaudeCode:
			at = []string{"hooks", "UserPromptSubmit"}
			match = func(g *node) bool {
				hs, ok := g.get("hooks")
				if !ok || hs.kind != '[' || len(hs.elems) != 1 || len(g.members) != 1 {
					return false // the user put more in this group: theirs now
				}
				c, ok := hs.elems[0].get("command")
				return ok && c.kind == '"' && IsPromptHook(c.str)
			}
		case Cursor:
			at = []string{"hooks", "beforeSubmitPrompt"}
			match = func(x *node) bool {
				c, ok := x.get("command")
				return ok && c.kind == '"' && IsPromptHook(c.str) && len(x.members) == 1
			}
		}
		if arr := d.at(at...); arr != nil && arr.kind == '[' {
			for _, x := range arr.elems {
				if match(x) {
					if err := d.remove(arr, x); err != nil {
						return nil, removed, err
					}
					removed.Hook = true
					break
				}
			}
		}
	}
	for _, r := range a.Deny {
		arr := d.at("permissions", "deny")
		if arr == nil || arr.kind != '[' {
			break
		}
		for _, x := range arr.elems {
			if x.kind == '"' && x.str == r {
				if err := d.remove(arr, x); err != nil {
					return nil, removed, err
				}
				removed.Deny = append(removed.Deny, r)
				break
			}
		}
	}
	return d.Bytes(), removed, nil
}
