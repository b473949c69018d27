// Package mcpconfig reads and rewrites MCP client configuration files: the
// `mcpServers` block of Claude Code's .mcp.json, Cursor's mcp.json and Claude
// Desktop's config, and the `servers` block of VS Code's .vscode/mcp.json.
//
// A rewrite replaces only the byte ranges of the server entries it changes;
// every other byte of the file (unknown keys, their order, the author's
// formatting) stays as it was. Changed entries are written with the file's
// own indentation unit and line ending. The original entry is kept whole
// under "x-bouncer-upstream", which is both how `bouncer run --config` finds
// the real server and how Undo puts it back.
//
// Files must be strict JSON. JSONC (comments, trailing commas), which VS Code
// tolerates, is refused with the line and column of the first comment or
// comma: rewriting it would either drop the comments or need a second,
// less-tested parser, and a config silently mangled is worse than one the
// user wraps by hand.
package mcpconfig

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// UpstreamKey is the member of a wrapped entry that holds the original entry.
const UpstreamKey = "x-bouncer-upstream"

// Blocks are the top-level keys that hold server entries, in lookup order.
var Blocks = []string{"mcpServers", "servers"}

// Config is one parsed client config file.
type Config struct {
	// Path is the file's name as given.
	Path   string
	data   []byte
	root   *node
	nl     string // the file's line ending
	indent string // the file's indentation unit
}

// Load reads and parses a config file.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &Error{File: path, Msg: err.Error()}
	}
	return Parse(path, data)
}

// Parse parses config text; path is used in messages only. The root must be
// a JSON object with an mcpServers or servers object in it.
func Parse(path string, data []byte) (*Config, error) {
	root, err := parse(path, data)
	if err != nil {
		return nil, err
	}
	c := &Config{Path: path, data: data, root: root, nl: "\n", indent: detectIndent(data)}
	if bytes.Contains(data, []byte("\r\n")) {
		c.nl = "\r\n"
	}
	if root.kind != '{' {
		return nil, c.errAt(root.start, "the top level is not a JSON object")
	}
	found := false
	for _, b := range Blocks {
		blk, dups := c.blockAll(b)
		if len(dups) > 1 {
			return nil, c.errAt(dups[1], fmt.Sprintf("%q appears more than once", b))
		}
		if blk == nil {
			continue
		}
		if blk.kind != '{' {
			return nil, c.errAt(blk.start, fmt.Sprintf("%q is not an object", b))
		}
		seen := map[string]bool{}
		for _, m := range blk.members {
			if seen[m.key] {
				// Clients disagree on which duplicate wins; refuse rather
				// than wrap one and leave the other running unguarded.
				return nil, c.errAt(m.keyStart, fmt.Sprintf("server %q appears more than once in %q", m.key, b))
			}
			seen[m.key] = true
		}
		found = true
	}
	if !found {
		return nil, &Error{File: path, Msg: `no "mcpServers" (Claude Code, Cursor, Claude Desktop) or "servers" (VS Code) object at the top level`}
	}
	return c, nil
}

// Bytes returns the file's text as read.
func (c *Config) Bytes() []byte { return c.data }

func (c *Config) errAt(off int, msg string) *Error {
	line, col := lineCol(c.data, off)
	return &Error{File: c.Path, Line: line, Col: col, Msg: msg}
}

// blockAll returns the block named b and the offsets of every key naming it.
func (c *Config) blockAll(b string) (*node, []int) {
	var n *node
	var offs []int
	for _, m := range c.root.members {
		if m.key == b {
			if n == nil {
				n = m.val
			}
			offs = append(offs, m.keyStart)
		}
	}
	return n, offs
}

// detectIndent returns the leading whitespace of the first indented line,
// which in a formatted file is one level; two spaces when there is none.
func detectIndent(data []byte) string {
	for _, line := range bytes.Split(data, []byte("\n")) {
		i := 0
		for i < len(line) && (line[i] == ' ' || line[i] == '\t') {
			i++
		}
		if i > 0 && i < len(line) && line[i] != '\r' {
			return string(line[:i])
		}
	}
	return "  "
}

// Status says what a rewrite did, or why it left an entry alone.
type Status string

// Statuses of a Change.
const (
	Wrapped        Status = "wrapped"
	AlreadyWrapped Status = "already wrapped"
	Restored       Status = "restored"
	NotWrapped     Status = "not wrapped"
	Skipped        Status = "left alone"
)

// Change is the outcome for one server entry.
type Change struct {
	Block  string // "mcpServers" or "servers"
	Server string
	Status Status
	Reason string // why an entry was left alone; empty otherwise
}

func (ch Change) String() string {
	if ch.Reason == "" {
		return fmt.Sprintf("%s: %s", ch.Server, ch.Status)
	}
	return fmt.Sprintf("%s: %s (%s)", ch.Server, ch.Status, ch.Reason)
}

// WrapOptions control Wrap.
type WrapOptions struct {
	// Servers limits the rewrite to these names; empty means every entry.
	// A name found in no block is an error.
	Servers []string
	// Command is what the wrapped entry launches: "bouncer", or the absolute
	// path of the binary when bouncer is not on PATH.
	Command string
	// ConfigPath is the absolute path written into `--config`; it defaults
	// to the absolute form of Config.Path.
	ConfigPath string
}

type splice struct {
	start, end int
	text       string
}

// entries calls fn for each server entry selected by names, in file order.
func (c *Config) entries(names []string, fn func(block string, m member) error) error {
	want := map[string]bool{}
	for _, n := range names {
		want[n] = false
	}
	for _, b := range Blocks {
		blk, _ := c.blockAll(b)
		if blk == nil {
			continue
		}
		for _, m := range blk.members {
			if len(names) > 0 {
				if _, ok := want[m.key]; !ok {
					continue
				}
				want[m.key] = true
			}
			if err := fn(b, m); err != nil {
				return err
			}
		}
	}
	var missing []string
	for n, found := range want {
		if !found {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return &Error{File: c.Path, Msg: fmt.Sprintf("no server named %s", quoteList(missing))}
	}
	return nil
}

func quoteList(s []string) string {
	q := make([]string, len(s))
	for i, v := range s {
		q[i] = fmt.Sprintf("%q", v)
	}
	return strings.Join(q, ", ")
}

// Wrap returns the config text with each selected stdio entry replaced by
// one that launches `bouncer run --config FILE --server NAME`, and what it
// did to each entry. When nothing changes, the text is the input, unchanged.
func (c *Config) Wrap(opts WrapOptions) ([]byte, []Change, error) {
	cfgPath := opts.ConfigPath
	if cfgPath == "" {
		abs, err := filepath.Abs(c.Path)
		if err != nil {
			return nil, nil, &Error{File: c.Path, Msg: err.Error()}
		}
		cfgPath = abs
	}
	command := opts.Command
	if command == "" {
		command = "bouncer"
	}
	var changes []Change
	var edits []splice
	err := c.entries(opts.Servers, func(block string, m member) error {
		ch := Change{Block: block, Server: m.key}
		e := m.val
		switch reason := c.unwrappable(e); {
		case e.kind == '{' && hasKey(e, UpstreamKey):
			ch.Status = AlreadyWrapped
		case runsBouncer(e):
			// Wrapped by hand with `bouncer run -- COMMAND`: a second
			// proxy in front would only double every check.
			ch.Status, ch.Reason = AlreadyWrapped, "already launches bouncer run"
		case reason != "":
			ch.Status, ch.Reason = Skipped, reason
		default:
			ch.Status = Wrapped
			base := c.lineIndent(m.keyStart)
			edits = append(edits, splice{e.start, e.end, c.wrapped(e, base, command, cfgPath, m.key)})
		}
		changes = append(changes, ch)
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return c.apply(edits), changes, nil
}

// unwrappable says why an entry can't be proxied, or "" when it can.
func (c *Config) unwrappable(e *node) string {
	if e.kind != '{' {
		return "not an object"
	}
	cmd, ok := e.get("command")
	if !ok {
		if _, isURL := e.get("url"); isURL {
			return "remote server (url): bouncer proxies stdio servers only"
		}
		return "no command: bouncer proxies stdio servers only"
	}
	if cmd.kind != '"' || cmd.str == "" {
		return "command is not a non-empty string"
	}
	if args, ok := e.get("args"); ok && !allStrings(args) {
		return "args is not a list of strings"
	}
	if env, ok := e.get("env"); ok && !stringValues(env) {
		return "env is not an object of strings"
	}
	if cwd, ok := e.get("cwd"); ok && cwd.kind != '"' {
		return "cwd is not a string"
	}
	if bytes.Contains(c.data[e.start:e.end], []byte("${")) {
		// Clients expand ${VAR}, ${input:...} and ${workspaceFolder} only
		// in the keys they launch; moved under x-bouncer-upstream they
		// would reach the server literally.
		return "uses ${...} variables the client would no longer expand; wrap it by hand"
	}
	return ""
}

// runsBouncer reports whether an entry already launches `bouncer run`.
func runsBouncer(e *node) bool {
	cmd, ok := e.get("command")
	if !ok || cmd.kind != '"' {
		return false
	}
	base := filepath.Base(cmd.str)
	if base != "bouncer" && base != "bouncer.exe" {
		return false
	}
	args, ok := e.get("args")
	return ok && args.kind == '[' && len(args.elems) > 0 && args.elems[0].kind == '"' && args.elems[0].str == "run"
}

func hasKey(n *node, k string) bool { _, ok := n.get(k); return ok }

func allStrings(n *node) bool {
	if n.kind != '[' {
		return false
	}
	for _, e := range n.elems {
		if e.kind != '"' {
			return false
		}
	}
	return true
}

func stringValues(n *node) bool {
	if n.kind != '{' {
		return false
	}
	for _, m := range n.members {
		if m.val.kind != '"' {
			return false
		}
	}
	return true
}

// wrapped renders the replacement for entry e. A "type" the entry declared
// is kept beside the command, since VS Code and Claude Code read it to pick
// the transport.
func (c *Config) wrapped(e *node, base, command, cfgPath, name string) string {
	in := base + c.indent
	var b strings.Builder
	b.WriteString("{" + c.nl)
	if t, ok := e.get("type"); ok {
		b.WriteString(in + `"type": ` + string(c.data[t.start:t.end]) + "," + c.nl)
	}
	b.WriteString(in + `"command": ` + jsonString(command) + "," + c.nl)
	b.WriteString(in + `"args": [`)
	for i, a := range []string{"run", "--config", cfgPath, "--server", name} {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(jsonString(a))
	}
	b.WriteString("]," + c.nl)
	b.WriteString(in + jsonString(UpstreamKey) + ": ")
	c.render(&b, e, in)
	b.WriteString(c.nl + base + "}")
	return b.String()
}

// Undo returns the config text with each selected wrapped entry replaced by
// its x-bouncer-upstream entry. Entries that were never wrapped are listed
// and left alone.
func (c *Config) Undo(servers []string) ([]byte, []Change, error) {
	var changes []Change
	var edits []splice
	err := c.entries(servers, func(block string, m member) error {
		ch := Change{Block: block, Server: m.key}
		up, ok := m.val.get(UpstreamKey)
		switch {
		case !ok:
			ch.Status = NotWrapped
		case up.kind != '{':
			return c.errAt(up.start, fmt.Sprintf("server %q: %s is not an object; restore it by hand (or from the .bak file)", m.key, UpstreamKey))
		default:
			ch.Status = Restored
			var b strings.Builder
			c.render(&b, up, c.lineIndent(m.keyStart))
			edits = append(edits, splice{m.val.start, m.val.end, b.String()})
		}
		changes = append(changes, ch)
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return c.apply(edits), changes, nil
}

// lineIndent is the whitespace that starts the line holding off, or "" when
// other text comes before off on that line.
func (c *Config) lineIndent(off int) string {
	i := off
	for i > 0 && (c.data[i-1] == ' ' || c.data[i-1] == '\t') {
		i--
	}
	if i == 0 || c.data[i-1] == '\n' {
		return string(c.data[i:off])
	}
	return ""
}

// render writes n in the file's style: one member or element a line,
// indented by the file's unit below base, except that an array of plain
// values stays on one line. Strings, numbers and keys are copied as
// written, escapes included.
func (c *Config) render(b *strings.Builder, n *node, base string) {
	in := base + c.indent
	switch n.kind {
	case '{':
		if len(n.members) == 0 {
			b.WriteString("{}")
			return
		}
		b.WriteString("{")
		for i, m := range n.members {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString(c.nl + in)
			b.Write(c.data[m.keyStart:m.keyEnd])
			b.WriteString(": ")
			c.render(b, m.val, in)
		}
		b.WriteString(c.nl + base + "}")
	case '[':
		if len(n.elems) == 0 {
			b.WriteString("[]")
			return
		}
		if scalars(n.elems) {
			// Argument lists read best on one line, as clients' docs write them.
			b.WriteString("[")
			for i, e := range n.elems {
				if i > 0 {
					b.WriteString(", ")
				}
				b.Write(c.data[e.start:e.end])
			}
			b.WriteString("]")
			return
		}
		b.WriteString("[")
		for i, e := range n.elems {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString(c.nl + in)
			c.render(b, e, in)
		}
		b.WriteString(c.nl + base + "]")
	default:
		b.Write(c.data[n.start:n.end])
	}
}

func scalars(ns []*node) bool {
	for _, n := range ns {
		if n.kind == '{' || n.kind == '[' {
			return false
		}
	}
	return true
}

func (c *Config) apply(edits []splice) []byte {
	if len(edits) == 0 {
		return c.data
	}
	sort.Slice(edits, func(i, j int) bool { return edits[i].start < edits[j].start })
	var out bytes.Buffer
	last := 0
	for _, e := range edits {
		out.Write(c.data[last:e.start])
		out.WriteString(e.text)
		last = e.end
	}
	out.Write(c.data[last:])
	return out.Bytes()
}

func jsonString(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return strings.TrimSuffix(b.String(), "\n")
}

// Entry is the original server entry `bouncer run --config` starts.
type Entry struct {
	Command string
	Args    []string
	// Env is the entry's env, to be laid over the proxy's own environment
	// as the client would have done; nil when the entry has none.
	Env map[string]string
	// Cwd is absolute (a relative one is resolved against the config
	// file's directory), or "" when the entry names none.
	Cwd string
}

// Upstream reads file and returns the x-bouncer-upstream entry of server.
// Errors name the file (and line and column where there is one): no such
// server, a server that was never wrapped, or an entry of the wrong shape.
func Upstream(file, server string) (Entry, error) {
	c, err := Load(file)
	if err != nil {
		return Entry{}, err
	}
	var found []member
	for _, b := range Blocks {
		if blk, _ := c.blockAll(b); blk != nil {
			for _, m := range blk.members {
				if m.key == server {
					found = append(found, m)
				}
			}
		}
	}
	switch len(found) {
	case 0:
		return Entry{}, &Error{File: file, Msg: fmt.Sprintf("no server named %q", server)}
	case 1:
	default:
		return Entry{}, c.errAt(found[1].keyStart, fmt.Sprintf("server %q is in both mcpServers and servers; rename one", server))
	}
	m := found[0]
	up, ok := m.val.get(UpstreamKey)
	if !ok {
		return Entry{}, c.errAt(m.keyStart, fmt.Sprintf("server %q was never wrapped (no %s); run bouncer init first", server, UpstreamKey))
	}
	if up.kind != '{' {
		return Entry{}, c.errAt(up.start, fmt.Sprintf("server %q: %s is not an object", server, UpstreamKey))
	}
	var e Entry
	cmd, ok := up.get("command")
	if !ok || cmd.kind != '"' || cmd.str == "" {
		at := up.start
		if ok {
			at = cmd.start
		}
		return Entry{}, c.errAt(at, fmt.Sprintf("server %q: %s.command must be a non-empty string", server, UpstreamKey))
	}
	e.Command = cmd.str
	if args, ok := up.get("args"); ok {
		if !allStrings(args) {
			return Entry{}, c.errAt(args.start, fmt.Sprintf("server %q: %s.args must be a list of strings", server, UpstreamKey))
		}
		e.Args = make([]string, 0, len(args.elems))
		for _, a := range args.elems {
			e.Args = append(e.Args, a.str)
		}
	}
	if env, ok := up.get("env"); ok && env.kind != 'n' {
		if !stringValues(env) {
			return Entry{}, c.errAt(env.start, fmt.Sprintf("server %q: %s.env must be an object of strings", server, UpstreamKey))
		}
		e.Env = make(map[string]string, len(env.members))
		for _, kv := range env.members {
			e.Env[kv.key] = kv.val.str
		}
	}
	if cwd, ok := up.get("cwd"); ok && cwd.kind != 'n' {
		if cwd.kind != '"' {
			return Entry{}, c.errAt(cwd.start, fmt.Sprintf("server %q: %s.cwd must be a string", server, UpstreamKey))
		}
		if cwd.str != "" {
			e.Cwd = cwd.str
			if !filepath.IsAbs(e.Cwd) {
				abs, err := filepath.Abs(filepath.Join(filepath.Dir(file), e.Cwd))
				if err != nil {
					return Entry{}, &Error{File: file, Msg: fmt.Sprintf("server %q: cwd: %v", server, err)}
				}
				e.Cwd = abs
			}
		}
	}
	return e, nil
}
