package mcpconfig

import (
	"fmt"
	"os/user"
	"path/filepath"
	"strings"
)

// Expander expands the ${...} variables of a config string the way Client
// does when it starts a server, from Getenv (bouncer's own environment,
// which the client gave it: the same one the client expanded from).
//
//   - Claude Code: ${NAME} and ${NAME:-default}. A variable that is unset
//     (or empty, with a default) takes the default; unset with no default
//     is an error, as Claude Code's documentation says it refuses such a
//     config.
//   - VS Code and Cursor: ${env:NAME} (empty when unset, as they do),
//     ${userHome}, ${workspaceFolder}, ${workspaceFolderBasename},
//     ${pathSeparator} and ${/}. ${workspaceFolder} is known only for a
//     project's own file. ${input:...}, ${config:...}, ${command:...} and
//     the rest are the editor's to fill in and are an error here.
//   - Gemini CLI: $NAME and ${NAME}; an unset variable stays as written, as
//     Gemini CLI leaves it.
//   - Qwen Code: the same $NAME and ${NAME} as Gemini CLI, except that it
//     never fills in some variables of its own (its internal secrets) and
//     takes others from files of its own; bouncer knows neither list, so a
//     variable is an error (the entry is left unwrapped, and said so).
//   - Windsurf and Roo Code: ${env:NAME}. Unset is an error: their
//     documentation does not say what they send instead, and bouncer
//     would not guess a credential. Any other ${...} is theirs to fill in.
//   - Claude Desktop and Codex CLI: nothing is expanded, as they expand
//     none (Codex's env_http_headers and bearer_token_env_var name
//     variables instead, which Resolve reads).
//   - Zed, Cline, Kiro, LM Studio, Amazon Q Developer, Goose, Copilot CLI,
//     and files of no known client: a ${ is an error, since their rule is
//     not known here (the entry is left unwrapped, and said so); the rest
//     is taken as written.
type Expander struct {
	Client Client
	// Workspace is the project directory of a project's own file, "" for a
	// user's file.
	Workspace string
	// Home is ${userHome}.
	Home string
	// Getenv looks a variable up; ok is false when it is unset.
	Getenv func(name string) (value string, ok bool)
}

// UserHome is the home directory an editor expands ${userHome} to, as
// Node's os.homedir() finds it: $HOME, else the user database's entry for
// this user; "" when neither has one.
func UserHome(getenv func(string) (string, bool)) string {
	if h, ok := getenv("HOME"); ok && h != "" {
		return h
	}
	if u, err := user.Current(); err == nil {
		return u.HomeDir
	}
	return ""
}

// VarError is a variable an Expander could not expand.
type VarError struct {
	Var    string // as written, e.g. "${input:token}"
	Reason string
}

func (e *VarError) Error() string { return fmt.Sprintf("%s %s", e.Var, e.Reason) }

// Expand returns s with its variables expanded.
func (x Expander) Expand(s string) (string, error) {
	switch x.Client {
	case ClaudeCode:
		return x.braces(s, x.claude)
	case VSCode, Cursor:
		return x.braces(s, x.editor)
	case Gemini:
		return x.gemini(s), nil
	case QwenCode:
		// Gemini CLI's reading finds the variables; none is filled in.
		var found string
		y := x
		y.Getenv = func(name string) (string, bool) {
			if found == "" {
				found = name
			}
			return "", false
		}
		if y.gemini(s); found != "" {
			return "", &VarError{Var: "$" + found, Reason: "is filled in by Qwen Code itself, by rules bouncer does not know (some variables it never fills in); wrap it by hand (docs/clients.md)"}
		}
		return s, nil
	case Windsurf, RooCode:
		return x.braces(s, x.envOnly)
	case ClaudeDesktop, Codex:
		return s, nil
	case UnknownClient:
		if strings.Contains(s, "${") {
			return "", &VarError{Var: firstVar(s), Reason: "is in a file bouncer can't tell the client of, so not how the client expands it (docs/clients.md lists the files it knows)"}
		}
	default:
		if strings.Contains(s, "${") {
			return "", &VarError{Var: firstVar(s), Reason: fmt.Sprintf("is in a file of %s, whose variables bouncer does not know how to expand; wrap it by hand (docs/clients.md)", x.Client)}
		}
	}
	return s, nil
}

// envOnly expands ${env:NAME}, refusing it unset, and refuses every other
// ${...}.
func (x Expander) envOnly(inner string) (string, error) {
	name, ok := strings.CutPrefix(inner, "env:")
	if !ok {
		return "", &VarError{Var: "${" + inner + "}", Reason: fmt.Sprintf("is filled in by %s itself, which bouncer can't do; wrap it by hand (docs/clients.md)", x.Client)}
	}
	v, set := x.Getenv(name)
	if !set {
		return "", &VarError{Var: "${" + inner + "}", Reason: fmt.Sprintf("is not set in the environment the client started bouncer with: set %s where you start %s", name, x.Client)}
	}
	return v, nil
}

func firstVar(s string) string {
	i := strings.Index(s, "${")
	j := strings.IndexByte(s[i:], '}')
	if j < 0 {
		return s[i:]
	}
	return s[i : i+j+1]
}

// braces replaces each ${...} of s by what one returns for its inside. An
// unclosed ${ stays as written, as the clients' patterns don't match it.
func (x Expander) braces(s string, one func(inner string) (string, error)) (string, error) {
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		j := strings.IndexByte(s[i+2:], '}')
		if j < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		b.WriteString(s[:i])
		v, err := one(s[i+2 : i+2+j])
		if err != nil {
			return "", err
		}
		b.WriteString(v)
		s = s[i+2+j+1:]
	}
}

func (x Expander) claude(inner string) (string, error) {
	name, def, hasDef := strings.Cut(inner, ":-")
	v, ok := x.Getenv(name)
	switch {
	case hasDef && (!ok || v == ""):
		return def, nil
	case !ok:
		return "", &VarError{Var: "${" + inner + "}", Reason: fmt.Sprintf("is not set in the environment the client started bouncer with (Claude Code refuses such a server too): set %s where you start the client, or write ${%s:-DEFAULT}", name, name)}
	}
	return v, nil
}

func (x Expander) editor(inner string) (string, error) {
	if name, ok := strings.CutPrefix(inner, "env:"); ok {
		v, _ := x.Getenv(name)
		return v, nil // unset is empty, as in the editor
	}
	switch inner {
	case "userHome":
		if x.Home == "" {
			return "", &VarError{Var: "${userHome}", Reason: "can't be expanded: neither HOME nor the user database gives bouncer a home directory"}
		}
		return x.Home, nil
	case "pathSeparator", "/":
		return string(filepath.Separator), nil
	case "workspaceFolder", "workspaceFolderBasename":
		if x.Workspace == "" {
			return "", &VarError{Var: "${" + inner + "}", Reason: "has no one value in a user's own config (it is whichever folder is open); wrap it by hand (docs/clients.md)"}
		}
		if inner == "workspaceFolder" {
			return x.Workspace, nil
		}
		return filepath.Base(x.Workspace), nil
	}
	return "", &VarError{Var: "${" + inner + "}", Reason: fmt.Sprintf("is filled in by %s itself, which bouncer can't do; wrap it by hand (docs/clients.md)", x.Client)}
}

// gemini expands $NAME and ${NAME} as Gemini CLI does when it loads
// settings, leaving a reference to an unset variable as written.
func (x Expander) gemini(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		if s[i] != '$' {
			b.WriteByte(s[i])
			i++
			continue
		}
		var name string
		end := i + 1
		if end < len(s) && s[end] == '{' {
			j := strings.IndexByte(s[end+1:], '}')
			if j > 0 {
				name = s[end+1 : end+1+j]
				end = end + 1 + j + 1
			}
		} else {
			for end < len(s) && isWord(s[end]) {
				end++
			}
			name = s[i+1 : end]
		}
		if name == "" {
			b.WriteByte('$')
			i++
			continue
		}
		if v, ok := x.Getenv(name); ok {
			b.WriteString(v)
		} else {
			b.WriteString(s[i:end])
		}
		i = end
	}
	return b.String()
}

func isWord(c byte) bool {
	return c == '_' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}
