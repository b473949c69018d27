// Package mcpconfig reads and rewrites MCP client configuration files: the
// `mcpServers` block of Claude Code's .mcp.json and ~/.claude.json (and the
// `projects[DIR].mcpServers` blocks where `claude mcp add` keeps a
// project's servers), Cursor's mcp.json, Claude Desktop's config and Gemini
// CLI's settings.json, and the `servers` block of VS Code's mcp.json.
//
// Files may hold comments and trailing commas (JSONC, which VS Code, Cursor
// and Gemini CLI accept). A rewrite replaces only the byte ranges of the
// server entries it changes; every other byte of the file (comments,
// unknown keys, their order, the author's formatting) stays as it was. The
// original entry is kept under "x-bouncer-upstream" byte for byte, only
// indented one level deeper, which is both how `bouncer run --config` finds
// the real server and how Undo puts it back exactly.
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
	Path string
	// Client is the client that reads the file, told by its name and place
	// (ClientOf); it decides how ${...} variables are expanded.
	Client Client
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

// Parse parses config text; path is used in messages and to tell the
// client. The root must be a JSON object; a server named twice in one block,
// or a block named twice, is refused because clients disagree on which one
// wins and wrapping one would leave the other running unguarded.
func Parse(path string, data []byte) (*Config, error) {
	root, err := parse(path, data)
	if err != nil {
		return nil, err
	}
	c := &Config{Path: path, Client: ClientOf(path), data: data, root: root, nl: "\n", indent: detectIndent(data)}
	if bytes.Contains(data, []byte("\r\n")) {
		c.nl = "\r\n"
	}
	if root.kind != '{' {
		return nil, c.errAt(root.start, "the top level is not a JSON object")
	}
	for _, b := range Blocks {
		if _, err := c.checkedBlock(c.root, b, b, "the top level"); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// Bytes returns the file's text as read.
func (c *Config) Bytes() []byte { return c.data }

func (c *Config) errAt(off int, msg string) *Error {
	line, col := lineCol(c.data, off)
	return &Error{File: c.Path, Line: line, Col: col, Msg: msg}
}

// checkedBlock returns the object member key of parent (nil when absent),
// refusing a key that appears twice in parent, a value that is not an
// object, and a key repeated anywhere in it: a server named twice, or a
// key repeated in an entry (checkUnique). label names it in messages.
func (c *Config) checkedBlock(parent *node, key, label, parentLabel string) (*node, error) {
	n, err := c.objectMember(parent, key, label, parentLabel)
	if n == nil || err != nil {
		return nil, err
	}
	if err := checkUnique(c.Path, c.data, n, label); err != nil {
		return nil, err
	}
	return n, nil
}

// block is one object of server entries and how messages name it.
type block struct {
	label string
	n     *node
}

// blocks returns the server blocks: the top-level ones, and with project
// set, projects[project].mcpServers (Claude Code's local scope in
// ~/.claude.json). Only that one project's block is read: the servers of
// other projects are not this project's business.
func (c *Config) blocks(project string) ([]block, error) {
	var out []block
	for _, b := range Blocks {
		n, err := c.checkedBlock(c.root, b, b, "the top level")
		if err != nil {
			return nil, err
		}
		if n != nil {
			out = append(out, block{b, n})
		}
	}
	if project == "" {
		return out, nil
	}
	projects, err := c.objectMember(c.root, "projects", "projects", "the top level")
	if err != nil || projects == nil {
		return out, err
	}
	p, err := c.objectMember(projects, project, fmt.Sprintf("projects[%s]", project), "projects")
	if err != nil || p == nil {
		return out, err
	}
	label := fmt.Sprintf("projects[%s].mcpServers", project)
	n, err := c.checkedBlock(p, "mcpServers", label, fmt.Sprintf("projects[%s]", project))
	if err != nil {
		return nil, err
	}
	if n != nil {
		out = append(out, block{label, n})
	}
	return out, nil
}

// ProjectServers are the servers of one projects[DIR] entry of Claude
// Code's ~/.claude.json.
type ProjectServers struct {
	// Dir is the project's directory, the key Claude Code wrote.
	Dir string
	// Unwrapped and Wrapped name its servers, in file order.
	Unwrapped, Wrapped []string
}

// OtherProjects lists the projects of ~/.claude.json other than project
// that have servers (Claude Code's local scope: it starts them only in
// that directory). It reads what it can and passes over what it can't: a
// wrap or undo of project reads those blocks strictly, this only reports.
func (c *Config) OtherProjects(project string) []ProjectServers {
	var out []ProjectServers
	projects, ok := c.root.get("projects")
	if !ok || projects.kind != '{' {
		return nil
	}
	for _, p := range projects.members {
		if p.val.kind != '{' || (project != "" && samePath(p.key, project)) {
			continue
		}
		servers, ok := p.val.get("mcpServers")
		if !ok || servers.kind != '{' || len(servers.members) == 0 {
			continue
		}
		ps := ProjectServers{Dir: p.key}
		for _, m := range servers.members {
			if m.val.kind == '{' && (hasKey(m.val, UpstreamKey) || runsBouncer(m.val)) {
				ps.Wrapped = append(ps.Wrapped, m.key)
			} else {
				ps.Unwrapped = append(ps.Unwrapped, m.key)
			}
		}
		out = append(out, ps)
	}
	return out
}

// objectMember returns parent's member key when it is an object, nil when it
// is absent, and an error when it appears twice in parent (parentLabel
// names parent) or is something else.
func (c *Config) objectMember(parent *node, key, label, parentLabel string) (*node, error) {
	var n *member
	for i := range parent.members {
		m := &parent.members[i]
		if m.key == key {
			if n != nil {
				return nil, dupError(c.Path, c.data, parentLabel, n, m)
			}
			n = m
		}
	}
	if n == nil {
		return nil, nil
	}
	if n.val.kind != '{' {
		return nil, c.errAt(n.val.start, fmt.Sprintf("%q is not an object", label))
	}
	return n.val, nil
}

// HasServers reports whether the file has any server block (for project,
// counting projects[project].mcpServers), so a search of a user's files
// can pass over settings files that configure no server.
func (c *Config) HasServers(project string) bool {
	bl, err := c.blocks(project)
	return err == nil && len(bl) > 0
}

func (c *Config) noBlocks(project string) error {
	msg := `no "mcpServers" (Claude Code, Cursor, Claude Desktop, Gemini CLI) or "servers" (VS Code) object at the top level`
	if project != "" {
		msg = fmt.Sprintf(`no "mcpServers" (Claude Code, Cursor, Claude Desktop, Gemini CLI) or "servers" (VS Code) object at the top level, and none in projects[%s]`, project)
	}
	return &Error{File: c.Path, Msg: msg}
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
	// CommandUpdated is a wrapped entry whose command init replaced
	// (WrapOptions.Relaunch): it launched a bouncer that is gone, that the
	// client can't find, or another one than init's.
	CommandUpdated Status = "command updated"
)

// Change is the outcome for one server entry.
type Change struct {
	Block  string // "mcpServers", "servers" or "projects[DIR].mcpServers"
	Server string
	Status Status
	// Reason says why an entry was left alone, or for CommandUpdated what
	// the entry launched before; empty otherwise.
	Reason string
	// Remote is true for an entry with a url (a remote server).
	Remote bool
	// Text is the new entry, for a Wrapped or Restored change.
	Text string
}

func (ch Change) String() string {
	if ch.Reason == "" {
		return fmt.Sprintf("%s: %s", ch.Server, ch.Status)
	}
	return fmt.Sprintf("%s: %s (%s)", ch.Server, ch.Status, ch.Reason)
}

// RemoteNotYet is the reason a url entry is left alone while WrapOptions.Remote
// is off.
const RemoteNotYet = "remote servers need bouncer run --url (coming)"

// WrapOptions control Wrap.
type WrapOptions struct {
	// Servers limits the rewrite to these names; empty means every entry.
	// A name found in no block is an error.
	Servers []string
	// Project also selects projects[Project].mcpServers (Claude Code's
	// ~/.claude.json); the wrapped entries there pass --project Project.
	Project string
	// Command is what the wrapped entry launches: "bouncer", or the absolute
	// path of the binary where the client's lookup of that name would not
	// find it (init decides).
	Command string
	// Relaunch, when set, is asked about each entry that is wrapped already
	// and launches something else than Command: true replaces that command
	// with Command (CommandUpdated), and nothing else of the entry. nil
	// leaves every wrapped entry as it is.
	Relaunch func(current string) bool
	// ConfigArg is what the wrapped entry passes as --config: a path
	// relative to the project for a file a team commits, absolute for a
	// user's own file. It defaults to the absolute form of Config.Path.
	ConfigArg string
	// ExtraArgs follow `--server NAME` in the wrapped entry (--policy FILE).
	ExtraArgs []string
	// Remote wraps entries with a url as remote upstreams. Off, they are
	// left alone with RemoteNotYet as the reason.
	Remote bool
	// Workspace is the directory a project file belongs to (what VS Code
	// and Cursor call ${workspaceFolder}); "" for a user's own file, where
	// that variable has no one value.
	Workspace string
}

type splice struct {
	start, end int
	text       string
}

// entries calls fn for each server entry selected by names, in file order.
func (c *Config) entries(project string, names []string, fn func(block string, m member) error) error {
	bl, err := c.blocks(project)
	if err != nil {
		return err
	}
	if len(bl) == 0 {
		return c.noBlocks(project)
	}
	want := map[string]bool{}
	for _, n := range names {
		want[n] = false
	}
	for _, b := range bl {
		for _, m := range b.n.members {
			if len(names) > 0 {
				if _, ok := want[m.key]; !ok {
					continue
				}
				want[m.key] = true
			}
			if err := fn(b.label, m); err != nil {
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

// Wrap returns the config text with each selected entry replaced by one
// that launches `bouncer run --config FILE --server NAME`, and what it did
// to each entry. When nothing changes, the text is the input, unchanged.
func (c *Config) Wrap(opts WrapOptions) ([]byte, []Change, error) {
	cfgArg := opts.ConfigArg
	if cfgArg == "" {
		abs, err := filepath.Abs(c.Path)
		if err != nil {
			return nil, nil, &Error{File: c.Path, Msg: err.Error()}
		}
		cfgArg = abs
	}
	command := opts.Command
	if command == "" {
		command = "bouncer"
	}
	var changes []Change
	var edits []splice
	err := c.entries(opts.Project, opts.Servers, func(block string, m member) error {
		ch := Change{Block: block, Server: m.key}
		e := m.val
		remote := isRemote(e)
		ch.Remote = remote
		switch reason := c.unwrappable(e, opts); {
		case e.kind == '{' && hasKey(e, UpstreamKey):
			ch.Status = AlreadyWrapped
			if cmd, ok := e.get("command"); ok && cmd.kind == '"' && cmd.str != command && opts.Relaunch != nil && opts.Relaunch(cmd.str) {
				ch.Status, ch.Reason = CommandUpdated, "was "+jsonString(cmd.str)
				ch.Text = jsonString(command)
				edits = append(edits, splice{cmd.start, cmd.end, ch.Text})
			}
		case runsBouncer(e):
			// Wrapped by hand with `bouncer run -- COMMAND`: a second
			// proxy in front would only double every check.
			ch.Status, ch.Reason = AlreadyWrapped, "already launches bouncer run"
		case reason != "":
			ch.Status, ch.Reason = Skipped, reason
		default:
			ch.Status = Wrapped
			args := []string{"run", "--config", cfgArg}
			if strings.HasPrefix(block, "projects[") {
				args = append(args, "--project", opts.Project)
			}
			args = append(args, "--server", m.key)
			args = append(args, opts.ExtraArgs...)
			ch.Text = c.wrapped(e, c.lineIndent(m.keyStart), command, args, remote)
			edits = append(edits, splice{e.start, e.end, ch.Text})
		}
		changes = append(changes, ch)
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return c.apply(edits), changes, nil
}

// isRemote reports whether an entry names a remote server (url, or Gemini
// CLI's httpUrl) instead of a command.
func isRemote(e *node) bool {
	if e.kind != '{' || hasKey(e, "command") {
		return false
	}
	return hasKey(e, "url") || hasKey(e, "httpUrl")
}

// unwrappable says why an entry can't be proxied, or "" when it can.
func (c *Config) unwrappable(e *node, opts WrapOptions) string {
	if e.kind != '{' {
		return "not an object"
	}
	if hasKey(e, UpstreamKey) {
		return ""
	}
	cmd, ok := e.get("command")
	if !ok {
		if !isRemote(e) {
			return "no command or url"
		}
		if !opts.Remote {
			return RemoteNotYet
		}
		for _, k := range []string{"url", "httpUrl"} {
			if u, ok := e.get(k); ok && (u.kind != '"' || u.str == "") {
				return k + " is not a non-empty string"
			}
		}
		if h, ok := e.get("headers"); ok && !stringValues(h) {
			return "headers is not an object of strings"
		}
		return c.variablesProblem(e, opts.Workspace)
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
	return c.variablesProblem(e, opts.Workspace)
}

// variablesProblem says which ${...} of the entry's launch keys bouncer run
// could not expand the way the client does, or "" when it can expand all.
func (c *Config) variablesProblem(e *node, workspace string) string {
	x := Expander{Client: c.Client, Workspace: workspace, Getenv: func(string) (string, bool) { return "", true }}
	var problem string
	eachLaunchString(e, func(where, s string, at *node) bool {
		if _, err := x.Expand(s); err != nil {
			problem = fmt.Sprintf("%s: %v", where, err)
			return false
		}
		return true
	})
	return problem
}

// launchKeys are the members the client reads to start or reach the server.
// They move under x-bouncer-upstream; every other member (type, disabled,
// timeout, trust, includeTools, envFile, ...) is the client's own business
// and stays on the wrapped entry too. envFile stays because the client
// loads it into bouncer's environment, which the upstream inherits.
var launchKeys = map[string]bool{"command": true, "args": true, "env": true, "cwd": true, "url": true, "httpUrl": true, "headers": true}

// eachLaunchString calls fn with every string of an entry's launch keys
// (command, args, env values, cwd, url, httpUrl, header values), saying
// where it is, until fn returns false.
func eachLaunchString(e *node, fn func(where, s string, at *node) bool) {
	for _, m := range e.members {
		switch {
		case !launchKeys[m.key]:
		case m.val.kind == '"':
			if !fn(m.key, m.val.str, m.val) {
				return
			}
		case m.val.kind == '[':
			for i, a := range m.val.elems {
				if a.kind == '"' && !fn(fmt.Sprintf("%s[%d]", m.key, i), a.str, a) {
					return
				}
			}
		case m.val.kind == '{':
			for _, kv := range m.val.members {
				if kv.val.kind == '"' && !fn(m.key+"."+kv.key, kv.val.str, kv.val) {
					return
				}
			}
		}
	}
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

// wrapped renders the replacement for entry e: the client's own members as
// written, then command and args, then the original entry under
// x-bouncer-upstream. A remote entry's "type" (http, sse) becomes "stdio",
// since the client now starts a process.
func (c *Config) wrapped(e *node, base, command string, args []string, remote bool) string {
	in := base + c.indent
	var b strings.Builder
	b.WriteString("{" + c.nl)
	for _, m := range e.members {
		switch {
		case launchKeys[m.key] || m.key == UpstreamKey:
			continue
		case m.key == "type" && remote:
			b.WriteString(in + `"type": "stdio",` + c.nl)
		default:
			b.WriteString(in)
			b.Write(c.data[m.keyStart:m.keyEnd])
			b.WriteString(": ")
			b.Write(c.data[m.val.start:m.val.end])
			b.WriteString("," + c.nl)
		}
	}
	b.WriteString(in + `"command": ` + jsonString(command) + "," + c.nl)
	b.WriteString(in + `"args": [`)
	for i, a := range args {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(jsonString(a))
	}
	b.WriteString("]," + c.nl)
	b.WriteString(in + jsonString(UpstreamKey) + ": ")
	b.WriteString(reindent(string(c.data[e.start:e.end]), c.indent))
	b.WriteString(c.nl + base + "}")
	return b.String()
}

// reindent adds add after every line break of text, except before an empty
// line, so the entry sits one level deeper. JSON strings hold no raw line
// breaks, so only layout (and comments) move; unindent undoes it exactly.
func reindent(text, add string) string {
	var b strings.Builder
	for i := 0; i < len(text); i++ {
		b.WriteByte(text[i])
		if text[i] == '\n' && i+1 < len(text) && text[i+1] != '\n' && text[i+1] != '\r' {
			b.WriteString(add)
		}
	}
	return b.String()
}

// unindent removes add after every line break of text where it stands.
func unindent(text, add string) string {
	if add == "" {
		return text
	}
	var b strings.Builder
	for i := 0; i < len(text); i++ {
		b.WriteByte(text[i])
		if text[i] == '\n' && strings.HasPrefix(text[i+1:], add) {
			i += len(add)
		}
	}
	return b.String()
}

// Undo returns the config text with each selected wrapped entry replaced by
// its x-bouncer-upstream entry, as it was written before wrapping. Entries
// that were never wrapped are listed and left alone.
func (c *Config) Undo(project string, servers []string) ([]byte, []Change, error) {
	var changes []Change
	var edits []splice
	err := c.entries(project, servers, func(block string, m member) error {
		ch := Change{Block: block, Server: m.key}
		up, ok := m.val.get(UpstreamKey)
		switch {
		case !ok:
			ch.Status = NotWrapped
		case up.kind != '{':
			return c.errAt(up.start, fmt.Sprintf("server %q: %s is not an object; restore it by hand (or from the .bak file)", m.key, UpstreamKey))
		default:
			ch.Status = Restored
			ch.Remote = isRemote(up)
			// Wrap indented the entry by the difference between the
			// wrapped entry's line and its x-bouncer-upstream line.
			base := c.lineIndent(m.keyStart)
			add := strings.TrimPrefix(c.lineIndent(c.memberKeyStart(m.val, UpstreamKey)), base)
			ch.Text = unindent(string(c.data[up.start:up.end]), add)
			edits = append(edits, splice{m.val.start, m.val.end, ch.Text})
		}
		changes = append(changes, ch)
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return c.apply(edits), changes, nil
}

func (c *Config) memberKeyStart(n *node, key string) int {
	for _, m := range n.members {
		if m.key == key {
			return m.keyStart
		}
	}
	return n.start
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
