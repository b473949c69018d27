// Package hooks installs (and removes) Bouncer's prompt hook in the file
// where an MCP client keeps its hooks: Claude Code's settings.json (with
// the permissions.deny rules that keep an agent's shell from running
// `bouncer approve`, `trust` or `hook`, and its own file tools off
// Bouncer's files: EditRules), Cursor's hooks.json, Gemini CLI's
// settings.json (the file that holds its servers, too); and says what such
// a file holds (Inspect). The hook
// runs `bouncer hook prompt`, which vouches for the destinations a person
// types. An edit adds only what is missing and records what it added
// (Added), so that an undo removes that and nothing the user had.
//
// Which client reads which config, and where a project's directory is,
// are internal/mcpconfig's; the files are read and edited, comments and
// layout kept, by internal/jsonc.
package hooks

import (
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/bouncer-mcp/bouncer/internal/jsonc"
	"github.com/bouncer-mcp/bouncer/internal/mcpconfig"
	"github.com/bouncer-mcp/bouncer/internal/pathtree"
)

// DenyRules are the Claude Code permissions.deny rules init adds: an agent
// with a shell could otherwise run `bouncer approve` or `bouncer trust` as
// the user, or `bouncer hook prompt` with a made-up prompt that vouches for
// an attacker's address.
var DenyRules = []string{"Bash(bouncer approve:*)", "Bash(bouncer trust:*)", "Bash(bouncer hook:*)"}

// Keep is a path the client's own file tools must not change: one of
// Bouncer's (its state directory, a policy file) or one that makes the
// client run Bouncer (an MCP config, a hook file). Dir keeps everything
// in it.
type Keep struct {
	Path string
	Dir  bool
}

// HasEditRules reports whether the client has rules init can write that
// keep its agent's own file tools off given paths (EditRules): Claude
// Code's permissions.deny. Cursor, VS Code, Gemini CLI (whose policy rules
// match a tool's arguments as text, not the file it writes), Claude
// Desktop and the rest have none.
func HasEditRules(c mcpconfig.Client) bool { return c == mcpconfig.ClaudeCode }

// EditRules are Claude Code's permissions.deny rules that keep its file
// tools off each of keep, spelled for the settings file at settings
// (Claude Code's rule syntax, checked against Claude Code 2.1.197): an
// Edit(...) rule covers every built-in tool that edits files (Edit,
// Write, NotebookEdit), while a Write(...) path rule is not consulted;
// the path is a gitignore pattern, "//x" the absolute /x, "~/x" below the
// home directory, and "/x" below the project of a project's
// .claude/settings.json, which a team commits and so names no path of one
// person's machine where it can help it. A path with a character the
// pattern would read as a wildcard or an escape is left out, and listed
// in skipped: a rule that matched something else would be worse than
// none.
func EditRules(settings, home string, keep []Keep) (rules, skipped []string) {
	project := filepath.Dir(filepath.Dir(settings))
	if home != "" && mcpconfig.SamePath(project, home) {
		project = "" // the user's own settings
	}
	seen := map[string]bool{}
	var dirs []string
	for _, k := range keep {
		if k.Dir {
			dirs = append(dirs, filepath.Clean(k.Path))
		}
	}
	for _, k := range keep {
		p := filepath.Clean(k.Path)
		if !k.Dir && slices.ContainsFunc(dirs, func(d string) bool { r, in := pathtree.Below(p, d); return in && r != "." }) {
			continue // its directory's rule covers it
		}
		if !filepath.IsAbs(p) || strings.ContainsAny(p, "*?[]\\()\n\r") || strings.TrimSpace(p) != p {
			skipped = append(skipped, k.Path)
			continue
		}
		var pat string
		if r, ok := pathtree.Below(p, project); ok && r != "." {
			pat = "/" + filepath.ToSlash(r)
		} else if r, ok := pathtree.Below(p, home); ok && r != "." {
			pat = "~/" + filepath.ToSlash(r)
		} else {
			pat = "/" + p
		}
		if k.Dir {
			pat += "/**"
		}
		r := "Edit(" + pat + ")"
		if !seen[r] {
			seen[r] = true
			rules = append(rules, r)
		}
	}
	return rules, skipped
}

// File returns the file where the client that reads config keeps its
// prompt-submit hook (Claude Code's settings.json, Cursor's hooks.json,
// Gemini CLI's settings.json, which is config itself), beside the config:
// the project's for a project file, the user's for a user file. ok is
// false for a client with no hook init installs.
func File(config, home string) (path string, client mcpconfig.Client, ok bool) {
	abs, err := filepath.Abs(config)
	if err != nil {
		return "", "", false
	}
	ws := mcpconfig.Workspace(abs, home)
	switch client = mcpconfig.ClientOf(abs); client {
	case mcpconfig.ClaudeCode:
		if ws != "" {
			return filepath.Join(ws, ".claude", "settings.json"), client, true
		}
		return filepath.Join(home, ".claude", "settings.json"), client, true
	case mcpconfig.Cursor:
		if ws != "" {
			return filepath.Join(ws, ".cursor", "hooks.json"), client, true
		}
		return filepath.Join(home, ".cursor", "hooks.json"), client, true
	case mcpconfig.Gemini:
		return abs, client, true
	}
	return "", client, false
}

// ByHand reports whether the client has a prompt-submit hook whose event
// `bouncer hook prompt` reads (Prompt) but that init does not install, for
// the user to add by hand (docs/clients.md): VS Code's agent hooks and
// Windsurf's Cascade hooks. A client with neither this nor File has no
// prompt hook at all, and what is typed there vouches for nothing.
func ByHand(client mcpconfig.Client) bool {
	return client == mcpconfig.VSCode || client == mcpconfig.Windsurf
}

// Event is the client's hook event that runs the prompt hook, before the
// agent sees what the user typed; the array of that name under "hooks"
// holds it.
func Event(client mcpconfig.Client) string {
	switch client {
	case mcpconfig.Cursor:
		return "beforeSubmitPrompt"
	case mcpconfig.Gemini:
		return "BeforeAgent"
	}
	return "UserPromptSubmit"
}

// grouped reports whether the client's hook array holds groups, each with
// its own "hooks" list of commands ({"hooks": [{"type": "command",
// "command": ...}]}: Claude Code, Gemini CLI), rather than the commands
// themselves ({"command": ...}: Cursor).
func grouped(client mcpconfig.Client) bool {
	return client == mcpconfig.ClaudeCode || client == mcpconfig.Gemini
}

// Command is the prompt hook's command line for the bouncer at
// program ("bouncer", or a path), quoted for the shell the client runs it
// with.
func Command(program string) string {
	if strings.ContainsAny(program, " \t\n'\"\\$`!*?[]{}()<>|&;#~") {
		program = "'" + strings.ReplaceAll(program, "'", `'\''`) + "'"
	}
	return program + " hook prompt"
}

// IsPrompt reports whether a hook command runs `bouncer hook prompt`
// (by name or by path, quoted as Command quotes it).
func IsPrompt(command string) bool {
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

// Edit is what init changes in a client's hook file.
type Edit struct {
	Path   string
	Client mcpconfig.Client
	// Command is the prompt hook's command line the file is to run.
	Command string
	// Old is the file as read, nil when it does not exist.
	Old []byte
	// New is the file to write; equal to Old when nothing is missing.
	New []byte
	// Added says what New adds: the hook, and which deny rules.
	Added Added
	// Replaced is the command of a prompt hook that New runs command
	// instead of (a bouncer that no longer starts: see Plan); "" when
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
	// CreatedDir is, when init also created the file's directory (and
	// perhaps directories above it), the topmost one it created: undo
	// removes those directories again when they are empty.
	CreatedDir string `json:"created_dir,omitempty"`
	// Command is the hook's command line as init wrote it, which undo
	// removes even when IsPrompt would not know it (a binary under
	// another name).
	Command string `json:"command,omitempty"`
	// Was is, for a prompt hook of the user's own (not Hook) whose command
	// init replaced with Command, the command the file held, as a JSON
	// string as written there: undo puts it back.
	Was string `json:"was,omitempty"`
	// Before is, for a file that existed, its text before init's first
	// edit, and After its text after init's last one, as long as nothing
	// else changed it in between: undo of a file that still holds After
	// writes Before, byte for byte. Otherwise undo takes out what init
	// added, piece by piece, and the objects and lists it made (Made)
	// when they are left empty.
	Before string `json:"before,omitempty"`
	After  string `json:"after,omitempty"`
	// Made are the keys init created to hold what it added, each a path
	// from the top ("permissions", "deny").
	Made [][]string `json:"made,omitempty"`
	// Config marks, instead of a hook file, an MCP config whose servers
	// init wrapped: the record lists it (initplan.Record.Files), so that
	// every proxy counts it as Bouncer's own, whichever config launched it.
	Config bool `json:"config,omitempty"`
}

// Empty reports whether nothing was added.
func (a Added) Empty() bool { return !a.Hook && len(a.Deny) == 0 && a.Created == "" && a.Was == "" }

// Merge adds to a, what init recorded adding to a hook file before, what
// the edit h of that file adds once written: undo then removes both.
func (a *Added) Merge(h Edit) {
	first := a.Empty() && a.Before == ""
	a.Hook = a.Hook || h.Added.Hook
	switch {
	case h.Added.Command != "" || h.Replaced != "" && a.Hook:
		a.Command = h.Command // init's own hook: undo removes it
	case h.Replaced != "":
		// The user's own hook, pointed at this bouncer: undo puts
		// back what the user had.
		if a.Was == "" {
			a.Was = h.ReplacedJSON
		}
		a.Command = h.Command
	}
	switch {
	case a.Created != "" && a.Created == string(h.Old):
		a.Created = string(h.New) // still all init's
	case h.Old == nil || a.Created != "":
	case first:
		a.Before, a.After = string(h.Old), string(h.New)
	case a.Before != "" && a.After == string(h.Old):
		a.After = string(h.New)
	default:
		// Changed by someone else since init's last edit: no longer a
		// snapshot to go back to.
		a.Before, a.After = "", ""
	}
	a.Deny = append(a.Deny, h.Added.Deny...)
	if h.Old != nil {
		a.Made = append(a.Made, h.Added.Made...)
	}
	if h.Added.Created != "" {
		a.Created = h.Added.Created
	}
}

// promptCommands are the command strings of the hooks in elems, the
// elements of the client's prompt-submit hook array.
func promptCommands(client mcpconfig.Client, elems []*jsonc.Node) []*jsonc.Node {
	var out []*jsonc.Node
	for _, x := range elems {
		hooks := []*jsonc.Node{x} // Cursor: {"command": ...}
		if grouped(client) {
			// {"hooks": [{"type": "command", "command": ...}]}
			hooks = nil
			if hs, ok := x.Get("hooks"); ok && hs.Kind == jsonc.Array {
				hooks = hs.Elems
			}
		}
		for _, h := range hooks {
			if c, ok := h.Get("command"); ok && c.Kind == jsonc.String {
				out = append(out, c)
			}
		}
	}
	return out
}

// State is what a client's hook file holds of Bouncer's, as `bouncer
// status` reports it.
type State struct {
	// Hook is the prompt hook's command, "" when there is none.
	Hook string `json:"hook,omitempty"`
	// Deny are the permissions.deny rules it has (Claude Code).
	Deny []string `json:"deny,omitempty"`
}

// Inspect reads the hook file at path (its text data; nil when it does
// not exist): the prompt hook that runs `bouncer hook prompt`, and the
// deny rules.
func Inspect(path string, client mcpconfig.Client, data []byte) (State, error) {
	var st State
	if data == nil {
		return st, nil
	}
	d, err := jsonc.ParseDoc(path, data)
	if err != nil {
		return st, err
	}
	if arr := d.At("hooks", Event(client)); arr != nil && arr.Kind == jsonc.Array {
		for _, c := range promptCommands(client, arr.Elems) {
			if IsPrompt(c.Str) {
				st.Hook = c.Str
				break
			}
		}
	}
	if arr := d.At("permissions", "deny"); arr != nil && arr.Kind == jsonc.Array {
		for _, x := range arr.Elems {
			if x.Kind == jsonc.String {
				st.Deny = append(st.Deny, x.Str)
			}
		}
	}
	return st, nil
}

// Plan returns the edit that adds the prompt hook running command (and,
// for Claude Code, DenyRules and then the rules of extra: EditRules) to
// the hook file at path, which holds old (nil when missing). What is
// there already is not added again, except that a prompt hook whose
// program stale says is to be replaced (one that no longer starts this
// bouncer; nil: none) runs command instead.
func Plan(path string, client mcpconfig.Client, old []byte, command string, stale func(program string) bool, extra []string) (Edit, error) {
	h := Edit{Path: path, Client: client, Command: command, Old: old}
	text := old
	if old == nil {
		text = []byte("{}\n")
	}
	d, err := jsonc.ParseDoc(path, text)
	if err != nil {
		return h, err
	}
	hookAt := []string{"hooks", Event(client)}
	var hookValue string
	var commands []*jsonc.Node
	switch client {
	case mcpconfig.ClaudeCode, mcpconfig.Gemini:
		hookValue = `{"hooks": [{"type": "command", "command": ` + jsonc.Quote(command) + `}]}`
		groups, err := d.Array(hookAt...)
		if err != nil {
			return h, err
		}
		commands = promptCommands(client, groups)
	case mcpconfig.Cursor:
		if old == nil {
			text = []byte("{\n  \"version\": 1\n}\n")
			if d, err = jsonc.ParseDoc(path, text); err != nil {
				return h, err
			}
		}
		hookValue = `{"command": ` + jsonc.Quote(command) + `}`
		hs, err := d.Array(hookAt...)
		if err != nil {
			return h, err
		}
		commands = promptCommands(client, hs)
	default:
		return h, fmt.Errorf("%s: %s has no prompt hook bouncer init installs", path, client)
	}
	has := false
	var staleHook *jsonc.Node // a prompt hook whose bouncer is stale
	for _, c := range commands {
		if c.Str == command {
			has = true
		} else if IsPrompt(c.Str) {
			if stale != nil && stale(shellWords(c.Str)[0]) {
				staleHook = c
			} else {
				has = true
			}
		}
	}
	if !has && staleHook != nil {
		h.Replaced, h.ReplacedJSON = staleHook.Str, string(text[staleHook.Start:staleHook.End])
		if err := d.Splice(jsonc.Splice{Start: staleHook.Start, End: staleHook.End, Text: jsonc.Quote(command)}); err != nil {
			return h, err
		}
		has = true
	}
	if !has {
		if err := h.appendTo(d, hookValue, hookAt...); err != nil {
			return h, err
		}
		h.Added.Hook, h.Added.Command = true, command
	}
	if client == mcpconfig.ClaudeCode {
		deny, err := d.Array("permissions", "deny")
		if err != nil {
			return h, err
		}
		present := map[string]bool{}
		for _, x := range deny {
			if x.Kind == jsonc.String {
				present[x.Str] = true
			}
		}
		for _, r := range append(append([]string(nil), DenyRules...), extra...) {
			if !present[r] {
				present[r] = true
				if err := h.appendTo(d, jsonc.Quote(r), "permissions", "deny"); err != nil {
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

// appendTo appends value to the list at keys (jsonc.Doc.Append), and
// records in h.Added.Made the keys the append created.
func (h *Edit) appendTo(d *jsonc.Doc, value string, keys ...string) error {
	var made [][]string
	for i := range keys {
		if d.At(keys[:i+1]...) == nil {
			made = append(made, append([]string(nil), keys[:i+1]...))
		}
	}
	if err := d.Append(value, keys...); err != nil {
		return err
	}
	h.Added.Made = append(h.Added.Made, made...)
	return nil
}

// Undo returns the hook file's text without what a records, and what it
// removed: the file as it was before init's first edit when it holds what
// init's last edit left (Added.Before); else only what is still there, in
// the form init wrote it, and the keys init made for it once they are
// empty.
func Undo(path string, client mcpconfig.Client, text []byte, a Added) ([]byte, Added, error) {
	if a.Before != "" && string(text) == a.After {
		return []byte(a.Before), Added{Hook: a.Hook, Deny: a.Deny, Was: a.Was}, nil
	}
	var removed Added
	d, err := jsonc.ParseDoc(path, text)
	if err != nil {
		return nil, removed, err
	}
	at := []string{"hooks", Event(client)}
	if arr := d.At(at...); !a.Hook && a.Was != "" && arr != nil && arr.Kind == jsonc.Array {
		// The user's own hook, which init pointed at this bouncer: back
		// to what the user had.
		for _, c := range promptCommands(client, arr.Elems) {
			if c.Str == a.Command {
				if err := d.Splice(jsonc.Splice{Start: c.Start, End: c.End, Text: a.Was}); err != nil {
					return nil, removed, err
				}
				removed.Was = a.Was
				break
			}
		}
	}
	if a.Hook {
		match := func(x *jsonc.Node) bool { return false }
		switch client {
		case mcpconfig.ClaudeCode, mcpconfig.Gemini:
			match = func(g *jsonc.Node) bool {
				hs, ok := g.Get("hooks")
				if !ok || hs.Kind != jsonc.Array || len(hs.Elems) != 1 || len(g.Members) != 1 {
					return false // the user put more in this group: theirs now
				}
				c, ok := hs.Elems[0].Get("command")
				return ok && c.Kind == jsonc.String && (IsPrompt(c.Str) || c.Str == a.Command)
			}
		case mcpconfig.Cursor:
			match = func(x *jsonc.Node) bool {
				c, ok := x.Get("command")
				return ok && c.Kind == jsonc.String && (IsPrompt(c.Str) || c.Str == a.Command) && len(x.Members) == 1
			}
		}
		if arr := d.At(at...); arr != nil && arr.Kind == jsonc.Array {
			for _, x := range arr.Elems {
				if match(x) {
					if err := d.Remove(arr, x); err != nil {
						return nil, removed, err
					}
					removed.Hook = true
					break
				}
			}
		}
	}
	for _, r := range a.Deny {
		arr := d.At("permissions", "deny")
		if arr == nil || arr.Kind != jsonc.Array {
			break
		}
		for _, x := range arr.Elems {
			if x.Kind == jsonc.String && x.Str == r {
				if err := d.Remove(arr, x); err != nil {
					return nil, removed, err
				}
				removed.Deny = append(removed.Deny, r)
				break
			}
		}
	}
	// The keys init made, deepest first, where nothing is left in them.
	made := append([][]string(nil), a.Made...)
	sort.SliceStable(made, func(i, j int) bool { return len(made[i]) > len(made[j]) })
	for _, keys := range made {
		n := d.At(keys...)
		if n == nil || len(n.Members) > 0 || len(n.Elems) > 0 || (n.Kind != jsonc.Object && n.Kind != jsonc.Array) || hasComment(d.Bytes()[n.Start:n.End]) {
			continue
		}
		if err := d.RemoveMember(d.At(keys[:len(keys)-1]...), keys[len(keys)-1]); err != nil {
			return nil, removed, err
		}
	}
	return d.Bytes(), removed, nil
}

// hasComment reports whether the text of an empty object or list holds
// anything but its brackets and whitespace: a comment someone wrote.
func hasComment(text []byte) bool {
	return len(strings.TrimSpace(string(text[1:len(text)-1]))) > 0
}
