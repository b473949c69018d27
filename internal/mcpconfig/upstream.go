package mcpconfig

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/bouncer-mcp/bouncer/internal/jsonc"
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
	// URL is a remote server's address (url, Gemini CLI's httpUrl,
	// Windsurf's serverUrl).
	URL     string
	Headers map[string]string
	// Type is the entry's "type" ("stdio", "http", "sse"), if any.
	Type string
}

// Server is one entry of a config as init and status report it.
type Server struct {
	Block, Name string
	// Wrapped is true when the entry launches bouncer run in front of its
	// server: wrapped by init (its original found), or by hand (`bouncer
	// run ... -- COMMAND`, HandWrapped).
	Wrapped, HandWrapped bool
	// Kept is true when the original entry is kept in the state directory
	// (Client.KeepsOriginal), not under x-bouncer-upstream.
	Kept bool
	// Lost is true for an entry that launches `bouncer run --config ...
	// --server NAME` as init writes it, but whose original is found
	// nowhere (not in the file, not in the state directory): bouncer run
	// refuses to start it.
	Lost bool
	// Launch is the original entry: the x-bouncer-upstream one (or the one
	// kept) when wrapped by init, what follows -- when wrapped by hand.
	// Its zero value when the entry is not an object.
	Launch Launch
	// Command and Args are what a wrapped entry itself launches (bouncer,
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
	if c.regions != nil {
		return c.serversRegions(), nil
	}
	bl, err := c.blocks(project)
	if err != nil {
		return nil, err
	}
	var out []Server
	for _, b := range bl {
		for _, m := range b.n.Members {
			s := Server{Block: b.label, Name: m.Key}
			o, err := c.originalOf(b.label, m)
			hand := err == nil && o == nil && runsBouncer(m.Val) && !launchesConfig(m.Val, m.Key)
			if err != nil || o != nil || hand {
				s.Wrapped, s.HandWrapped = true, hand
				if c, ok := m.Val.Get("command"); ok && c.Kind == jsonc.String {
					s.Command = c.Str
				}
				if a, ok := m.Val.Get("args"); ok && allStrings(a) {
					s.Args = strs(a)
				}
			}
			switch {
			case o != nil:
				s.Kept = o.kept
				s.Launch, _ = c.launch(o, m.Key)
				s.Remote = isRemote(o.n)
			case hand:
				if i := slices.Index(s.Args, "--"); i >= 0 && i+1 < len(s.Args) {
					s.Launch = Launch{Command: s.Args[i+1], Args: s.Args[i+2:]}
				}
			case err == nil && m.Val.Kind == jsonc.Object:
				s.Lost = launchesConfig(m.Val, m.Key)
				s.Launch, _ = c.launch(&original{n: m.Val, data: c.data}, m.Key)
				s.Remote = isRemote(m.Val)
			}
			out = append(out, s)
		}
	}
	return out, nil
}

func strs(n *jsonc.Node) []string {
	out := make([]string, 0, len(n.Elems))
	for _, e := range n.Elems {
		out = append(out, e.Str)
	}
	return out
}

// launch reads the launch keys of a wrapped entry's original o, checking
// their types.
func (c *Config) launch(o *original, server string) (Launch, error) {
	var l Launch
	up := o.n
	bad := func(n *jsonc.Node, key, want string) error {
		return c.origErr(o, n, server, key, " must be "+want)
	}
	if t, ok := up.Get("type"); ok && t.Kind == jsonc.String {
		l.Type = t.Str
	}
	if cmd, ok := up.Get("command"); ok {
		if cmd.Kind != jsonc.String || cmd.Str == "" {
			return l, bad(cmd, "command", "a non-empty string")
		}
		l.Command = cmd.Str
	}
	for _, k := range urlKeys {
		if u, ok := up.Get(k); ok && l.URL == "" {
			if u.Kind != jsonc.String || u.Str == "" {
				return l, bad(u, k, "a non-empty string")
			}
			l.URL = u.Str
		}
	}
	if args, ok := up.Get("args"); ok {
		if !allStrings(args) {
			return l, bad(args, "args", "a list of strings")
		}
		l.Args = strs(args)
	}
	if env, ok := up.Get("env"); ok && env.Kind != jsonc.Null {
		if !stringValues(env) {
			return l, bad(env, "env", "an object of strings")
		}
		l.Env = make(map[string]string, len(env.Members))
		for _, kv := range env.Members {
			l.Env[kv.Key] = kv.Val.Str
			l.EnvOrder = append(l.EnvOrder, kv.Key)
		}
	}
	if h, ok := up.Get("headers"); ok && h.Kind != jsonc.Null {
		if !stringValues(h) {
			return l, bad(h, "headers", "an object of strings")
		}
		l.Headers = make(map[string]string, len(h.Members))
		for _, kv := range h.Members {
			l.Headers[kv.Key] = kv.Val.Str
		}
	}
	if cwd, ok := up.Get("cwd"); ok && cwd.Kind != jsonc.Null {
		if cwd.Kind != jsonc.String {
			return l, bad(cwd, "cwd", "a string")
		}
		l.Cwd = cwd.Str
	}
	if l.Command == "" && l.URL == "" {
		return l, c.origErr(o, up, server, "command", " must be a non-empty string")
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
	// Kept is where a KeepsOriginal client's original entries are kept: the
	// state directory of bouncer run.
	Kept Kept
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
	c, err := Load(file, l.Kept)
	if err != nil {
		return Resolved{}, err
	}
	if c.regions != nil {
		return c.resolveRegions(l, file, base)
	}
	bl, err := c.blocks(l.Project)
	if err != nil {
		return Resolved{}, err
	}
	var found []jsonc.Member
	var foundIn []string
	for _, b := range bl {
		if l.Project != "" && !strings.HasPrefix(b.label, "projects[") {
			continue // --project names the project's block, and only it
		}
		for _, m := range b.n.Members {
			if m.Key == l.Server {
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
		return Resolved{}, c.errAt(found[1].KeyStart, fmt.Sprintf("server %q is in both %s and %s; rename one", l.Server, foundIn[0], foundIn[1]))
	}
	m := found[0]
	o, err := c.originalOf(foundIn[0], m)
	switch {
	case err != nil:
		return Resolved{}, err
	case o == nil && c.Client.KeepsOriginal():
		return Resolved{}, c.errAt(m.KeyStart, fmt.Sprintf("server %q has no original entry kept for it in %s (%s keeps no %s in its entries, so bouncer init keeps them there): it was wrapped with another state directory (pass its --home), or on another machine; put the original entry back and run bouncer init", l.Server, c.keptIn, c.Client, UpstreamKey))
	case o == nil:
		return Resolved{}, c.errAt(m.KeyStart, fmt.Sprintf("server %q was never wrapped (no %s); run bouncer init first", l.Server, UpstreamKey))
	}
	la, err := c.launch(o, l.Server)
	if err != nil {
		return Resolved{}, err
	}
	up := o.n
	home := UserHome(l.Getenv)
	x := Expander{Client: c.Client, Workspace: Workspace(file, home), Home: home, Getenv: l.Getenv}
	var verr error
	expand := func(where, s string, at *jsonc.Node) string {
		if verr != nil {
			return ""
		}
		v, err := x.Expand(s)
		if err != nil {
			verr = c.origErr(o, at, l.Server, where, ": "+err.Error())
		}
		return v
	}
	var e Entry
	e.Type = la.Type
	if cmd, ok := up.Get("command"); ok {
		e.Command = expand("command", cmd.Str, cmd)
	}
	for _, k := range urlKeys {
		if u, ok := up.Get(k); ok && e.URL == "" {
			e.URL = expand(k, u.Str, u)
		}
	}
	if args, ok := up.Get("args"); ok {
		e.Args = make([]string, 0, len(args.Elems))
		for i, a := range args.Elems {
			e.Args = append(e.Args, expand(fmt.Sprintf("args[%d]", i), a.Str, a))
		}
	}
	if env, ok := up.Get("env"); ok && env.Kind == jsonc.Object {
		e.Env = make(map[string]string, len(env.Members))
		for _, kv := range env.Members {
			e.Env[kv.Key] = expand("env."+kv.Key, kv.Val.Str, kv.Val)
		}
	}
	if h, ok := up.Get("headers"); ok && h.Kind == jsonc.Object {
		e.Headers = make(map[string]string, len(h.Members))
		for _, kv := range h.Members {
			e.Headers[kv.Key] = expand("headers."+kv.Key, kv.Val.Str, kv.Val)
		}
	}
	if cwd, ok := up.Get("cwd"); ok && cwd.Kind == jsonc.String && cwd.Str != "" {
		e.Cwd = expand("cwd", cwd.Str, cwd)
		if verr == nil && !filepath.IsAbs(e.Cwd) {
			e.Cwd = filepath.Join(filepath.Dir(file), e.Cwd)
		}
	}
	if verr != nil {
		return Resolved{}, verr
	}
	return Resolved{Entry: e, File: file, Base: base}, nil
}

// SamePath reports whether a and b name one file: equal once cleaned, or
// once their links are resolved.
func SamePath(a, b string) bool {
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	ra, err1 := filepath.EvalSymlinks(a)
	rb, err2 := filepath.EvalSymlinks(b)
	return err1 == nil && err2 == nil && ra == rb
}
