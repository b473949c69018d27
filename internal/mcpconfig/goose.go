package mcpconfig

import (
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/bouncer-mcp/bouncer/internal/jsonc"
)

// Goose keeps its MCP servers in ~/.config/goose/config.yaml, as the
// entries of an `extensions` mapping keyed by name. An entry is Goose's
// ExtensionEntry: `enabled` and, flattened into it, an ExtensionConfig
// tagged by `type`. Of those, `stdio` (cmd, args, envs, env_keys) and the
// remote `streamable_http` and older `sse` (uri, headers) are servers Goose
// starts or reaches; `builtin`, `platform` and `frontend` are Goose's own
// and are not listed; `inline_python` is a server Goose builds from code it
// holds, which init can't wrap (it is named). The file is read by yaml.v3,
// like Continue's (continue.go), and an entry is rewritten in place, key by
// key: its key line, Goose's own keys (name, enabled, timeout,
// available_tools, env_keys, ...) and every comment between them stay as
// written, `type` becomes stdio, `cmd` and `args` launch bouncer run, and
// envs, uri and headers go, kept with the original in the state
// directory. Goose writes the whole file anew when it saves a setting,
// through a typed struct that drops a key it doesn't know: the wrapped
// entry holds only keys Goose knows, so it survives that.

// gooseBlock is the key of Goose's extensions.
const gooseBlock = "extensions"

// gooseFormat is Goose's config.yaml as a config of regions.
type gooseFormat struct{}

func (gooseFormat) block() string { return gooseBlock }

// gooseOwn reports whether an extension of type typ is Goose's own code
// rather than an MCP server it starts or reaches.
func gooseOwn(typ any) bool {
	switch typ {
	case "builtin", "platform", "frontend":
		return true
	}
	return false
}

// parse reads a Goose config: a YAML mapping whose extensions key holds a
// mapping of entries.
func (f gooseFormat) parse(path string, data []byte) (*regionDoc, error) {
	b, err := readYAMLBlock(path, data, gooseBlock)
	if err != nil {
		return nil, err
	}
	d := &regionDoc{format: f}
	exts, all, lines, next := b.node, b.all, b.lines, b.next
	if exts == nil || exts.Kind == yaml.ScalarNode && exts.Tag == "!!null" {
		return d, nil
	}
	if exts.Kind != yaml.MappingNode {
		return nil, &Error{File: path, Line: exts.Line, Col: exts.Column, Msg: gooseBlock + " is not a mapping"}
	}
	vals, _ := all[gooseBlock].(map[string]any)
	for i := 0; i+1 < len(exts.Content); i += 2 {
		k, v := exts.Content[i], exts.Content[i+1]
		r := &region{name: k.Value, keyAt: lines[k.Line-1] + k.Column - 1}
		r.vals, _ = vals[k.Value].(map[string]any)
		if r.vals != nil && gooseOwn(r.vals["type"]) {
			continue
		}
		r.start = lines[k.Line-1]
		end := next
		if i+2 < len(exts.Content) {
			end = lines[exts.Content[i+2].Line-1]
		}
		r.end = trimTail(data, r.start, end)
		pairs, problem := goosePairs(data, lines, exts, k, v, r.end)
		r.problem = problem
		if r.problem == "" && r.vals == nil {
			r.problem = "not a mapping"
		}
		for _, p := range pairs {
			if p.key == "cmd" {
				r.command = [2]int{p.start, p.end}
				indent := p.indent
				r.commandLine = func(command string) string { return indent + "cmd: " + jsonc.Quote(command) + "\n" }
			}
		}
		r.render = func(command string, args []string) (string, error) {
			return gooseEntry(data, r.start, r.end, pairs, command, args), nil
		}
		d.servers = append(d.servers, r)
	}
	return d, nil
}

// goosePair is one key of an entry and its value: the bytes from the start
// of the key's line to the end of the value's last line (blank lines and
// comments after it excluded: they stay, with what follows).
type goosePair struct {
	key, indent string
	start, end  int
}

// goosePairs finds the keys of entry v (whose key is k) and their lines,
// or says why init can't rewrite the entry key by key: a flow mapping, a
// key not first on its line, a block scalar or an anchor (their lines are
// not the key's alone, or the text is not the value).
func goosePairs(data []byte, lines []int, exts, k, v *yaml.Node, end int) ([]goosePair, string) {
	if exts.Style&yaml.FlowStyle != 0 || v.Style&yaml.FlowStyle != 0 {
		return nil, "written in YAML's flow style, which init does not rewrite; write it as a block mapping"
	}
	if v.Kind != yaml.MappingNode || len(v.Content) == 0 {
		return nil, "not a mapping"
	}
	if k.Kind != yaml.ScalarNode || !firstOnLine(data, lines, k) {
		return nil, "its name is not a plain key on a line of its own, which init does not rewrite"
	}
	if bad := yamlSpliceProblem(v, nil); bad != "" {
		return nil, bad
	}
	var out []goosePair
	for j := 0; j+1 < len(v.Content); j += 2 {
		key := v.Content[j]
		if key.Line <= k.Line || !firstOnLine(data, lines, key) {
			return nil, "its keys are not each on a line of their own, which init does not rewrite"
		}
		ls := lines[key.Line-1]
		p := goosePair{key: key.Value, indent: string(data[ls : ls+key.Column-1]), start: ls, end: end}
		if j+2 < len(v.Content) {
			p.end = trimTail(data, ls, lines[v.Content[j+2].Line-1])
		}
		out = append(out, p)
	}
	return out, ""
}

// firstOnLine reports whether node n is the first thing on its line.
func firstOnLine(data []byte, lines []int, n *yaml.Node) bool {
	ls := lines[n.Line-1]
	return strings.TrimLeft(string(data[ls:ls+n.Column-1]), " ") == ""
}

// gooseEntry is the entry init writes in place of data[start:end]: every
// line as it was but the launch keys', type set to stdio, cmd and args
// (where cmd, or a remote's uri, was) launching command with args, and
// envs, headers, uri and the old args gone. Blank and comment lines left
// after the last key written are dropped (they are in the kept original):
// they would read as what follows the entry, and undo would leave them.
func gooseEntry(data []byte, start, end int, pairs []goosePair, command string, args []string) string {
	var b strings.Builder
	var gap []byte // the lines since the last key written, the key line first
	at, launched := start, false
	write := func(s string) {
		b.Write(gap)
		gap = nil
		b.WriteString(s)
	}
	for _, p := range pairs {
		gap = append(gap, data[at:p.start]...)
		at = p.end
		switch p.key {
		case "type":
			write(p.indent + "type: stdio\n")
		case "cmd", "uri":
			if !launched {
				write(p.indent + "cmd: " + jsonc.Quote(command) + "\n" + p.indent + "args: " + tomlList(args) + "\n")
				launched = true
			}
		case "args", "envs", "headers":
		default:
			write(string(data[p.start:p.end]))
		}
	}
	return b.String()
}

// decode reads a kept original entry: its values.
func (gooseFormat) decode(text, name string) (map[string]any, error) {
	var m map[string]map[string]any
	if err := yaml.Unmarshal([]byte(unindentItem(text)), &m); err != nil {
		return nil, err
	}
	v, ok := m[name]
	if len(m) != 1 || !ok {
		return nil, fmt.Errorf("not the entry of %q", name)
	}
	return v, nil
}

// launch reads an entry: how Goose starts or reaches its server.
func (gooseFormat) launch(v map[string]any) (Launch, string) {
	var l Launch
	str := func(k string) (string, bool) {
		x, ok := v[k]
		if !ok || x == nil {
			return "", true
		}
		s, ok := x.(string)
		return s, ok
	}
	typ, ok := str("type")
	if !ok || typ == "" {
		return l, "it has no type"
	}
	l.Type = typ
	var problem string
	switch typ {
	case "stdio":
		if l.Command, ok = str("cmd"); !ok || l.Command == "" {
			return l, "a stdio extension without a cmd"
		}
		list, ok := v["args"].([]any)
		if _, has := v["args"]; !has {
			return l, "a stdio extension without args, which Goose refuses"
		} else if !ok && v["args"] != nil {
			return l, "args is not a list of strings"
		}
		for _, x := range list {
			s, ok := x.(string)
			if !ok {
				return l, "args is not a list of strings"
			}
			l.Args = append(l.Args, s)
		}
		if l.Env, problem = stringMap(v["envs"], "envs"); problem != "" {
			return l, problem
		}
	case "streamable_http", "sse":
		if l.URL, ok = str("uri"); !ok || l.URL == "" {
			return l, "a remote extension without a uri"
		}
		if l.Headers, problem = stringMap(v["headers"], "headers"); problem != "" {
			return l, problem
		}
		// What Goose does with a remote's envs and env_keys is not
		// documented; bouncer would not guess where a credential goes.
		env, problem := stringMap(v["envs"], "envs")
		keys, _ := v["env_keys"].([]any)
		if problem != "" || len(env) > 0 || len(keys) > 0 {
			return l, "a remote extension with envs or env_keys, whose use by Goose bouncer does not know; wrap it by hand (docs/clients.md)"
		}
	case "inline_python":
		return l, "Goose runs its inline code itself (through uvx): there is no command to wrap"
	default:
		return l, fmt.Sprintf("its type %q is not one Goose starts an MCP server for", typ)
	}
	for _, s := range l.strings() {
		if strings.Contains(s, "${") {
			return l, firstVar(s) + ": Goose's variables are not documented, so bouncer can't fill them in as Goose would; wrap it by hand (docs/clients.md)"
		}
	}
	return l, ""
}

// strings are the strings of l a server is started or reached with.
func (l Launch) strings() []string {
	out := append([]string{l.Command, l.URL, l.Cwd}, l.Args...)
	for _, m := range []map[string]string{l.Env, l.Headers} {
		for _, s := range m {
			out = append(out, s)
		}
	}
	return out
}

// entry is what bouncer run starts or reaches for an entry. A stdio
// entry's env_keys stay on the wrapped entry, so Goose puts those
// variables in bouncer's environment, which the server inherits.
func (f gooseFormat) entry(_ Lookup, v map[string]any) (Entry, error) {
	l, problem := f.launch(v)
	if problem != "" {
		return Entry{}, fmt.Errorf("%s", problem)
	}
	if l.Command != "" {
		return Entry{Command: l.Command, Args: l.Args, Env: l.Env, Type: l.Type}, nil
	}
	return Entry{URL: l.URL, Headers: l.Headers, Type: l.Type}, nil
}
