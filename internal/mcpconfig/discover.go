package mcpconfig

import (
	"os"
	"path/filepath"
	"strings"
)

// Where says whose configs Discover looks for.
type Where struct {
	// Home is the user's home directory ($HOME).
	Home string
	// Dir is the project: the directory init runs in.
	Dir string
	// GOOS picks the per-system places (Claude Desktop's and VS Code's
	// user directories).
	GOOS string
	// ConfigHome is $XDG_CONFIG_HOME on Linux ("" for ~/.config).
	ConfigHome string
}

// Found is a client config file.
type Found struct {
	Path   string
	Client Client
	// Workspace is the project a project's own file belongs to; "" for a
	// user's file.
	Workspace string
	// Project is set for Claude Code's ~/.claude.json: the projects[DIR]
	// entry (this project's local-scope servers) init also wraps.
	Project string
}

// FoundAt is the config at path (a --config) as Discover tells it: the
// client that reads it, the project a project's own file belongs to, and
// for Claude Code's ~/.claude.json the project w.Dir, whose servers there
// are wrapped too.
func FoundAt(path string, w Where) Found {
	f := Found{Path: path, Client: ClientOf(path), Workspace: Workspace(path, w.Home)}
	if filepath.Base(path) == ".claude.json" {
		f.Project = w.Dir
	}
	return f
}

// Candidates lists where each client keeps its MCP servers, project files
// first (clientFiles says which client reads which; docs/clients.md has
// the table, checked against each client's documentation):
//
//   - Claude Code: .mcp.json in the project (project scope); ~/.claude.json,
//     its top-level mcpServers (user scope) and projects[DIR].mcpServers
//     (local scope, where `claude mcp add` puts servers).
//   - Cursor: .cursor/mcp.json in the project, ~/.cursor/mcp.json.
//   - VS Code: .vscode/mcp.json in the workspace; the user's mcp.json in the
//     user directory (~/.config/Code/User on Linux, ~/Library/Application
//     Support/Code/User on macOS, and Code - Insiders beside it).
//   - Gemini CLI: .gemini/settings.json in the project, ~/.gemini/settings.json.
//   - Claude Desktop: ~/Library/Application Support/Claude on macOS,
//     ~/.config/Claude on Linux (claude_desktop_config.json).
//   - Windsurf: ~/.codeium/windsurf/mcp_config.json.
//   - Zed: .zed/settings.json in the project; ~/.config/zed/settings.json
//     (on macOS too; $XDG_CONFIG_HOME on Linux).
//   - Cline and Roo Code: their settings in the global storage of VS Code,
//     Cursor and Windsurf (cline_mcp_settings.json, mcp_settings.json), and
//     ~/.cline/data/settings for the Cline CLI; Roo Code's .roo/mcp.json in
//     the project.
//   - Kiro: .kiro/settings/mcp.json in the project, ~/.kiro/settings/mcp.json.
//   - LM Studio: ~/.lmstudio/mcp.json.
//   - Amazon Q Developer: .amazonq/mcp.json in the project,
//     ~/.aws/amazonq/mcp.json.
//   - Codex CLI: ~/.codex/config.toml (TOML, codex.go), and a trusted
//     project's .codex/config.toml. $CODEX_HOME is not searched.
//   - Continue: ~/.continue/config.yaml, and the block files of a
//     project's .continue/mcpServers/*.yaml (YAML, continue.go).
//   - Goose: config.yaml in its config directory (~/.config/goose, on
//     macOS too; $XDG_CONFIG_HOME/goose if set on Linux), its extensions
//     (YAML, goose.go). $GOOSE_PATH_ROOT is not searched.
//   - Qwen Code (a fork of Gemini CLI): .qwen/settings.json in the project,
//     ~/.qwen/settings.json.
//   - Copilot CLI: ~/.copilot/mcp-config.json ($COPILOT_HOME is not
//     searched).
//   - OpenCode: opencode.json(c) in the project; the user's in its config
//     directory (~/.config/opencode, $XDG_CONFIG_HOME/opencode if set on
//     Linux). $OPENCODE_CONFIG is not searched (opencode.go).
func Candidates(w Where) []Found {
	var out []Found
	for _, rel := range projectFiles() {
		paths := []string{filepath.Join(w.Dir, filepath.FromSlash(rel))}
		if strings.ContainsAny(rel, "*?[") {
			paths, _ = filepath.Glob(paths[0])
		}
		for _, p := range paths {
			if ws := Workspace(p, w.Home); ws != "" {
				out = append(out, Found{Path: p, Client: ClientOf(p), Workspace: ws})
			}
		}
	}
	if w.Home == "" {
		return out
	}
	xdg := filepath.Join(w.Home, ".config")
	if w.GOOS != "darwin" && filepath.IsAbs(w.ConfigHome) {
		xdg = w.ConfigHome
	}
	config := xdg // where Electron apps keep their user data
	if w.GOOS == "darwin" {
		config = filepath.Join(w.Home, "Library", "Application Support")
	}
	user := []string{
		filepath.Join(w.Home, ".claude.json"),
		filepath.Join(w.Home, ".cursor", "mcp.json"),
		filepath.Join(config, "Code", "User", "mcp.json"),
		filepath.Join(config, "Code - Insiders", "User", "mcp.json"),
		filepath.Join(w.Home, ".gemini", "settings.json"),
		filepath.Join(config, "Claude", "claude_desktop_config.json"),
		filepath.Join(w.Home, ".codeium", "windsurf", "mcp_config.json"),
		filepath.Join(xdg, "zed", "settings.json"),
	}
	for _, editor := range []string{"Code", "Cursor", "Windsurf"} {
		storage := filepath.Join(config, editor, "User", "globalStorage")
		user = append(user,
			filepath.Join(storage, "saoudrizwan.claude-dev", "settings", "cline_mcp_settings.json"),
			filepath.Join(storage, "rooveterinaryinc.roo-cline", "settings", "mcp_settings.json"))
	}
	user = append(user,
		filepath.Join(w.Home, ".cline", "data", "settings", "cline_mcp_settings.json"),
		filepath.Join(w.Home, ".kiro", "settings", "mcp.json"),
		filepath.Join(w.Home, ".lmstudio", "mcp.json"),
		filepath.Join(w.Home, ".aws", "amazonq", "mcp.json"),
		filepath.Join(w.Home, ".codex", "config.toml"),
		filepath.Join(w.Home, ".continue", "config.yaml"),
		filepath.Join(xdg, "goose", "config.yaml"),
		filepath.Join(w.Home, ".qwen", "settings.json"),
		filepath.Join(w.Home, ".copilot", "mcp-config.json"),
		filepath.Join(xdg, "opencode", "opencode.json"),
		filepath.Join(xdg, "opencode", "opencode.jsonc"),
	)
	for _, p := range user {
		f := Found{Path: p, Client: ClientOf(p)}
		if filepath.Base(p) == ".claude.json" {
			f.Project = w.Dir
		}
		out = append(out, f)
	}
	return out
}

// Discover returns the candidates that exist as regular files, each once
// (a project at home would list ~/.cursor/mcp.json twice).
func Discover(w Where) []Found {
	var out []Found
	seen := map[string]bool{}
	for _, f := range Candidates(w) {
		fi, err := os.Stat(f.Path)
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		key := f.Path
		if r, err := filepath.EvalSymlinks(f.Path); err == nil {
			key = r
		}
		if seen[key] {
			continue
		}
		seen[key] = true
		out = append(out, f)
	}
	return out
}
