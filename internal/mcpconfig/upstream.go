package mcpconfig

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Launch is what an entry says about starting or reaching its server, as
// written (variables not expanded).
type Launch struct {
	Command string
	Args    []string
	Env     map[string]string
	// EnvOrder is Env's keys in file order.
	EnvOrder []string
	Cwd      string
	// URL is a remote server's address (url, or Gemini CLI's httpUrl).
	URL     string
	Headers map[string]string
	// Type is the entry's "type" ("stdio", "http", "sse"), if any.
	Type string
}

// Server is one entry of a config as init reports it.
type Server struct {
	Block, Name string
	// Wrapped is true when the entry has x-bouncer-upstream.
	Wrapped bool
	// Launch is the original entry: the x-bouncer-upstream one when
	// wrapped. Its zero value when the entry is not an object.
	Launch Launch
	// Command and Args are what the wrapped entry itself launches (bouncer,
	// by name or path, and its flags); empty when the entry is not wrapped.
	Command string
	Args    []string
	// Remote is true for a url entry.
	Remote bool
}

// Servers lists the entries of the file's blocks (with project,
// projects[project].mcpServers too), in file order. An entry whose shape is
// wrong is listed with what could be read of it.
func (c *Config) Servers(project string) ([]Server, error) {
	bl, err := c.blocks(project)
	if err != nil {
		return nil, err
	}
	var out []Server
	for _, b := range bl {
		for _, m := range b.n.members {
			s := Server{Block: b.label, Name: m.key}
			e := m.val
			if up, ok := e.get(UpstreamKey); ok {
				s.Wrapped = true
				if c, ok := e.get("command"); ok && c.kind == '"' {
					s.Command = c.str
				}
				if a, ok := e.get("args"); ok && allStrings(a) {
					s.Args = strs(a)
				}
				e = up
			}
			if e.kind == '{' {
				s.Launch, _ = c.launch(e, m.key)
				s.Remote = isRemote(e)
			}
			out = append(out, s)
		}
	}
	return out, nil
}

func strs(n *node) []string {
	out := make([]string, 0, len(n.elems))
	for _, e := range n.elems {
		out = append(out, e.str)
	}
	return out
}

// launch reads an entry's launch keys, checking their types.
func (c *Config) launch(up *node, server string) (Launch, error) {
	var l Launch
	bad := func(n *node, key, want string) error {
		return c.errAt(n.start, fmt.Sprintf("server %q: %s.%s must be %s", server, UpstreamKey, key, want))
	}
	if t, ok := up.get("type"); ok && t.kind == '"' {
		l.Type = t.str
	}
	if cmd, ok := up.get("command"); ok {
		if cmd.kind != '"' || cmd.str == "" {
			return l, bad(cmd, "command", "a non-empty string")
		}
		l.Command = cmd.str
	}
	for _, k := range []string{"url", "httpUrl"} {
		if u, ok := up.get(k); ok && l.URL == "" {
			if u.kind != '"' || u.str == "" {
				return l, bad(u, k, "a non-empty string")
			}
			l.URL = u.str
		}
	}
	if args, ok := up.get("args"); ok {
		if !allStrings(args) {
			return l, bad(args, "args", "a list of strings")
		}
		l.Args = strs(args)
	}
	if env, ok := up.get("env"); ok && env.kind != 'n' {
		if !stringValues(env) {
			return l, bad(env, "env", "an object of strings")
		}
		l.Env = make(map[string]string, len(env.members))
		for _, kv := range env.members {
			l.Env[kv.key] = kv.val.str
			l.EnvOrder = append(l.EnvOrder, kv.key)
		}
	}
	if h, ok := up.get("headers"); ok && h.kind != 'n' {
		if !stringValues(h) {
			return l, bad(h, "headers", "an object of strings")
		}
		l.Headers = make(map[string]string, len(h.members))
		for _, kv := range h.members {
			l.Headers[kv.key] = kv.val.str
		}
	}
	if cwd, ok := up.get("cwd"); ok && cwd.kind != 'n' {
		if cwd.kind != '"' {
			return l, bad(cwd, "cwd", "a string")
		}
		l.Cwd = cwd.str
	}
	if l.Command == "" && l.URL == "" {
		return l, c.errAt(up.start, fmt.Sprintf("server %q: %s.command must be a non-empty string", server, UpstreamKey))
	}
	return l, nil
}

// Entry is the original server entry `bouncer run --config` starts (or, for
// a remote server, reaches), with the client's variables expanded.
type Entry struct {
	Command string
	Args    []string
	// Env is the entry's env, to be laid over the proxy's own environment
	// as the client would have done; nil when the entry has none.
	Env map[string]string
	// Cwd is absolute (a relative one is resolved against the config
	// file's directory), or "" when the entry names none.
	Cwd string
	// URL and Headers describe a remote server (an entry with url and no
	// command); URL is "" for a stdio server.
	URL     string
	Headers map[string]string
	// Type is the entry's "type", if it has one.
	Type string
}

// Lookup says which entry `bouncer run --config` starts.
type Lookup struct {
	// File is --config as given. A relative name is looked for in the
	// working directory and then in each directory above it, the way the
	// client found the project's file: clients start a project's servers in
	// the directory they were started in, which may be below the project's
	// root, and a file a team commits can't name an absolute path.
	File string
	// Project is --project: the entry is in projects[Project].mcpServers
	// (Claude Code's ~/.claude.json), not in a top-level block.
	Project string
	// Server is --server.
	Server string
	// Getenv is bouncer's own environment (os.LookupEnv), which the
	// client's variables are expanded from.
	Getenv func(string) (string, bool)
}

// Resolved is a found entry and where it was found.
type Resolved struct {
	Entry
	// File is the config's absolute path.
	File string
	// Base is the directory relative --policy files are resolved against
	// in --config mode: where a relative --config was found (the project's
	// root), or the working directory for an absolute one.
	Base string
}

// Locate finds the config file a relative --config names: in dir, then in
// each directory above it. It returns the file's absolute path and the
// directory it was found in (for an absolute name, dir itself).
func Locate(name, dir string) (file, base string, err error) {
	if filepath.IsAbs(name) {
		return filepath.Clean(name), dir, nil
	}
	for d := dir; ; d = filepath.Dir(d) {
		f := filepath.Join(d, name)
		if _, err := os.Stat(f); err == nil {
			return f, d, nil
		} else if !errors.Is(err, fs.ErrNotExist) {
			return "", "", &Error{File: f, Msg: err.Error()}
		}
		if filepath.Dir(d) == d {
			break
		}
	}
	return "", "", &Error{File: name, Msg: fmt.Sprintf("not found in %s or any directory above it (a relative --config is looked for from the directory the client started bouncer in)", dir)}
}

// Resolve reads the x-bouncer-upstream entry of l.Server and expands its
// variables the way the client that reads the file would have. Errors name
// the file (and line and column where there is one): no such server, a
// server that was never wrapped, an entry of the wrong shape, a variable
// that can't be expanded.
func Resolve(l Lookup) (Resolved, error) {
	wd, err := os.Getwd()
	if err != nil {
		return Resolved{}, &Error{File: l.File, Msg: err.Error()}
	}
	file, base, err := Locate(l.File, wd)
	if err != nil {
		return Resolved{}, err
	}
	c, err := Load(file)
	if err != nil {
		return Resolved{}, err
	}
	bl, err := c.blocks(l.Project)
	if err != nil {
		return Resolved{}, err
	}
	var found []member
	var foundIn []string
	for _, b := range bl {
		if l.Project != "" && !strings.HasPrefix(b.label, "projects[") {
			continue // --project names the project's block, and only it
		}
		for _, m := range b.n.members {
			if m.key == l.Server {
				found = append(found, m)
				foundIn = append(foundIn, b.label)
			}
		}
	}
	switch len(found) {
	case 0:
		where := ""
		if l.Project != "" {
			where = fmt.Sprintf(" in projects[%s].mcpServers", l.Project)
		}
		return Resolved{}, &Error{File: l.File, Msg: fmt.Sprintf("no server named %q%s", l.Server, where)}
	case 1:
	default:
		return Resolved{}, c.errAt(found[1].keyStart, fmt.Sprintf("server %q is in both %s and %s; rename one", l.Server, foundIn[0], foundIn[1]))
	}
	m := found[0]
	up, ok := m.val.get(UpstreamKey)
	if !ok {
		return Resolved{}, c.errAt(m.keyStart, fmt.Sprintf("server %q was never wrapped (no %s); run bouncer init first", l.Server, UpstreamKey))
	}
	if up.kind != '{' {
		return Resolved{}, c.errAt(up.start, fmt.Sprintf("server %q: %s is not an object", l.Server, UpstreamKey))
	}
	la, err := c.launch(up, l.Server)
	if err != nil {
		return Resolved{}, err
	}
	home, _ := l.Getenv("HOME")
	x := Expander{Client: c.Client, Workspace: Workspace(file, home), Home: home, Getenv: l.Getenv}
	var verr error
	expand := func(where, s string, at *node) string {
		if verr != nil {
			return ""
		}
		v, err := x.Expand(s)
		if err != nil {
			verr = c.errAt(at.start, fmt.Sprintf("server %q: %s.%s: %v", l.Server, UpstreamKey, where, err))
		}
		return v
	}
	var e Entry
	e.Type = la.Type
	if cmd, ok := up.get("command"); ok {
		e.Command = expand("command", cmd.str, cmd)
	}
	for _, k := range []string{"url", "httpUrl"} {
		if u, ok := up.get(k); ok && e.URL == "" {
			e.URL = expand(k, u.str, u)
		}
	}
	if args, ok := up.get("args"); ok {
		e.Args = make([]string, 0, len(args.elems))
		for i, a := range args.elems {
			e.Args = append(e.Args, expand(fmt.Sprintf("args[%d]", i), a.str, a))
		}
	}
	if env, ok := up.get("env"); ok && env.kind == '{' {
		e.Env = make(map[string]string, len(env.members))
		for _, kv := range env.members {
			e.Env[kv.key] = expand("env."+kv.key, kv.val.str, kv.val)
		}
	}
	if h, ok := up.get("headers"); ok && h.kind == '{' {
		e.Headers = make(map[string]string, len(h.members))
		for _, kv := range h.members {
			e.Headers[kv.key] = expand("headers."+kv.key, kv.val.str, kv.val)
		}
	}
	if cwd, ok := up.get("cwd"); ok && cwd.kind == '"' && cwd.str != "" {
		e.Cwd = expand("cwd", cwd.str, cwd)
		if verr == nil && !filepath.IsAbs(e.Cwd) {
			e.Cwd = filepath.Join(filepath.Dir(file), e.Cwd)
		}
	}
	if verr != nil {
		return Resolved{}, verr
	}
	return Resolved{Entry: e, File: file, Base: base}, nil
}

// Workspace is the project directory of a project's own config file (the
// directory holding .mcp.json, or .vscode, .cursor or .gemini), or "" for a
// user's file. ~/.cursor/mcp.json and ~/.gemini/settings.json are the
// user's own files, not those of a project at home.
func Workspace(file, home string) string {
	abs, err := filepath.Abs(file)
	if err != nil {
		return ""
	}
	dir := filepath.Dir(abs)
	parent := filepath.Dir(dir)
	switch base := filepath.Base(abs); {
	case base == ".mcp.json":
		return dir
	case base == "mcp.json" && filepath.Base(dir) == ".vscode":
		return parent
	case base == "mcp.json" && filepath.Base(dir) == ".cursor",
		base == "settings.json" && filepath.Base(dir) == ".gemini":
		if home != "" && samePath(parent, home) {
			return ""
		}
		return parent
	}
	return ""
}

func samePath(a, b string) bool {
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	ra, err1 := filepath.EvalSymlinks(a)
	rb, err2 := filepath.EvalSymlinks(b)
	return err1 == nil && err2 == nil && ra == rb
}
