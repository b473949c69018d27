package mcpconfig

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/bouncer-mcp/bouncer/internal/jsonc"
)

// Continue keeps its servers in YAML: an `mcpServers` list in
// ~/.continue/config.yaml, and in the block files of a project's
// .continue/mcpServers/*.yaml, each item a mapping with a name. The file
// is read by yaml.v3, the project's one YAML reader, whose nodes say the
// line each item starts on; an item is rewritten whole, as a range of
// lines (regions.go), since yaml.v3 writes a document anew and would drop
// comments and layout. Continue fills in ${{ secrets.NAME }} and
// ${{ inputs.NAME }} from its own store, which bouncer run can't: an item
// that uses them is left unwrapped, and named.

// continueBlock is the key of Continue's servers.
const continueBlock = "mcpServers"

// continueLaunch are the keys of an item that say how to start or reach
// its server; the others (name, connectionTimeout, ...) stay on the
// wrapped item.
var continueLaunch = map[string]bool{"command": true, "args": true, "env": true, "cwd": true, "url": true, "type": true, "requestOptions": true}

// continueFormat is a Continue config as a config of regions.
type continueFormat struct{}

func (continueFormat) block() string { return continueBlock }

// parse reads a Continue config: a YAML mapping with an mcpServers list.
func (f continueFormat) parse(path string, data []byte) (*regionDoc, error) {
	b, err := readYAMLBlock(path, data, continueBlock)
	if err != nil {
		return nil, err
	}
	d := &regionDoc{format: f}
	list, all, lines, next := b.node, b.all, b.lines, b.next
	if list == nil {
		return d, nil
	}
	if list.Kind != yaml.SequenceNode {
		return nil, &Error{File: path, Line: list.Line, Col: list.Column, Msg: continueBlock + " is not a list"}
	}
	items, _ := all[continueBlock].([]any)
	seen := map[string]*region{}
	for i, it := range list.Content {
		r := &region{keyAt: lines[it.Line-1] + it.Column - 1}
		start := lines[it.Line-1]
		end := next
		if i+1 < len(list.Content) {
			end = lines[list.Content[i+1].Line-1]
		}
		r.start, r.end = start, trimTail(data, start, end)
		if i < len(items) {
			r.vals, _ = items[i].(map[string]any)
		}
		r.problem = continueProblem(data, list, it, r.vals)
		if dash := string(data[start : lines[it.Line-1]+it.Column-1]); r.problem == "" && strings.TrimSpace(dash) != "-" {
			r.problem = "its first key is not on the line of its dash, which init does not rewrite"
		}
		if name, ok := r.vals["name"].(string); ok && name != "" {
			r.name = name
		} else {
			r.name = fmt.Sprintf("#%d", i+1)
			if r.problem == "" {
				r.problem = "it has no name"
			}
		}
		if other := seen[r.name]; other != nil {
			other.problem = "its name is given to another server too"
			r.problem = other.problem
		}
		seen[r.name] = r
		keyIndent := strings.Repeat(" ", it.Column-1)
		dash := string(data[start : lines[it.Line-1]+it.Column-1])
		for j := 0; j+1 < len(it.Content); j += 2 {
			if k := it.Content[j]; k.Value == "command" {
				ls := lines[k.Line-1]
				r.command = [2]int{ls, ls + lineLen(data[ls:])}
				prefix := string(data[ls : ls+k.Column-1])
				r.commandLine = func(command string) string {
					return prefix + "command: " + jsonc.Quote(command) + "\n"
				}
			}
		}
		r.render = func(command string, args []string) (string, error) {
			return continueItem(it, dash, keyIndent, command, args)
		}
		d.servers = append(d.servers, r)
	}
	return d, nil
}

// continueProblem says why init can't rewrite item it of list: a flow
// list or item, a block scalar or an anchor in it (their lines are not
// the item's alone, or its text is not its value), a value of Continue's
// own templates, or a shape Continue would refuse.
func continueProblem(data []byte, list, it *yaml.Node, v map[string]any) string {
	if list.Style&yaml.FlowStyle != 0 || it.Style&yaml.FlowStyle != 0 || it.Kind != yaml.MappingNode {
		return "written in YAML's flow style, which init does not rewrite; write it as a block mapping"
	}
	if bad := yamlSpliceProblem(it, func(n *yaml.Node) string {
		if n.Kind == yaml.ScalarNode && strings.Contains(n.Value, "${{") {
			return "it uses Continue's ${{ ... }} templates, which only Continue fills in; wrap it by hand (docs/clients.md)"
		}
		return ""
	}); bad != "" {
		return bad
	}
	if v == nil {
		return "not a mapping"
	}
	return ""
}

// yamlSpliceProblem says why init can't rewrite the YAML node n by its
// lines (Continue's items, Goose's entries): an anchor or alias, or a
// block scalar in it (their lines are not the node's alone, or its text is
// not its value), or what also says of one of its nodes; "" when none.
func yamlSpliceProblem(n *yaml.Node, also func(*yaml.Node) string) string {
	switch {
	case n.Anchor != "" || n.Kind == yaml.AliasNode:
		return "it uses a YAML anchor or alias, which init does not rewrite"
	case n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0:
		return "it has a block scalar (| or >), which init does not rewrite"
	}
	if also != nil {
		if bad := also(n); bad != "" {
			return bad
		}
	}
	for _, c := range n.Content {
		if bad := yamlSpliceProblem(c, also); bad != "" {
			return bad
		}
	}
	return ""
}

// continueItem is the item init writes in it's place: its name, command
// and args, and Continue's own keys as yaml.v3 writes them, at the item's
// indentation.
func continueItem(it *yaml.Node, dash, keyIndent, command string, args []string) (string, error) {
	var b strings.Builder
	var name *yaml.Node
	var own []*yaml.Node
	for j := 0; j+1 < len(it.Content); j += 2 {
		k, v := it.Content[j], it.Content[j+1]
		switch {
		case k.Value == "name":
			name = v
		case !continueLaunch[k.Value]:
			own = append(own, k, v)
		}
	}
	if name == nil {
		return "", errors.New("it has no name")
	}
	nameText, err := yamlValue(name)
	if err != nil {
		return "", err
	}
	b.WriteString(dash + "name: " + nameText + "\n")
	b.WriteString(keyIndent + "command: " + jsonc.Quote(command) + "\n")
	b.WriteString(keyIndent + "args: " + tomlList(args) + "\n")
	if len(own) > 0 {
		var buf bytes.Buffer
		enc := yaml.NewEncoder(&buf)
		enc.SetIndent(2)
		if err := enc.Encode(&yaml.Node{Kind: yaml.MappingNode, Content: own}); err != nil {
			return "", err
		}
		for _, line := range strings.SplitAfter(strings.TrimSuffix(buf.String(), "\n"), "\n") {
			b.WriteString(keyIndent + line)
		}
		b.WriteString("\n")
	}
	return b.String(), nil
}

// yamlValue is a scalar as yaml.v3 writes it.
func yamlValue(n *yaml.Node) (string, error) {
	out, err := yaml.Marshal(&yaml.Node{Kind: yaml.ScalarNode, Tag: n.Tag, Value: n.Value, Style: n.Style &^ (yaml.LiteralStyle | yaml.FoldedStyle)})
	if err != nil {
		return "", err
	}
	return strings.TrimSuffix(string(out), "\n"), nil
}

// decode reads a kept original item: its values.
func (continueFormat) decode(text, name string) (map[string]any, error) {
	var items []map[string]any
	if err := yaml.Unmarshal([]byte(unindentItem(text)), &items); err != nil {
		return nil, err
	}
	if len(items) != 1 || items[0]["name"] != name {
		return nil, fmt.Errorf("not the item of %q", name)
	}
	return items[0], nil
}

// unindentItem takes the indentation of its first line off every line of
// an item's text, so that it reads as a list of its own.
func unindentItem(text string) string {
	ind := len(text) - len(strings.TrimLeft(text, " "))
	var b strings.Builder
	for _, line := range strings.SplitAfter(text, "\n") {
		if len(line) >= ind && strings.TrimLeft(line[:ind], " ") == "" {
			line = line[ind:]
		}
		b.WriteString(line)
	}
	return b.String()
}

// launch reads an item's launch keys, checking their types.
func (continueFormat) launch(v map[string]any) (Launch, string) {
	var l Launch
	str := func(k string) (string, bool) {
		x, ok := v[k]
		if !ok || x == nil {
			return "", true
		}
		s, ok := x.(string)
		return s, ok
	}
	var ok bool
	if l.Command, ok = str("command"); !ok {
		return l, "command is not a string"
	}
	if l.URL, ok = str("url"); !ok {
		return l, "url is not a string"
	}
	if l.Cwd, ok = str("cwd"); !ok {
		return l, "cwd is not a string"
	}
	if l.Type, ok = str("type"); !ok {
		return l, "type is not a string"
	}
	if a, has := v["args"]; has && a != nil {
		list, ok := a.([]any)
		if !ok {
			return l, "args is not a list of strings"
		}
		for _, x := range list {
			s, ok := x.(string)
			if !ok {
				return l, "args is not a list of strings"
			}
			l.Args = append(l.Args, s)
		}
	}
	var problem string
	if l.Env, problem = stringMap(v["env"], "env"); problem != "" {
		return l, problem
	}
	if ro, has := v["requestOptions"]; has && ro != nil {
		m, ok := ro.(map[string]any)
		if !ok {
			return l, "requestOptions is not a mapping"
		}
		if l.Headers, problem = stringMap(m["headers"], "requestOptions.headers"); problem != "" {
			return l, problem
		}
	}
	switch {
	case l.Command == "" && l.URL == "":
		return l, "no command or url"
	case l.Cwd != "" && !strings.HasPrefix(l.Cwd, "/"):
		return l, "cwd is relative to wherever Continue starts it; write it absolute"
	}
	return l, ""
}

// stringMap reads a mapping of strings; nil when absent.
func stringMap(x any, key string) (map[string]string, string) {
	if x == nil {
		return nil, ""
	}
	m, ok := x.(map[string]any)
	if !ok {
		return nil, key + " is not a mapping of strings"
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		s, ok := v.(string)
		if !ok {
			return nil, key + " is not a mapping of strings"
		}
		out[k] = s
	}
	return out, ""
}

// entry is what bouncer run starts or reaches for an item: its values as
// written (Continue's own templates are left unwrapped).
func (f continueFormat) entry(_ Lookup, v map[string]any) (Entry, error) {
	l, _ := f.launch(v)
	e := Entry{Command: l.Command, Args: l.Args, Env: l.Env, Cwd: l.Cwd, Type: l.Type}
	if l.Command == "" {
		e.URL, e.Headers = l.URL, l.Headers
	}
	return e, nil
}

// yamlBlock is the top-level member of a YAML config that init rewrites
// (Continue's mcpServers, Goose's extensions), read once both ways the
// rewriting needs.
type yamlBlock struct {
	node  *yaml.Node     // the member's value; nil when the file has none
	all   map[string]any // the whole file as a YAML reader reads it
	lines []int          // where each line starts (yamlLines)
	next  int            // where what follows the member starts
}

// readYAMLBlock reads the YAML config at path (data) and finds its
// top-level member key. The file must be a mapping (or empty) whose line
// breaks are plain line feeds (yamlLines).
func readYAMLBlock(path string, data []byte, key string) (*yamlBlock, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, &Error{File: path, Msg: "not valid YAML: " + err.Error()}
	}
	b := &yamlBlock{next: len(data)}
	if err := yaml.Unmarshal(data, &b.all); err != nil {
		return nil, &Error{File: path, Msg: "not valid YAML: " + err.Error()}
	}
	if len(doc.Content) == 0 {
		return b, nil
	}
	top := doc.Content[0]
	if top.Kind != yaml.MappingNode {
		return nil, &Error{File: path, Line: top.Line, Col: top.Column, Msg: "the top level is not a mapping"}
	}
	var err error
	if b.lines, err = yamlLines(path, data); err != nil {
		return nil, err
	}
	for i := 0; i+1 < len(top.Content); i += 2 {
		if top.Content[i].Value == key {
			b.node = top.Content[i+1]
			if i+2 < len(top.Content) {
				b.next = b.lines[top.Content[i+2].Line-1]
			}
		}
	}
	return b, nil
}

// yamlLines is lineOffsets for a YAML file whose nodes' line numbers
// index it. The YAML reader also breaks lines at a carriage return alone
// and at U+0085, U+2028 and U+2029, where lineOffsets does not: a file
// with one is refused (left as it is, and named), so that the two never
// count lines differently.
func yamlLines(path string, data []byte) ([]int, error) {
	for i := 0; i < len(data); i++ {
		var what string
		switch {
		case data[i] == '\r' && (i+1 == len(data) || data[i+1] != '\n'):
			what = "a carriage return without a line feed"
		case bytes.HasPrefix(data[i:], []byte("\u0085")):
			what = "a next-line character (U+0085)"
		case bytes.HasPrefix(data[i:], []byte("\u2028")), bytes.HasPrefix(data[i:], []byte("\u2029")):
			what = "a Unicode line or paragraph separator"
		}
		if what != "" {
			line := bytes.Count(data[:i], []byte("\n")) + 1
			return nil, &Error{File: path, Line: line, Msg: what + ", which YAML reads as a line break: init does not rewrite such a file; make the line breaks plain line feeds"}
		}
	}
	return lineOffsets(data), nil
}

// lineOffsets are the offsets at which data's lines start.
func lineOffsets(data []byte) []int {
	out := []int{0}
	for i, c := range data {
		if c == '\n' {
			out = append(out, i+1)
		}
	}
	return out
}

// lineLen is the length of the first line of data, its line break
// included.
func lineLen(data []byte) int {
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		return i + 1
	}
	return len(data)
}

// trimTail is end moved back over the blank and comment-only lines that
// end data[start:end]: they go with what follows.
func trimTail(data []byte, start, end int) int {
	for end > start {
		ls := lineStart(data, end-1)
		t := strings.TrimSpace(string(data[ls:end]))
		if t != "" && !strings.HasPrefix(t, "#") {
			break
		}
		end = ls
	}
	return end
}
