// Package mcpconfig reads and rewrites MCP client configuration files: the
// JSON (and JSONC) of Claude Code, Cursor, VS Code, Gemini CLI, Claude
// Desktop, Windsurf, Zed, Cline, Roo Code, Kiro, LM Studio and Amazon Q
// Developer, Codex CLI's TOML (codex.go) and Continue's YAML (continue.go).
//
// It is the model of the clients: which clients there are, which files
// each reads and where (clientFiles, Candidates, Discover, ClientOf), the
// shape of a server entry, how an entry is wrapped to launch `bouncer run`
// and unwrapped again, where the original entry is kept (under
// x-bouncer-upstream in the file, or, for a client that may refuse or drop
// a key it doesn't know, in the state directory: Kept), how `bouncer run
// --config` finds the real server from it (Resolve), and each client's own
// ${...} rule (Expander). Writing a client's file keeps its mode, owner
// and symbolic link (Replace).
//
// A rewrite replaces only the byte ranges of the server entries it
// changes; every other byte of the file (comments, unknown keys, their
// order, the author's formatting) stays as it was. JSON files are read by
// internal/jsonc. The original entry is kept byte for byte, which is how
// Undo puts it back exactly. The prompt hook init installs beside a config
// is internal/hooks'.
package mcpconfig

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/bouncer-mcp/bouncer/internal/jsonc"
	"github.com/bouncer-mcp/bouncer/internal/statefile"
)

// Error is a problem with a config file, at a place in it where it has
// one: jsonc's, whose reader finds most of them.
type Error = jsonc.Error

// UpstreamKey is the member of a wrapped entry that holds the original entry.
const UpstreamKey = "x-bouncer-upstream"

// Config is one parsed client config file.
type Config struct {
	// Path is the file's name as given.
	Path string
	// Client is the client that reads the file, told by its name and place
	// (ClientOf); it decides how ${...} variables are expanded.
	Client Client
	data   []byte
	root   *jsonc.Node
	nl     string // the file's line ending
	indent string // the file's indentation unit
	// kept are the original entries kept for a KeepsOriginal client's file in
	// the state directory (Kept), by block and server; keptIn names
	// that state file.
	kept   map[string]map[string]keptEntry
	keptIn string
	// regions is a config whose entries init rewrites whole (Codex's
	// TOML, regions.go); nil for the JSON files root holds.
	regions *regionDoc
}

// maxFileSize bounds a config file read: a client's config can hold its
// history too (~/.claude.json), so the bound is generous.
const maxFileSize = 256 << 20

// Load reads and parses a config file (a regular file: a FIFO is refused,
// never waited on). A wrapped entry of a client that keeps its originals
// in the state directory (Client.KeepsOriginal) finds its original in k;
// the zero Kept finds none.
func Load(path string, k Kept) (*Config, error) {
	data, err := statefile.ReadFile(path, maxFileSize)
	if err != nil {
		return nil, &Error{File: path, Msg: err.Error()}
	}
	c, err := Parse(path, data)
	if err != nil {
		return nil, err
	}
	if c.Client.KeepsOriginal() {
		c.keptIn = k.Path()
		if c.kept, err = k.of(path); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// Parse parses config text; path is used in messages and to tell the
// client. The root must be a JSON object; a server named twice in one block,
// or a block named twice, is refused because clients disagree on which one
// wins and wrapping one would leave the other running unguarded.
func Parse(path string, data []byte) (*Config, error) {
	if f := ClientOf(path).regionFormat(); f != nil {
		d, err := f.parse(path, data)
		if err != nil {
			return nil, err
		}
		return &Config{Path: path, Client: ClientOf(path), data: data, regions: d}, nil
	}
	root, err := jsonc.Parse(path, data)
	if err != nil {
		return nil, err
	}
	c := &Config{Path: path, Client: ClientOf(path), data: data, root: root, nl: jsonc.Newline(data), indent: jsonc.Indent(data)}
	if root.Kind != jsonc.Object {
		return nil, c.errAt(root.Start, "the top level is not a JSON object")
	}
	for _, b := range c.Client.blocks() {
		if _, err := c.checkedBlock(c.root, b, b, "the top level"); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// Bytes returns the file's text as read.
func (c *Config) Bytes() []byte { return c.data }

func (c *Config) errAt(off int, msg string) *Error {
	return jsonc.ErrorAt(c.Path, c.data, off, msg)
}

// checkedBlock returns the object member key of parent (nil when absent),
// refusing a key that appears twice in parent, a value that is not an
// object, and a key repeated anywhere in it: a server named twice, or a
// key repeated in an entry (jsonc.CheckUnique). label names it in messages.
func (c *Config) checkedBlock(parent *jsonc.Node, key, label, parentLabel string) (*jsonc.Node, error) {
	n, err := c.objectMember(parent, key, label, parentLabel)
	if n == nil || err != nil {
		return nil, err
	}
	if err := jsonc.CheckUnique(c.Path, c.data, n, label); err != nil {
		return nil, err
	}
	return n, nil
}

// block is one object of server entries and how messages name it.
type block struct {
	label string
	n     *jsonc.Node
}

// blocks returns the server blocks: the top-level ones, and with project
// set, projects[project].mcpServers (Claude Code's local scope in
// ~/.claude.json). Only that one project's block is read: the servers of
// other projects are not this project's business.
func (c *Config) blocks(project string) ([]block, error) {
	var out []block
	for _, b := range c.Client.blocks() {
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
	if c.regions != nil {
		return nil
	}
	var out []ProjectServers
	projects, ok := c.root.Get("projects")
	if !ok || projects.Kind != jsonc.Object {
		return nil
	}
	for _, p := range projects.Members {
		if p.Val.Kind != jsonc.Object || (project != "" && SamePath(p.Key, project)) {
			continue
		}
		servers, ok := p.Val.Get("mcpServers")
		if !ok || servers.Kind != jsonc.Object || len(servers.Members) == 0 {
			continue
		}
		ps := ProjectServers{Dir: p.Key}
		for _, m := range servers.Members {
			if m.Val.Kind == jsonc.Object && (m.Val.Has(UpstreamKey) || runsBouncer(m.Val)) {
				ps.Wrapped = append(ps.Wrapped, m.Key)
			} else {
				ps.Unwrapped = append(ps.Unwrapped, m.Key)
			}
		}
		out = append(out, ps)
	}
	return out
}

// objectMember returns parent's member key when it is an object, nil when it
// is absent, and an error when it appears twice in parent (parentLabel
// names parent) or is something else.
func (c *Config) objectMember(parent *jsonc.Node, key, label, parentLabel string) (*jsonc.Node, error) {
	var n *jsonc.Member
	for i := range parent.Members {
		m := &parent.Members[i]
		if m.Key == key {
			if n != nil {
				return nil, jsonc.Repeated(c.Path, c.data, parentLabel, n, m)
			}
			n = m
		}
	}
	if n == nil {
		return nil, nil
	}
	if n.Val.Kind != jsonc.Object {
		return nil, c.errAt(n.Val.Start, fmt.Sprintf("%q is not an object", label))
	}
	return n.Val, nil
}

// HasServers reports whether the file has any server block (for project,
// counting projects[project].mcpServers), so a search of a user's files
// can pass over settings files that configure no server.
func (c *Config) HasServers(project string) bool {
	if c.regions != nil {
		return len(c.regions.servers) > 0
	}
	bl, err := c.blocks(project)
	return err == nil && len(bl) > 0
}

func (c *Config) noBlocks(project string) error {
	var want string
	if c.Client == UnknownClient {
		want = `no "mcpServers" (Claude Code, Cursor, Claude Desktop, Gemini CLI and most others) or "servers" (VS Code) object at the top level`
	} else {
		want = fmt.Sprintf("no %s object at the top level, where %s keeps its servers", quoteList(c.Client.blocks()[:1]), c.Client)
		if c.Client == VSCode {
			want = `no "servers" object at the top level, where VS Code keeps its servers`
		}
	}
	if project != "" {
		want += fmt.Sprintf(", and none in projects[%s]", project)
	}
	return &Error{File: c.Path, Msg: want}
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
	// Kept is, in a KeepsOriginal client's file, the original entry as written:
	// for a Wrapped change, to be kept in the state directory (Kept.Record)
	// since the wrapped entry can't hold it; for a Restored one, what was
	// kept there and is to be forgotten.
	Kept string
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

// entries calls fn for each server entry selected by names, in file order.
func (c *Config) entries(project string, names []string, fn func(block string, m jsonc.Member) error) error {
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
		for _, m := range b.n.Members {
			if len(names) > 0 {
				if _, ok := want[m.Key]; !ok {
					continue
				}
				want[m.Key] = true
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
	if c.regions != nil {
		return c.wrapRegions(opts, cfgArg, command)
	}
	var changes []Change
	var edits []jsonc.Splice
	err := c.entries(opts.Project, opts.Servers, func(block string, m jsonc.Member) error {
		ch := Change{Block: block, Server: m.Key}
		e := m.Val
		remote := isRemote(e)
		ch.Remote = remote
		orig, err := c.originalOf(block, m)
		if err != nil {
			return err
		}
		switch reason := c.unwrappable(e, opts); {
		case orig != nil:
			ch.Status = AlreadyWrapped
			if cmd, ok := e.Get("command"); ok && cmd.Kind == jsonc.String && cmd.Str != command && opts.Relaunch != nil && opts.Relaunch(cmd.Str) {
				ch.Status, ch.Reason = CommandUpdated, "was "+jsonc.Quote(cmd.Str)
				ch.Text = jsonc.Quote(command)
				edits = append(edits, jsonc.Splice{Start: cmd.Start, End: cmd.End, Text: ch.Text})
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
			args = append(args, "--server", m.Key)
			args = append(args, opts.ExtraArgs...)
			if c.Client.KeepsOriginal() {
				ch.Kept = string(c.data[e.Start:e.End])
			}
			ch.Text = c.wrapped(e, c.lineIndent(m.KeyStart), command, args, remote)
			edits = append(edits, jsonc.Splice{Start: e.Start, End: e.End, Text: ch.Text})
		}
		changes = append(changes, ch)
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return c.apply(edits), changes, nil
}

// urlKeys are the members that name a remote server's address: url,
// Gemini CLI's httpUrl, Windsurf's serverUrl.
var urlKeys = []string{"url", "httpUrl", "serverUrl"}

// isRemote reports whether an entry names a remote server (urlKeys)
// instead of a command.
func isRemote(e *jsonc.Node) bool {
	if e.Kind != jsonc.Object || e.Has("command") {
		return false
	}
	for _, k := range urlKeys {
		if e.Has(k) {
			return true
		}
	}
	return false
}

// unwrappable says why an entry can't be proxied, or "" when it can.
func (c *Config) unwrappable(e *jsonc.Node, opts WrapOptions) string {
	if e.Kind != jsonc.Object {
		return "not an object"
	}
	if e.Has(UpstreamKey) {
		return ""
	}
	cmd, ok := e.Get("command")
	if !ok {
		if !isRemote(e) {
			return "no command or url"
		}
		if !opts.Remote {
			return RemoteNotYet
		}
		for _, k := range urlKeys {
			if u, ok := e.Get(k); ok && (u.Kind != jsonc.String || u.Str == "") {
				return k + " is not a non-empty string"
			}
		}
		if h, ok := e.Get("headers"); ok && !stringValues(h) {
			return "headers is not an object of strings"
		}
		return c.variablesProblem(e, opts.Workspace)
	}
	if cmd.Kind != jsonc.String || cmd.Str == "" {
		return "command is not a non-empty string"
	}
	if args, ok := e.Get("args"); ok && !allStrings(args) {
		return "args is not a list of strings"
	}
	if env, ok := e.Get("env"); ok && !stringValues(env) {
		return "env is not an object of strings"
	}
	if cwd, ok := e.Get("cwd"); ok && cwd.Kind != jsonc.String {
		return "cwd is not a string"
	}
	return c.variablesProblem(e, opts.Workspace)
}

// variablesProblem says which ${...} of the entry's launch keys bouncer run
// could not expand the way the client does, or "" when it can expand all.
// It asks only whether each variable has a rule: the values are those of
// the environment the client will give bouncer run, not init's, so every
// variable counts as set and ${userHome} as known (Resolve reads it then).
func (c *Config) variablesProblem(e *jsonc.Node, workspace string) string {
	x := Expander{Client: c.Client, Workspace: workspace, Home: string(filepath.Separator), Getenv: func(string) (string, bool) { return "", true }}
	var problem string
	eachLaunchString(e, func(where, s string, at *jsonc.Node) bool {
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
var launchKeys = map[string]bool{"command": true, "args": true, "env": true, "cwd": true, "url": true, "httpUrl": true, "serverUrl": true, "headers": true}

// eachLaunchString calls fn with every string of an entry's launch keys
// (command, args, env values, cwd, urlKeys, header values), saying
// where it is, until fn returns false.
func eachLaunchString(e *jsonc.Node, fn func(where, s string, at *jsonc.Node) bool) {
	for _, m := range e.Members {
		switch {
		case !launchKeys[m.Key]:
		case m.Val.Kind == jsonc.String:
			if !fn(m.Key, m.Val.Str, m.Val) {
				return
			}
		case m.Val.Kind == jsonc.Array:
			for i, a := range m.Val.Elems {
				if a.Kind == jsonc.String && !fn(fmt.Sprintf("%s[%d]", m.Key, i), a.Str, a) {
					return
				}
			}
		case m.Val.Kind == jsonc.Object:
			for _, kv := range m.Val.Members {
				if kv.Val.Kind == jsonc.String && !fn(m.Key+"."+kv.Key, kv.Val.Str, kv.Val) {
					return
				}
			}
		}
	}
}

// runsBouncer reports whether an entry already launches `bouncer run`.
func runsBouncer(e *jsonc.Node) bool {
	cmd, ok := e.Get("command")
	if !ok || cmd.Kind != jsonc.String {
		return false
	}
	base := filepath.Base(cmd.Str)
	if base != "bouncer" && base != "bouncer.exe" {
		return false
	}
	args, ok := e.Get("args")
	return ok && args.Kind == jsonc.Array && len(args.Elems) > 0 && args.Elems[0].Kind == jsonc.String && args.Elems[0].Str == "run"
}

func allStrings(n *jsonc.Node) bool {
	if n.Kind != jsonc.Array {
		return false
	}
	for _, e := range n.Elems {
		if e.Kind != jsonc.String {
			return false
		}
	}
	return true
}

func stringValues(n *jsonc.Node) bool {
	if n.Kind != jsonc.Object {
		return false
	}
	for _, m := range n.Members {
		if m.Val.Kind != jsonc.String {
			return false
		}
	}
	return true
}

// wrapped renders the replacement for entry e: the client's own members as
// written, then command and args, then the original entry under
// x-bouncer-upstream, except in a KeepsOriginal client's file, whose original is
// kept in the state directory. A remote entry's "type" (http, sse) becomes
// "stdio", since the client now starts a process.
func (c *Config) wrapped(e *jsonc.Node, base, command string, args []string, remote bool) string {
	in := base + c.indent
	var b strings.Builder
	b.WriteString("{" + c.nl)
	for _, m := range e.Members {
		switch {
		case launchKeys[m.Key] || m.Key == UpstreamKey:
			continue
		case m.Key == "type" && remote:
			b.WriteString(in + `"type": "stdio",` + c.nl)
		default:
			b.WriteString(in)
			b.Write(c.data[m.KeyStart:m.KeyEnd])
			b.WriteString(": ")
			b.Write(c.data[m.Val.Start:m.Val.End])
			b.WriteString("," + c.nl)
		}
	}
	b.WriteString(in + `"command": ` + jsonc.Quote(command) + "," + c.nl)
	b.WriteString(in + `"args": [`)
	for i, a := range args {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(jsonc.Quote(a))
	}
	b.WriteString("]")
	if !c.Client.KeepsOriginal() {
		b.WriteString("," + c.nl)
		b.WriteString(in + jsonc.Quote(UpstreamKey) + ": ")
		b.WriteString(reindent(string(c.data[e.Start:e.End]), c.indent))
	}
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
// its original entry (x-bouncer-upstream, or the one kept in the state
// directory), as it was written before wrapping. Entries that were never
// wrapped are listed and left alone. Restored changes of a KeepsOriginal client
// carry Kept, for Kept.Record to forget once the file is written.
func (c *Config) Undo(project string, servers []string) ([]byte, []Change, error) {
	if c.regions != nil {
		return c.undoRegions(servers)
	}
	var changes []Change
	var edits []jsonc.Splice
	err := c.entries(project, servers, func(block string, m jsonc.Member) error {
		ch := Change{Block: block, Server: m.Key}
		o, err := c.originalOf(block, m)
		switch {
		case err != nil:
			return err
		case o == nil && launchesConfig(m.Val, m.Key):
			ch.Status, ch.Reason = Skipped, c.LostOriginal()
		case o == nil:
			ch.Status = NotWrapped
		default:
			ch.Status = Restored
			ch.Remote = isRemote(o.n)
			ch.Text = c.text(o, m)
			if o.kept {
				ch.Kept = ch.Text
			}
			edits = append(edits, jsonc.Splice{Start: m.Val.Start, End: m.Val.End, Text: ch.Text})
		}
		changes = append(changes, ch)
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return c.apply(edits), changes, nil
}

// LostOriginal says why an entry that launches `bouncer run --config ...
// --server NAME`, as init writes it, has no original (Server.Lost):
// bouncer run refuses to start it, and undo can't restore it.
func (c *Config) LostOriginal() string {
	if c.Client.KeepsOriginal() {
		return fmt.Sprintf("its original entry is in neither the file nor %s (wrapped with another state directory, or on another machine); put it back by hand, or from the .bak file", c.keptIn)
	}
	return fmt.Sprintf("it has no %s; put the original entry back by hand, or from the .bak file", UpstreamKey)
}

func (c *Config) memberKeyStart(n *jsonc.Node, key string) int {
	for _, m := range n.Members {
		if m.Key == key {
			return m.KeyStart
		}
	}
	return n.Start
}

// lineIndent is the whitespace that starts the line holding off, or "" when
// other text comes before off on that line.
func (c *Config) lineIndent(off int) string {
	ind, _ := jsonc.LineIndent(c.data, off)
	return ind
}

func (c *Config) apply(edits []jsonc.Splice) []byte { return jsonc.Apply(c.data, edits) }
