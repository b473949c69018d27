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

// HookCommand is the prompt hook's command line for the bouncer at
// program ("bouncer", or a path), quoted for the shell the client runs it
// with.
func HookCommand(program string) string {
	if strings.ContainsAny(program, " \t\n'\"\\$`!*?[]{}()<>|&;#~") {
		program = "'" + strings.ReplaceAll(program, "'", `'\''`) + "'"
	}
	return program + " hook prompt"
}

// IsPromptHook reports whether a hook command runs `bouncer hook prompt`
// (by name or by path, quoted as HookCommand quotes it).
func IsPromptHook(command string) bool {
	f := shellWords(command)
	if len(f) < 3 || f[1] != "hook" || f[2] != "prompt" {
		return false
	}
	b := filepath.Base(f[0])
	return b == "bouncer" || b == "bouncer.exe"
}

// shellWords splits a command line into words as a POSIX shell reads
// plain words, '...' and "..." (with backslash escapes outside single
// quotes); nil for a line it can't read so (an unclosed quote).
func shellWords(s string) []string {
	var words []string
	var cur strings.Builder
	in := false // inside a word
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == ' ' || c == '\t' || c == '\n':
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
			in = true
		case c == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) {
					i++
				}
				cur.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil
			}
			in = true
		case c == '\\' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
			in = true
		default:
			cur.WriteByte(c)
			in = true
		}
	}
	if in {
		words = append(words, cur.String())
	}
	return words
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
	// Replaced is the command of a prompt hook that New runs command
	// instead of (a bouncer that no longer starts: see PlanHook); "" when
	// none was replaced. ReplacedJSON is that string as the file wrote it.
	Replaced, ReplacedJSON string
}

// Added records what init added to a hook file, so that --undo removes
// that and nothing the user had.
type Added struct {
	Hook bool     `json:"hook,omitempty"`
	Deny []string `json:"deny,omitempty"`
	// Created is the whole file when init created it: undo deletes the
	// file if it still holds exactly that.
	Created string `json:"created,omitempty"`
	// Command is the hook's command line as init wrote it, which undo
	// removes even when IsPromptHook would not know it (a binary under
	// another name).
	Command string `json:"command,omitempty"`
	// Was is, for a prompt hook of the user's own (not Hook) whose command
	// init replaced with Command, the command the file held, as a JSON
	// string as written there: undo puts it back.
	Was string `json:"was,omitempty"`
}

// Empty reports whether nothing was added.
func (a Added) Empty() bool { return !a.Hook && len(a.Deny) == 0 && a.Created == "" && a.Was == "" }

// promptCommands are the command strings of the hooks in elems, the
// elements of the client's prompt-submit hook array.
func promptCommands(client Client, elems []*node) []*node {
	var out []*node
	for _, x := range elems {
		hooks := []*node{x} // Cursor: {"command": ...}
		if client == ClaudeCode {
			// {"hooks": [{"type": "command", "command": ...}]}
			hooks = nil
			if hs, ok := x.get("hooks"); ok && hs.kind == '[' {
				hooks = hs.elems
			}
		}
		for _, h := range hooks {
			if c, ok := h.get("command"); ok && c.kind == '"' {
				out = append(out, c)
			}
		}
	}
	return out
}

// PlanHook returns the edit that adds the prompt hook running command (and,
// for Claude Code, DenyRules) to the hook file at path, which holds old
// (nil when missing). What is there already is not added again, except
// that a prompt hook whose program stale says is to be replaced (one that
// no longer starts this bouncer; nil: none) runs command instead.
func PlanHook(path string, client Client, old []byte, command string, stale func(program string) bool) (HookEdit, error) {
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
	var commands []*node
	switch client {
	case ClaudeCode:
		hookAt = []string{"hooks", "UserPromptSubmit"}
		hookValue = `{"hooks": [{"type": "command", "command": ` + jsonString(command) + `}]}`
		groups, err := d.array(hookAt...)
		if err != nil {
			return h, err
		}
		commands = promptCommands(client, groups)
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
		commands = promptCommands(client, hs)
	default:
		return h, fmt.Errorf("%s: %s has no prompt hook bouncer init installs", path, client)
	}
	has := false
	var staleHook *node // a prompt hook whose bouncer is stale
	for _, c := range commands {
		if c.str == command {
			has = true
		} else if IsPromptHook(c.str) {
			if stale != nil && stale(shellWords(c.str)[0]) {
				staleHook = c
			} else {
				has = true
			}
		}
	}
	if !has && staleHook != nil {
		h.Replaced, h.ReplacedJSON = staleHook.str, string(text[staleHook.start:staleHook.end])
		if err := d.splice([]splice{{staleHook.start, staleHook.end, jsonString(command)}}); err != nil {
			return h, err
		}
		has = true
	}
	if !has {
		if err := d.Append(hookValue, hookAt...); err != nil {
			return h, err
		}
		h.Added.Hook, h.Added.Command = true, command
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
	} else if h.Added.Empty() && h.Replaced == "" {
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
	at := []string{"hooks", "UserPromptSubmit"}
	if client == Cursor {
		at = []string{"hooks", "beforeSubmitPrompt"}
	}
	if arr := d.at(at...); !a.Hook && a.Was != "" && arr != nil && arr.kind == '[' {
		// The user's own hook, which init pointed at this bouncer: back
		// to what the user had.
		for _, c := range promptCommands(client, arr.elems) {
			if c.str == a.Command {
				if err := d.splice([]splice{{c.start, c.end, a.Was}}); err != nil {
					return nil, removed, err
				}
				removed.Was = a.Was
				break
			}
		}
	}
	if a.Hook {
		match := func(x *node) bool { return false }
		switch client {
		case ClaudeCode:
			match = func(g *node) bool {
				hs, ok := g.get("hooks")
				if !ok || hs.kind != '[' || len(hs.elems) != 1 || len(g.members) != 1 {
					return false // the user put more in this group: theirs now
				}
				c, ok := hs.elems[0].get("command")
				return ok && c.kind == '"' && (IsPromptHook(c.str) || c.str == a.Command)
			}
		case Cursor:
			match = func(x *node) bool {
				c, ok := x.get("command")
				return ok && c.kind == '"' && (IsPromptHook(c.str) || c.str == a.Command) && len(x.members) == 1
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
