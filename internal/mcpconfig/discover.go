package mcpconfig

import (
	"os"
	"path/filepath"
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
// first. Checked against the clients' documentation:
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
func Candidates(w Where) []Found {
	var out []Found
	for _, rel := range []string{".mcp.json", ".cursor/mcp.json", ".vscode/mcp.json", ".gemini/settings.json"} {
		p := filepath.Join(w.Dir, filepath.FromSlash(rel))
		if ws := Workspace(p, w.Home); ws != "" {
			out = append(out, Found{Path: p, Client: ClientOf(p), Workspace: ws})
		}
	}
	if w.Home == "" {
		return out
	}
	config := filepath.Join(w.Home, ".config")
	if w.GOOS == "darwin" {
		config = filepath.Join(w.Home, "Library", "Application Support")
	} else if filepath.IsAbs(w.ConfigHome) {
		config = w.ConfigHome
	}
	user := []string{
		filepath.Join(w.Home, ".claude.json"),
		filepath.Join(w.Home, ".cursor", "mcp.json"),
		filepath.Join(config, "Code", "User", "mcp.json"),
		filepath.Join(config, "Code - Insiders", "User", "mcp.json"),
		filepath.Join(w.Home, ".gemini", "settings.json"),
		filepath.Join(config, "Claude", "claude_desktop_config.json"),
	}
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
