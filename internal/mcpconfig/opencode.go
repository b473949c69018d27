package mcpconfig

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/bouncer-mcp/bouncer/internal/jsonc"
)

// OpenCode keeps its MCP servers in the "mcp" object of opencode.json (a
// project's, found up from where it runs; the user's in
// ~/.config/opencode), in a shape of its own: a local server is
// {"type": "local", "command": [PROGRAM, ARGS...], "environment": {...}},
// a remote one {"type": "remote", "url": ..., "headers": {...}}, and its
// schema is strict (a key it doesn't know is refused), so the original is
// kept in the state directory (Client.KeepsOriginal). The file is read by
// internal/jsonc, like every JSON config; an entry is rewritten whole, as
// a region (regions.go): `"NAME": {"type": "local", "command": ["bouncer",
// "run", ...]}` and OpenCode's own members (enabled, timeout, ...) as
// written. OpenCode replaces {env:NAME} and {file:PATH} in the file's text
// before it reads it; bouncer run can't, so an entry that uses them is left
// unwrapped, and named.

// opencodeBlock is the key of OpenCode's servers.
const opencodeBlock = "mcp"

// opencodeLaunch are the members of an entry that say how to start or
// reach its server; the others (enabled, timeout, ...) are OpenCode's own.
var opencodeLaunch = map[string]bool{"type": true, "command": true, "environment": true, "cwd": true, "url": true, "headers": true, "oauth": true}

// opencodeFormat is OpenCode's opencode.json as a config of regions.
type opencodeFormat struct{}

func (opencodeFormat) block() string { return opencodeBlock }

// parse reads an OpenCode config.
func (f opencodeFormat) parse(path string, data []byte) (*regionDoc, error) {
	root, err := jsonc.Parse(path, data)
	if err != nil {
		return nil, err
	}
	d := &regionDoc{format: f}
	if root.Kind != jsonc.Object {
		return nil, jsonc.ErrorAt(path, data, root.Start, "the top level is not an object")
	}
	mcp, ok := root.Get(opencodeBlock)
	if !ok {
		return d, nil
	}
	if mcp.Kind != jsonc.Object {
		return nil, jsonc.ErrorAt(path, data, mcp.Start, opencodeBlock+" is not an object")
	}
	if err := jsonc.CheckUnique(path, data, mcp, opencodeBlock); err != nil {
		return nil, err
	}
	for _, m := range mcp.Members {
		r := &region{name: m.Key, keyAt: m.KeyStart, start: m.KeyStart, end: m.Val.End}
		r.vals, _ = plain(data, m.Val).(map[string]any)
		if r.vals == nil {
			r.problem = "not an object"
		}
		if cmd, ok := m.Val.Get("command"); ok && cmd.Kind == jsonc.Array && len(cmd.Elems) > 0 {
			r.command = [2]int{cmd.Elems[0].Start, cmd.Elems[0].End}
			r.commandLine = jsonc.Quote
		}
		key, val := string(data[m.KeyStart:m.KeyEnd]), m.Val
		r.render = func(command string, args []string) (string, error) {
			return opencodeEntry(data, key, val, command, args), nil
		}
		d.servers = append(d.servers, r)
	}
	return d, nil
}

// plain is the value of n as encoding/json would decode its text (which
// may hold comments and trailing commas).
func plain(data []byte, n *jsonc.Node) any {
	switch n.Kind {
	case jsonc.Object:
		m := make(map[string]any, len(n.Members))
		for _, x := range n.Members {
			m[x.Key] = plain(data, x.Val)
		}
		return m
	case jsonc.Array:
		a := make([]any, len(n.Elems))
		for i, x := range n.Elems {
			a[i] = plain(data, x)
		}
		return a
	case jsonc.String:
		return n.Str
	case jsonc.True, jsonc.False:
		return n.Kind == jsonc.True
	case jsonc.Number:
		var f float64
		_ = json.Unmarshal(data[n.Start:n.End], &f)
		return f
	}
	return nil
}

// opencodeEntry is the member init writes in place of the entry val (whose
// key is key, as written): a local server launching command with args, and
// OpenCode's own members as they were.
func opencodeEntry(data []byte, key string, val *jsonc.Node, command string, args []string) string {
	q := make([]string, 0, len(args)+1)
	for _, s := range append([]string{command}, args...) {
		q = append(q, jsonc.Quote(s))
	}
	parts := []string{`"type": "local"`, `"command": [` + strings.Join(q, ", ") + `]`}
	for _, m := range val.Members {
		if !opencodeLaunch[m.Key] {
			parts = append(parts, string(data[m.KeyStart:m.Val.End]))
		}
	}
	return key + ": {" + strings.Join(parts, ", ") + "}"
}

// decode reads a kept original entry (`"NAME": {...}`): its values.
func (opencodeFormat) decode(text, name string) (map[string]any, error) {
	doc := []byte("{" + text + "}")
	root, err := jsonc.Parse("", doc)
	if err != nil {
		return nil, err
	}
	if len(root.Members) != 1 || root.Members[0].Key != name {
		return nil, fmt.Errorf("not the entry of %q", name)
	}
	v, ok := plain(doc, root.Members[0].Val).(map[string]any)
	if !ok {
		return nil, fmt.Errorf("the entry of %q is not an object", name)
	}
	return v, nil
}

// launch reads an entry: how OpenCode starts or reaches its server.
func (opencodeFormat) launch(v map[string]any) (Launch, string) {
	var l Launch
	typ, _ := v["type"].(string)
	l.Type = typ
	var problem string
	switch typ {
	case "local":
		list, ok := v["command"].([]any)
		if !ok || len(list) == 0 {
			return l, "a local server's command is not a list of strings"
		}
		for i, x := range list {
			s, ok := x.(string)
			if !ok {
				return l, "a local server's command is not a list of strings"
			}
			if i == 0 {
				l.Command = s
			} else {
				l.Args = append(l.Args, s)
			}
		}
		if l.Env, problem = stringMap(v["environment"], "environment"); problem != "" {
			return l, problem
		}
		if cwd, has := v["cwd"]; has {
			s, ok := cwd.(string)
			if !ok || !filepath.IsAbs(s) {
				return l, "its cwd is not an absolute path; write it absolute"
			}
			l.Cwd = s
		}
	case "remote":
		if l.URL, _ = v["url"].(string); l.URL == "" {
			return l, "a remote server without a url"
		}
		if l.Headers, problem = stringMap(v["headers"], "headers"); problem != "" {
			return l, problem
		}
		if o, has := v["oauth"]; has && o != false {
			return l, "its oauth settings are OpenCode's to use, which bouncer run can't; wrap it by hand (docs/clients.md)"
		}
	default:
		return l, fmt.Sprintf("its type %q is neither local nor remote", typ)
	}
	for _, s := range l.strings() {
		if strings.Contains(s, "{env:") || strings.Contains(s, "{file:") {
			return l, "it uses OpenCode's {env:...} or {file:...}, which only OpenCode fills in; wrap it by hand (docs/clients.md)"
		}
	}
	return l, ""
}

// entry is what bouncer run starts or reaches for an entry.
func (f opencodeFormat) entry(_ Lookup, v map[string]any) (Entry, error) {
	l, problem := f.launch(v)
	if problem != "" {
		return Entry{}, fmt.Errorf("%s", problem)
	}
	if l.Command != "" {
		return Entry{Command: l.Command, Args: l.Args, Env: l.Env, Cwd: l.Cwd, Type: l.Type}, nil
	}
	return Entry{URL: l.URL, Headers: l.Headers, Type: l.Type}, nil
}
