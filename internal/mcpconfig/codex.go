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

// codexFormat is Codex CLI's config.toml as a config of regions
// (regions.go): one [mcp_servers.NAME] table (and its sub-tables) each.
type codexFormat struct{}

func (codexFormat) block() string { return codexBlock }

// tomlServer is what codexFormat.parse gathers of one server table: its region,
// and the lines the wrapped table keeps.
type tomlServer struct {
	*region
	// header is the table's [mcp_servers.NAME] line, as written; own the
	// lines of the main table that are Codex's own (not codexLaunch) and
	// the comments among them, in order; ownSubs its own sub-tables.
	header  string
	own     []ownLine
	ownSubs []string
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

// parse reads a Codex config.
func (codexFormat) parse(path string, data []byte) (*regionDoc, error) {
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
	var list []*tomlServer
	byName := map[string]*tomlServer{}
	add := func(name string, at int) *tomlServer {
		if s := byName[name]; s != nil {
			return s
		}
		s := &tomlServer{region: &region{name: name, keyAt: at}}
		byName[name] = s
		list = append(list, s)
		return s
	}
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
					add(n, x.keyAt).problem = inlineProblem
				}
			}
			continue
		case x.kind == unstable.KeyValue && (len(x.keys) < 3 || s == nil || cur != s):
			// mcp_servers.NAME = {...}, mcp_servers.NAME.command = ... at
			// the top or in [mcp_servers], or a key of a table that is
			// written in two places.
			s = add(name, x.keyAt)
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
			s = add(name, x.keyAt)
			s.start = x.start
			s.header = lineText(data, exprs, i)
			cur, inSub = s, false
		case x.kind == unstable.Table:
			// [mcp_servers.NAME.SUB]: right after NAME's own lines only.
			if s == nil || cur != s {
				s = add(name, x.keyAt)
				s.problem = splitProblem
				cur = nil
				continue
			}
			inSub = true
			if !codexLaunch[x.keys[2]] {
				s.ownSubs = append(s.ownSubs, groupText(data, exprs, i, x.keys[:3]))
			}
		case !inSub: // a key of NAME's table, dotted keys too
			if x.keys[2] == "command" {
				s.command = [2]int{x.start, spanEnd(data, exprs, i)}
			}
			if !codexLaunch[x.keys[2]] {
				s.own = append(s.own, ownLine{key: x.keys[2], text: lineText(data, exprs, i)})
			}
		}
		s.end = spanEnd(data, exprs, i)
	}
	for n := range servers {
		if byName[n] == nil {
			add(n, 0).problem = inlineProblem
		}
	}
	d := &regionDoc{format: codexFormat{}}
	for _, s := range list {
		s.vals, _ = servers[s.name].(map[string]any)
		if s.problem == "" && s.vals == nil {
			s.problem = "not a table"
		}
		s.commandLine = func(command string) string { return "command = " + jsonc.Quote(command) + "\n" }
		s.render = s.wrapped
		d.servers = append(d.servers, s.region)
	}
	return d, nil
}

const (
	inlineProblem = "written as an inline table or with dotted keys, which init does not rewrite; write it as a [mcp_servers.NAME] table"
	splitProblem  = "its table is written in more than one place, which init does not rewrite; keep [mcp_servers.NAME] and its sub-tables together"
)

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

// launch reads a Codex server table's launch keys.
func (codexFormat) launch(v map[string]any) (Launch, string) {
	l, _, _, _, problem := launchOf(v)
	return l, problem
}

// decode reads a kept original table: the values of server name.
func (codexFormat) decode(text, name string) (map[string]any, error) {
	var doc struct {
		Servers map[string]map[string]any `toml:"mcp_servers"`
	}
	if err := toml.Unmarshal([]byte(text), &doc); err != nil {
		return nil, err
	}
	return doc.Servers[name], nil
}

// entry is what bouncer run starts or reaches for a Codex server table.
// Codex expands no variables; env_http_headers and bearer_token_env_var
// name variables of the environment it gives the server (env_vars), which
// is bouncer run's.
func (codexFormat) entry(lk Lookup, v map[string]any) (Entry, error) {
	la, headers, envHeaders, bearer, _ := launchOf(v)
	e := Entry{Command: la.Command, Args: la.Args, Env: la.Env, Cwd: la.Cwd, URL: la.URL}
	if la.Command != "" {
		e.URL = ""
		return e, nil
	}
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
		val, ok := lk.Getenv(envHeaders[h])
		if !ok {
			return e, fmt.Errorf("env_http_headers.%s: %s is not set in the environment Codex started bouncer with; set it, and name it in env_vars", h, envHeaders[h])
		}
		e.Headers[h] = val
	}
	if bearer != "" {
		val, ok := lk.Getenv(bearer)
		if !ok {
			return e, fmt.Errorf("bearer_token_env_var: %s is not set in the environment Codex started bouncer with; set it, and name it in env_vars", bearer)
		}
		e.Headers["Authorization"] = "Bearer " + val
	}
	return e, nil
}

// wrapped is the table init writes in s's place: its header, command and
// args, env_vars with what bouncer run needs, and Codex's own lines.
func (s *tomlServer) wrapped(command string, args []string) (string, error) {
	_, _, envHeaders, bearer, _ := launchOf(s.vals)
	var b strings.Builder
	b.WriteString(s.header)
	b.WriteString("command = " + jsonc.Quote(command) + "\n")
	b.WriteString("args = " + tomlList(args) + "\n")
	// Codex hands a server only some of its environment (HOME, PATH, ...
	// and env_vars): the variables the original's headers name, and
	// BOUNCER_HOME, must reach bouncer run.
	vars, err := envVars(s.vals)
	if err != nil {
		return "", err
	}
	vars = appendNew(vars, "BOUNCER_HOME")
	names := make([]string, 0, len(envHeaders))
	for _, v := range envHeaders {
		names = append(names, v)
	}
	sort.Strings(names)
	for _, v := range names {
		vars = appendNew(vars, v)
	}
	if bearer != "" {
		vars = appendNew(vars, bearer)
	}
	b.WriteString("env_vars = " + tomlList(vars) + "\n")
	// A comment left last would read as the next table's.
	own := s.own
	for len(s.ownSubs) == 0 && len(own) > 0 && own[len(own)-1].key == "" {
		own = own[:len(own)-1]
	}
	for _, o := range own {
		if o.key != "env_vars" {
			b.WriteString(o.text) // env_vars is written above, with what bouncer run needs
		}
	}
	for _, o := range s.ownSubs {
		b.WriteString(o)
	}
	return b.String(), nil
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
