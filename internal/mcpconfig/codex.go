package mcpconfig

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"

	"github.com/bouncer-mcp/bouncer/internal/jsonc"
)

// Codex CLI keeps its servers in TOML (~/.codex/config.toml, a trusted
// project's .codex/config.toml), one [mcp_servers.NAME] table each. The
// file is read by go-toml (github.com/pelletier/go-toml/v2): its parser
// says where each table and key starts, and its decoder what each means,
// so there is one TOML reader. A rewrite splices byte ranges, as
// internal/jsonc does for JSON: go-toml, like every Go TOML library, writes
// a document anew and would drop the user's comments, order and layout.
// The original table is kept in the state directory (Client.KeepsOriginal:
// a table can't hold it), which gives it back byte for byte.

// codexBlock is the key of Codex's servers, and the block Change and Kept
// name.
const codexBlock = "mcp_servers"

// codexLaunch are the keys of a server table that say how to start or
// reach it; the others (env_vars, enabled, startup_timeout_sec,
// tool_timeout_sec, enabled_tools, disabled_tools, ...) are Codex's own,
// and stay on the wrapped table.
var codexLaunch = map[string]bool{"command": true, "args": true, "env": true, "cwd": true, "url": true,
	"http_headers": true, "env_http_headers": true, "bearer_token_env_var": true}

// tomlDoc is a Codex config.toml: its server tables, in file order.
type tomlDoc struct {
	servers []*tomlServer
}

// tomlServer is one server of a Codex config and the bytes that define it.
type tomlServer struct {
	name string
	// keyAt is where its name is first written, for messages.
	keyAt int
	// start and end are its table: from the [mcp_servers.NAME] line to the
	// end of the last line of it or of its sub-tables ([mcp_servers.NAME.env]),
	// blank lines and comments after it excluded.
	start, end int
	// header is the table's [mcp_servers.NAME] line, as written; own the
	// lines of the main table that are Codex's own (not codexLaunch) and
	// the comments among them, in order; ownSubs its own sub-tables;
	// command the span of its command key.
	header  string
	own     []ownLine
	ownSubs []string
	command [2]int
	envVars bool // it has env_vars
	// vals is the table as go-toml decodes it.
	vals map[string]any
	// problem says why init can't rewrite it ("" when it can).
	problem string
}

// ownLine is a line of a server table kept on the wrapped table: a key of
// Codex's own (key), or a comment (key "").
type ownLine struct{ key, text string }

// texpr is one expression of a TOML document: a table header, a key and
// value, or a comment line, with the key it names (the table's, for a
// key-value) and the offset of the line it starts on.
type texpr struct {
	kind  unstable.Kind
	keys  []string
	keyAt int
	start int
}

// parseTOML reads a Codex config.
func parseTOML(path string, data []byte) (*tomlDoc, error) {
	var all map[string]any
	if err := toml.Unmarshal(data, &all); err != nil {
		var de *toml.DecodeError
		if errors.As(err, &de) {
			row, col := de.Position()
			return nil, &Error{File: path, Line: row, Col: col, Msg: "not valid TOML: " + de.Error()}
		}
		return nil, &Error{File: path, Msg: "not valid TOML: " + err.Error()}
	}
	p := unstable.Parser{KeepComments: true}
	p.Reset(data)
	var exprs []texpr
	var table []string
	for p.NextExpression() {
		e := p.Expression()
		x := texpr{kind: e.Kind}
		if e.Kind == unstable.Comment {
			x.keyAt = int(e.Raw.Offset)
		} else {
			for it := e.Key(); it.Next(); {
				n := it.Node()
				if len(x.keys) == 0 {
					x.keyAt = int(n.Raw.Offset)
				}
				x.keys = append(x.keys, string(n.Data))
			}
		}
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			table = x.keys
		case unstable.KeyValue:
			x.keys = append(append([]string(nil), table...), x.keys...)
		}
		x.start = lineStart(data, x.keyAt)
		exprs = append(exprs, x)
	}
	if err := p.Error(); err != nil {
		return nil, &Error{File: path, Msg: "not valid TOML: " + err.Error()}
	}
	d := &tomlDoc{}
	byName := map[string]*tomlServer{}
	servers, _ := all[codexBlock].(map[string]any)
	var cur *tomlServer // the server whose table the expressions are in
	inSub := false      // in one of cur's sub-tables
	var pending []int   // comment lines after cur's last line so far
	for i, x := range exprs {
		if x.kind == unstable.Comment {
			if cur != nil && !inSub {
				pending = append(pending, i)
			}
			continue
		}
		// Comments between two of a table's lines are its own; those
		// after its last line go with what follows.
		if inGroup := len(x.keys) >= 3 && cur != nil && x.keys[0] == codexBlock && x.keys[1] == cur.name; inGroup {
			for _, j := range pending {
				cur.own = append(cur.own, ownLine{text: lineText(data, exprs, j)})
			}
		}
		pending = nil
		inServers := len(x.keys) >= 2 && x.keys[0] == codexBlock
		name := ""
		if inServers {
			name = x.keys[1]
		}
		s := byName[name]
		switch {
		case !inServers || x.kind == unstable.ArrayTable:
			cur = nil
			if len(x.keys) == 1 && x.keys[0] == codexBlock && x.kind == unstable.KeyValue {
				// mcp_servers = {...}: every server of it is inline.
				for n := range servers {
					d.add(byName, n, x.keyAt).problem = inlineProblem
				}
			}
			continue
		case x.kind == unstable.KeyValue && (len(x.keys) < 3 || s == nil || cur != s):
			// mcp_servers.NAME = {...}, mcp_servers.NAME.command = ... at
			// the top or in [mcp_servers], or a key of a table that is
			// written in two places.
			s = d.add(byName, name, x.keyAt)
			if s.problem == "" {
				s.problem = inlineProblem
			}
			cur = nil
			continue
		case x.kind == unstable.Table && len(x.keys) == 2:
			if s != nil {
				s.problem = splitProblem
				cur = nil
				continue
			}
			s = d.add(byName, name, x.keyAt)
			s.start = x.start
			s.header = lineText(data, exprs, i)
			cur, inSub = s, false
		case x.kind == unstable.Table:
			// [mcp_servers.NAME.SUB]: right after NAME's own lines only.
			if s == nil || cur != s {
				s = d.add(byName, name, x.keyAt)
				s.problem = splitProblem
				cur = nil
				continue
			}
			inSub = true
			if !codexLaunch[x.keys[2]] {
				s.ownSubs = append(s.ownSubs, groupText(data, exprs, i, x.keys[:3]))
			}
		case !inSub: // a key of NAME's table, dotted keys too
			switch x.keys[2] {
			case "command":
				s.command = [2]int{x.start, spanEnd(data, exprs, i)}
			case "env_vars":
				s.envVars = true
			}
			if !codexLaunch[x.keys[2]] {
				s.own = append(s.own, ownLine{key: x.keys[2], text: lineText(data, exprs, i)})
			}
		}
		s.end = spanEnd(data, exprs, i)
	}
	for n := range servers {
		if byName[n] == nil {
			d.add(byName, n, 0).problem = inlineProblem
		}
	}
	for _, s := range d.servers {
		s.vals, _ = servers[s.name].(map[string]any)
		if s.problem == "" && s.vals == nil {
			s.problem = "not a table"
		}
	}
	return d, nil
}

const (
	inlineProblem = "written as an inline table or with dotted keys, which init does not rewrite; write it as a [mcp_servers.NAME] table"
	splitProblem  = "its table is written in more than one place, which init does not rewrite; keep [mcp_servers.NAME] and its sub-tables together"
)

// add returns the server named name, listed once.
func (d *tomlDoc) add(byName map[string]*tomlServer, name string, at int) *tomlServer {
	if s := byName[name]; s != nil {
		return s
	}
	s := &tomlServer{name: name, keyAt: at}
	byName[name] = s
	d.servers = append(d.servers, s)
	return s
}

// lineStart is the offset of the line that holds off.
func lineStart(data []byte, off int) int {
	for off > 0 && data[off-1] != '\n' {
		off--
	}
	return off
}

// spanEnd is where expression i ends: before the line of the next
// expression, blank lines left out.
func spanEnd(data []byte, exprs []texpr, i int) int {
	end := len(data)
	if i+1 < len(exprs) {
		end = exprs[i+1].start
	}
	for end > exprs[i].start {
		ls := lineStart(data, end-1)
		if strings.TrimSpace(string(data[ls:end])) != "" {
			break
		}
		end = ls
	}
	return end
}

// lineText is expression i's text, ending with a line break.
func lineText(data []byte, exprs []texpr, i int) string {
	t := string(data[exprs[i].start:spanEnd(data, exprs, i)])
	if !strings.HasSuffix(t, "\n") {
		t += "\n"
	}
	return t
}

// groupText is the text of the table header at i and the expressions that
// follow in that table (keys starting with prefix), ending with a line
// break.
func groupText(data []byte, exprs []texpr, i int, prefix []string) string {
	j := i
	for k := i + 1; k < len(exprs) && (exprs[k].kind == unstable.Comment || exprs[k].kind == unstable.KeyValue && hasPrefix(exprs[k].keys, prefix)); k++ {
		if exprs[k].kind != unstable.Comment {
			j = k // comments after its last key go with what follows
		}
	}
	t := string(data[exprs[i].start:spanEnd(data, exprs, j)])
	if !strings.HasSuffix(t, "\n") {
		t += "\n"
	}
	return t
}

func hasPrefix(keys, prefix []string) bool {
	return len(keys) >= len(prefix) && slices.Equal(keys[:len(prefix)], prefix)
}

// launchOf reads a Codex server table's launch keys, checking their
// types; problem says what is wrong.
func launchOf(v map[string]any) (l Launch, headers, envHeaders map[string]string, bearer, problem string) {
	str := func(k string) (string, bool) {
		x, ok := v[k]
		if !ok {
			return "", true
		}
		s, ok := x.(string)
		return s, ok
	}
	strMap := func(k string) (map[string]string, bool) {
		x, ok := v[k]
		if !ok {
			return nil, true
		}
		m, ok := x.(map[string]any)
		if !ok {
			return nil, false
		}
		out := make(map[string]string, len(m))
		for kk, vv := range m {
			s, ok := vv.(string)
			if !ok {
				return nil, false
			}
			out[kk] = s
		}
		return out, true
	}
	var ok bool
	if l.Command, ok = str("command"); !ok {
		return l, nil, nil, "", "command is not a string"
	}
	if l.URL, ok = str("url"); !ok {
		return l, nil, nil, "", "url is not a string"
	}
	if l.Cwd, ok = str("cwd"); !ok {
		return l, nil, nil, "", "cwd is not a string"
	}
	if bearer, ok = str("bearer_token_env_var"); !ok {
		return l, nil, nil, "", "bearer_token_env_var is not a string"
	}
	if a, has := v["args"]; has {
		list, ok := a.([]any)
		if !ok {
			return l, nil, nil, "", "args is not a list of strings"
		}
		for _, x := range list {
			s, ok := x.(string)
			if !ok {
				return l, nil, nil, "", "args is not a list of strings"
			}
			l.Args = append(l.Args, s)
		}
	}
	if l.Env, ok = strMap("env"); !ok {
		return l, nil, nil, "", "env is not a table of strings"
	}
	for k := range l.Env {
		l.EnvOrder = append(l.EnvOrder, k)
	}
	sort.Strings(l.EnvOrder)
	if headers, ok = strMap("http_headers"); !ok {
		return l, nil, nil, "", "http_headers is not a table of strings"
	}
	if envHeaders, ok = strMap("env_http_headers"); !ok {
		return l, nil, nil, "", "env_http_headers is not a table of strings"
	}
	switch {
	case l.Command == "" && l.URL == "":
		return l, nil, nil, "", "no command or url"
	case l.Cwd != "" && !filepath.IsAbs(l.Cwd):
		return l, nil, nil, "", "cwd is relative to wherever Codex starts it; write it absolute"
	}
	l.Headers = headers
	return l, headers, envHeaders, bearer, ""
}

// codexRunsBouncer reports whether a Codex server table launches `bouncer
// run`, and whether as init writes it (--config and --server name).
func codexRunsBouncer(v map[string]any, name string) (runs, asInit bool) {
	l, _, _, _, problem := launchOf(v)
	if problem != "" {
		return false, false
	}
	base := filepath.Base(l.Command)
	if (base != "bouncer" && base != "bouncer.exe") || len(l.Args) == 0 || l.Args[0] != "run" {
		return false, false
	}
	return true, argAfter(l.Args, "--config") != "" && argAfter(l.Args, "--server") == name
}

// tomlOriginal returns the kept original table of server s, decoded; nil
// when s is not wrapped by init (or nothing is kept for it).
func (c *Config) tomlOriginal(s *tomlServer) (text string, vals map[string]any, err error) {
	k, ok := c.kept[codexBlock][s.name]
	if !ok || s.problem != "" {
		return "", nil, nil
	}
	if _, asInit := codexRunsBouncer(s.vals, s.name); !asInit {
		return "", nil, nil
	}
	var doc struct {
		Servers map[string]map[string]any `toml:"mcp_servers"`
	}
	if err := toml.Unmarshal([]byte(k.Entry), &doc); err != nil || doc.Servers[s.name] == nil {
		return "", nil, c.errAt(s.keyAt, fmt.Sprintf("server %q: its original table, kept in %s, does not read; restore it by hand (or from the .bak file)", s.name, c.keptIn))
	}
	return k.Entry, doc.Servers[s.name], nil
}

// tomlSelected returns the servers names select (all, for none), or an
// error naming one that is not there.
func (c *Config) tomlSelected(names []string) ([]*tomlServer, error) {
	if len(c.toml.servers) == 0 {
		return nil, &Error{File: c.Path, Msg: fmt.Sprintf("no [%s.NAME] table, where Codex keeps its servers", codexBlock)}
	}
	var out []*tomlServer
	var missing []string
	for _, n := range names {
		if !slices.ContainsFunc(c.toml.servers, func(s *tomlServer) bool { return s.name == n }) {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return nil, &Error{File: c.Path, Msg: fmt.Sprintf("no server named %s", quoteList(missing))}
	}
	for _, s := range c.toml.servers {
		if len(names) == 0 || slices.Contains(names, s.name) {
			out = append(out, s)
		}
	}
	return out, nil
}

// wrapTOML is Wrap for a Codex config.
func (c *Config) wrapTOML(opts WrapOptions, cfgArg, command string) ([]byte, []Change, error) {
	sel, err := c.tomlSelected(opts.Servers)
	if err != nil {
		return nil, nil, err
	}
	var changes []Change
	var edits []jsonc.Splice
	for _, s := range sel {
		ch := Change{Block: codexBlock, Server: s.name}
		orig, _, err := c.tomlOriginal(s)
		if err != nil {
			return nil, nil, err
		}
		runs, _ := codexRunsBouncer(s.vals, s.name)
		l, _, envHeaders, bearer, problem := launchOf(s.vals)
		ch.Remote = l.Command == "" && l.URL != ""
		switch {
		case s.problem != "":
			ch.Status, ch.Reason = Skipped, s.problem
		case orig != "" || runs:
			ch.Status = AlreadyWrapped
			if orig == "" {
				ch.Reason = "already launches bouncer run"
			}
			if cur := l.Command; orig != "" && cur != command && opts.Relaunch != nil && opts.Relaunch(cur) {
				ch.Status, ch.Reason = CommandUpdated, "was "+jsonc.Quote(cur)
				ch.Text = "command = " + jsonc.Quote(command) + "\n"
				edits = append(edits, jsonc.Splice{Start: s.command[0], End: s.command[1], Text: ch.Text})
			}
		case problem != "":
			ch.Status, ch.Reason = Skipped, problem
		default:
			ch.Status = Wrapped
			args := append([]string{"run", "--config", cfgArg, "--server", s.name}, opts.ExtraArgs...)
			var b strings.Builder
			b.WriteString(s.header)
			b.WriteString("command = " + jsonc.Quote(command) + "\n")
			b.WriteString("args = " + tomlList(args) + "\n")
			// Codex hands a server only some of its environment (HOME,
			// PATH, ... and env_vars): the variables the original's headers
			// name, and BOUNCER_HOME, must reach bouncer run.
			vars, err := envVars(s.vals)
			if err != nil {
				ch.Status, ch.Reason = Skipped, err.Error()
				break
			}
			vars = appendNew(vars, "BOUNCER_HOME")
			for _, v := range envHeaders {
				vars = appendNew(vars, v)
			}
			if bearer != "" {
				vars = appendNew(vars, bearer)
			}
			if len(vars) > 0 {
				b.WriteString("env_vars = " + tomlList(vars) + "\n")
			}
			// A comment left last would read as the next table's.
			own := s.own
			for len(s.ownSubs) == 0 && len(own) > 0 && own[len(own)-1].key == "" {
				own = own[:len(own)-1]
			}
			for _, o := range own {
				if o.key != "env_vars" || !s.envVars {
					b.WriteString(o.text) // env_vars is written above, with what bouncer run needs
				}
			}
			for _, o := range s.ownSubs {
				b.WriteString(o)
			}
			ch.Kept = string(c.data[s.start:s.end])
			ch.Text = b.String()
			edits = append(edits, jsonc.Splice{Start: s.start, End: s.end, Text: ch.Text})
		}
		changes = append(changes, ch)
	}
	out := c.apply(edits)
	if len(edits) > 0 {
		// What init writes must read back as what it means; anything else
		// is a bug here, and writing it would be worse.
		d, err := parseTOML(c.Path, out)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: bouncer init made a config.toml that does not read (a bug; nothing written): %v", c.Path, err)
		}
		for _, ch := range changes {
			if ch.Status != Wrapped {
				continue
			}
			i := slices.IndexFunc(d.servers, func(s *tomlServer) bool { return s.name == ch.Server })
			if i < 0 {
				return nil, nil, fmt.Errorf("%s: bouncer init lost server %q in the rewrite (a bug; nothing written)", c.Path, ch.Server)
			}
			if _, asInit := codexRunsBouncer(d.servers[i].vals, ch.Server); !asInit {
				return nil, nil, fmt.Errorf("%s: bouncer init's rewrite of server %q does not launch bouncer run (a bug; nothing written)", c.Path, ch.Server)
			}
		}
	}
	return out, changes, nil
}

// undoTOML is Undo for a Codex config.
func (c *Config) undoTOML(servers []string) ([]byte, []Change, error) {
	sel, err := c.tomlSelected(servers)
	if err != nil {
		return nil, nil, err
	}
	var changes []Change
	var edits []jsonc.Splice
	for _, s := range sel {
		ch := Change{Block: codexBlock, Server: s.name, Status: NotWrapped}
		orig, vals, err := c.tomlOriginal(s)
		if err != nil {
			return nil, nil, err
		}
		if _, asInit := codexRunsBouncer(s.vals, s.name); orig == "" && asInit && s.problem == "" {
			ch.Status, ch.Reason = Skipped, c.LostOriginal()
		}
		if orig != "" {
			l, _, _, _, _ := launchOf(vals)
			ch.Status, ch.Text, ch.Kept = Restored, orig, orig
			ch.Remote = l.Command == "" && l.URL != ""
			edits = append(edits, jsonc.Splice{Start: s.start, End: s.end, Text: orig})
		}
		changes = append(changes, ch)
	}
	return c.apply(edits), changes, nil
}

// serversTOML is Servers for a Codex config.
func (c *Config) serversTOML() []Server {
	var out []Server
	for _, s := range c.toml.servers {
		srv := Server{Block: codexBlock, Name: s.name}
		orig, vals, err := c.tomlOriginal(s)
		runs, asInit := codexRunsBouncer(s.vals, s.name)
		self, _, _, _, _ := launchOf(s.vals)
		switch {
		case err != nil:
			srv.Wrapped = true
		case orig != "":
			srv.Wrapped, srv.Kept = true, true
			srv.Launch, _, _, _, _ = launchOf(vals)
		case asInit:
			srv.Lost = true
			srv.Launch = self
		case runs:
			srv.Wrapped, srv.HandWrapped = true, true
			if i := slices.Index(self.Args, "--"); i >= 0 && i+1 < len(self.Args) {
				srv.Launch = Launch{Command: self.Args[i+1], Args: self.Args[i+2:]}
			}
		default:
			srv.Launch = self
		}
		if srv.Wrapped {
			srv.Command, srv.Args = self.Command, self.Args
		}
		srv.Remote = srv.Launch.Command == "" && srv.Launch.URL != ""
		out = append(out, srv)
	}
	return out
}

// resolveTOML is Resolve for a Codex config: the original table kept for
// l.Server, as Codex would start or reach it. Codex expands no variables;
// env_http_headers and bearer_token_env_var name variables of the
// environment it gives the server (env_vars), which is bouncer run's.
func (c *Config) resolveTOML(l Lookup, file, base string) (Resolved, error) {
	i := slices.IndexFunc(c.toml.servers, func(s *tomlServer) bool { return s.name == l.Server })
	if i < 0 {
		return Resolved{}, &Error{File: l.File, Msg: fmt.Sprintf("no server named %q", l.Server)}
	}
	s := c.toml.servers[i]
	orig, vals, err := c.tomlOriginal(s)
	switch {
	case err != nil:
		return Resolved{}, err
	case orig == "":
		return Resolved{}, c.errAt(s.keyAt, fmt.Sprintf("server %q has no original table kept for it in %s (Codex's tables can't hold it, so bouncer init keeps it there): it was wrapped with another state directory (pass its --home), or on another machine; put the original table back and run bouncer init", l.Server, c.keptIn))
	}
	la, headers, envHeaders, bearer, problem := launchOf(vals)
	if problem != "" {
		return Resolved{}, c.errAt(s.keyAt, fmt.Sprintf("server %q: its original table (kept in %s): %s", l.Server, c.keptIn, problem))
	}
	e := Entry{Command: la.Command, Args: la.Args, Env: la.Env, Cwd: la.Cwd, URL: la.URL}
	if la.Command != "" {
		e.URL = ""
	} else {
		e.Headers = map[string]string{}
		for k, v := range headers {
			e.Headers[k] = v
		}
		names := make([]string, 0, len(envHeaders))
		for k := range envHeaders {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, h := range names {
			v, ok := l.Getenv(envHeaders[h])
			if !ok {
				return Resolved{}, c.errAt(s.keyAt, fmt.Sprintf("server %q: env_http_headers.%s: %s is not set in the environment Codex started bouncer with; set it, and name it in env_vars", l.Server, h, envHeaders[h]))
			}
			e.Headers[h] = v
		}
		if bearer != "" {
			v, ok := l.Getenv(bearer)
			if !ok {
				return Resolved{}, c.errAt(s.keyAt, fmt.Sprintf("server %q: bearer_token_env_var: %s is not set in the environment Codex started bouncer with; set it, and name it in env_vars", l.Server, bearer))
			}
			e.Headers["Authorization"] = "Bearer " + v
		}
	}
	return Resolved{Entry: e, File: file, Base: base}, nil
}

// envVars is a table's env_vars: the names of the variables of its own
// environment Codex hands the server.
func envVars(v map[string]any) ([]string, error) {
	x, ok := v["env_vars"]
	if !ok {
		return nil, nil
	}
	list, ok := x.([]any)
	if !ok {
		return nil, errors.New("env_vars is not a list of names")
	}
	var out []string
	for _, e := range list {
		s, ok := e.(string)
		if !ok {
			return nil, errors.New("env_vars is not a list of names")
		}
		out = append(out, s)
	}
	return out, nil
}

func appendNew(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}

// tomlList is a list of strings as TOML: JSON's string form is a TOML
// basic string.
func tomlList(items []string) string {
	q := make([]string, len(items))
	for i, s := range items {
		q[i] = jsonc.Quote(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}
