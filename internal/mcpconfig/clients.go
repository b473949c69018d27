package mcpconfig

import (
	"path/filepath"
	"strings"
)

// Client is an MCP client whose config format and ${...} variables this
// package knows.
type Client string

// The clients, by the names their users know them by.
const (
	UnknownClient Client = ""
	ClaudeCode    Client = "Claude Code"
	ClaudeDesktop Client = "Claude Desktop"
	Cursor        Client = "Cursor"
	VSCode        Client = "VS Code"
	Gemini        Client = "Gemini CLI"
	Windsurf      Client = "Windsurf"
	Zed           Client = "Zed"
	Cline         Client = "Cline"
	RooCode       Client = "Roo Code"
	Kiro          Client = "Kiro"
	LMStudio      Client = "LM Studio"
	AmazonQ       Client = "Amazon Q Developer"
	Codex         Client = "Codex CLI"
	Continue      Client = "Continue"
	Goose         Client = "Goose"
	QwenCode      Client = "Qwen Code"
	CopilotCLI    Client = "Copilot CLI"
	OpenCode      Client = "OpenCode"
)

// Desktop reports whether the client is an app, which when started from
// the Dock or a desktop menu starts its servers with the environment the
// desktop session gave it, not the user's shell's: a command found on the
// shell's PATH may not be found there. Claude Desktop has launchd's PATH
// on macOS (/usr/bin:/bin:/usr/sbin:/sbin). VS Code and the editors built
// on it (Cursor, Windsurf, Kiro, and the Cline and Roo Code extensions)
// read the login shell's environment at startup, but give up on a slow or
// unusual shell and never see a PATH set in one terminal, so they count
// as apps too, as do Zed, LM Studio, Amazon Q's IDE plugins and Goose
// (whose desktop app shares the CLI's config). Claude Code, Gemini CLI,
// Codex CLI, Qwen Code, Copilot CLI and OpenCode run in the shell.
func (c Client) Desktop() bool {
	switch c {
	case ClaudeCode, Gemini, Codex, QwenCode, CopilotCLI, OpenCode, UnknownClient:
		return false
	}
	return true
}

// KeepsOriginal reports whether the original entry of a wrapped server is
// kept in the state directory (Kept) rather than under x-bouncer-upstream
// in the file. It is so for every client that may refuse, or drop, a key
// it doesn't know in a server entry:
//
//   - Gemini CLI refuses it ("Unrecognized key(s) in object" on every
//     start: its settings schema gives a server entry
//     additionalProperties: false).
//   - Zed reads its settings into typed structures, Cline and Roo Code
//     into schemas that strip what they don't know and write the file back
//     when a server is toggled; Windsurf, Kiro, LM Studio and Amazon Q
//     don't say. A key that is dropped or refused disconnects the server,
//     so their files are user-level ones, kept in the state directory,
//     where no client touches them.
//
// Claude Code, Cursor, VS Code and Claude Desktop keep a key they don't
// know, and their wrapped entries carry it: a project's file a team
// commits then works for everyone.
func (c Client) KeepsOriginal() bool {
	switch c {
	case ClaudeCode, Cursor, VSCode, ClaudeDesktop, UnknownClient:
		return false
	}
	return true
}

// regionFormat is the format of the client's file when init rewrites its
// entries whole (regions.go), nil for JSON.
func (c Client) regionFormat() regionFormat {
	switch c {
	case Codex:
		return codexFormat{}
	case Continue:
		return continueFormat{}
	case Goose:
		return gooseFormat{}
	case OpenCode:
		return opencodeFormat{}
	}
	return nil
}

// blocks are the top-level keys of the client's file that hold server
// entries, in lookup order.
func (c Client) blocks() []string {
	switch c {
	case Zed:
		return []string{"context_servers"}
	case Codex:
		return []string{codexBlock}
	case Continue:
		return []string{continueBlock}
	case Goose:
		return []string{gooseBlock}
	case OpenCode:
		return []string{opencodeBlock}
	}
	return []string{"mcpServers", "servers"}
}

// clientFile is one kind of config file: the client that reads it, its
// name, and the names of the directories it sits in, innermost first ("*"
// is any name). project is how many directories up from the file the
// project is, for a project's own file; 0 for a user's file. A project's
// file kind found directly in the home directory is the user's own
// (~/.cursor/mcp.json is Cursor's user file, not that of a project at
// home).
type clientFile struct {
	client  Client
	name    string
	dirs    []string
	project int
	// atHome: found directly in the home directory, it is still a
	// project's (VS Code's user file is elsewhere).
	atHome bool
}

// clientFiles are the config files each client reads, checked against the
// clients' documentation (docs/clients.md lists them with their places).
// The first that matches a path tells its client.
var clientFiles = []clientFile{
	{ClaudeCode, ".mcp.json", nil, 1, true},
	{ClaudeCode, ".claude.json", nil, 0, false},
	{ClaudeDesktop, "claude_desktop_config.json", nil, 0, false},
	{Cursor, "mcp.json", []string{".cursor"}, 2, false},
	{VSCode, "mcp.json", []string{".vscode"}, 2, true},
	{VSCode, "mcp.json", []string{"User"}, 0, false},
	{VSCode, "mcp.json", []string{"*", "profiles", "User"}, 0, false},
	{Gemini, "settings.json", []string{".gemini"}, 2, false},
	{Windsurf, "mcp_config.json", []string{"windsurf", ".codeium"}, 0, false},
	{Zed, "settings.json", []string{".zed"}, 2, false},
	{Zed, "settings.json", []string{"zed"}, 0, false},
	{Cline, "cline_mcp_settings.json", nil, 0, false},
	{RooCode, "mcp_settings.json", []string{"settings", "rooveterinaryinc.roo-cline"}, 0, false},
	{RooCode, "mcp.json", []string{".roo"}, 2, false},
	{Kiro, "mcp.json", []string{"settings", ".kiro"}, 3, false},
	{LMStudio, "mcp.json", []string{".lmstudio"}, 0, false},
	{AmazonQ, "mcp.json", []string{"amazonq", ".aws"}, 0, false},
	{AmazonQ, "mcp.json", []string{".amazonq"}, 2, false},
	{Codex, "config.toml", []string{".codex"}, 2, false},
	{Continue, "config.yaml", []string{".continue"}, 0, false},
	{Continue, "*.yaml", []string{"mcpServers", ".continue"}, 3, false},
	{Goose, "config.yaml", []string{"goose"}, 0, false},
	{QwenCode, "settings.json", []string{".qwen"}, 2, false},
	{CopilotCLI, "mcp-config.json", []string{".copilot"}, 0, false},
	// The user's first: a project's opencode.json taken for the user's is
	// written with absolute paths, which still work.
	{OpenCode, "opencode.json", []string{"opencode"}, 0, false},
	{OpenCode, "opencode.jsonc", []string{"opencode"}, 0, false},
	{OpenCode, "opencode.json", nil, 1, true},
	{OpenCode, "opencode.jsonc", nil, 1, true},
}

// match reports whether abs is a file of this kind (name may be a
// pattern: Continue reads every block file of its directory).
func (f clientFile) match(abs string) bool {
	if ok, _ := filepath.Match(f.name, filepath.Base(abs)); !ok {
		return false
	}
	d := filepath.Dir(abs)
	for _, want := range f.dirs {
		if want != "*" && filepath.Base(d) != want {
			return false
		}
		d = filepath.Dir(d)
	}
	return true
}

// kindOf returns the kind of the config file at path, and whether there
// is one.
func kindOf(path string) (clientFile, string, bool) {
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = path
	}
	for _, f := range clientFiles {
		if f.match(abs) {
			return f, abs, true
		}
	}
	return clientFile{}, abs, false
}

// ClientOf tells which client reads the config at path, by the file's name
// and the directories it sits in (clientFiles). Any other file is
// UnknownClient, whose variables are not expanded.
func ClientOf(path string) Client {
	f, _, _ := kindOf(path)
	return f.client
}

// Workspace is the project directory of a project's own config file (the
// directory holding .mcp.json, or .vscode, .cursor, .gemini, .zed, .roo,
// .kiro or .amazonq), or "" for a user's file. One found directly in the
// home directory is the user's own.
func Workspace(file, home string) string {
	f, abs, ok := kindOf(file)
	if !ok || f.project == 0 {
		return ""
	}
	ws := abs
	for i := 0; i < f.project; i++ {
		ws = filepath.Dir(ws)
	}
	if !f.atHome && home != "" && SamePath(ws, home) {
		return ""
	}
	return ws
}

// projectFiles are the project's own config files, relative to it, in the
// order Candidates lists them; a name may be a pattern (filepath.Glob).
func projectFiles() []string {
	var out []string
	for _, f := range clientFiles {
		if f.project == 0 {
			continue
		}
		parts := append([]string(nil), f.dirs...)
		for i, j := 0, len(parts)-1; i < j; i, j = i+1, j-1 {
			parts[i], parts[j] = parts[j], parts[i]
		}
		out = append(out, strings.Join(append(parts, f.name), "/"))
	}
	return out
}
