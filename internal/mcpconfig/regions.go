package mcpconfig

import (
	"fmt"
	"path/filepath"
	"slices"
	"sort"

	"github.com/bouncer-mcp/bouncer/internal/jsonc"
)

// Some clients keep their servers in a format whose entries init rewrites
// whole, each as one range of bytes: Codex CLI's TOML tables (codex.go),
// Continue's YAML list items (continue.go). Their original entries are
// kept in the state directory (Client.KeepsOriginal); everything else,
// what wrapping means, is this file's, once for both.

// region is one server of such a config and the bytes that define it.
type region struct {
	name string
	// keyAt is where its name is written, for messages.
	keyAt int
	// start and end are its bytes, from the start of its first line to
	// the end of its last, blank lines and comments after it excluded.
	start, end int
	// vals are its values, as the format's decoder reads them.
	vals map[string]any
	// problem says why init can't rewrite it ("" when it can).
	problem string
	// command is the span of the line of its command, and commandLine
	// that line with another command (for Relaunch).
	command     [2]int
	commandLine func(command string) string
	// render is the entry init writes in its place, launching command with
	// args, or why it can't.
	render func(command string, args []string) (string, error)
}

// regionDoc is a config whose servers are regions.
type regionDoc struct {
	servers []*region
	format  regionFormat
}

// regionFormat is what differs between the formats.
type regionFormat interface {
	// block names the servers' place in Changes and messages.
	block() string
	// parse reads a whole file.
	parse(path string, data []byte) (*regionDoc, error)
	// decode reads a kept original: the values of server name.
	decode(text, name string) (map[string]any, error)
	// launch reads a server's values: how it is started or reached, or
	// what is wrong with them.
	launch(v map[string]any) (l Launch, problem string)
	// entry is what bouncer run starts for the values v, read with the
	// environment of l (some formats name variables for headers).
	entry(l Lookup, v map[string]any) (Entry, error)
}

// runsBouncer reports whether a server's values launch `bouncer run`, and
// whether as init writes it (--config and --server name).
func (d *regionDoc) runsBouncer(v map[string]any, name string) (runs, asInit bool) {
	l, problem := d.format.launch(v)
	if problem != "" {
		return false, false
	}
	base := filepath.Base(l.Command)
	if (base != "bouncer" && base != "bouncer.exe") || len(l.Args) == 0 || l.Args[0] != "run" {
		return false, false
	}
	return true, argAfter(l.Args, "--config") != "" && argAfter(l.Args, "--server") == name
}

// regionOriginal returns the kept original of server r and its values;
// "" when r is not wrapped by init (or nothing is kept for it).
func (c *Config) regionOriginal(r *region) (text string, vals map[string]any, err error) {
	k, ok := c.kept[c.regions.format.block()][r.name]
	if !ok || r.problem != "" {
		return "", nil, nil
	}
	if _, asInit := c.regions.runsBouncer(r.vals, r.name); !asInit {
		return "", nil, nil
	}
	v, err := c.regions.format.decode(k.Entry, r.name)
	if err != nil || v == nil {
		return "", nil, c.errAt(r.keyAt, fmt.Sprintf("server %q: its original entry, kept in %s, does not read; restore it by hand (or from the .bak file)", r.name, c.keptIn))
	}
	return k.Entry, v, nil
}

// regionsSelected returns the servers names select (all, for none), or
// an error naming one that is not there.
func (c *Config) regionsSelected(names []string) ([]*region, error) {
	d := c.regions
	if len(d.servers) == 0 {
		return nil, &Error{File: c.Path, Msg: fmt.Sprintf("no %s, where %s keeps its servers", d.format.block(), c.Client)}
	}
	var missing []string
	for _, n := range names {
		if !slices.ContainsFunc(d.servers, func(r *region) bool { return r.name == n }) {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return nil, &Error{File: c.Path, Msg: fmt.Sprintf("no server named %s", quoteList(missing))}
	}
	var out []*region
	for _, r := range d.servers {
		if len(names) == 0 || slices.Contains(names, r.name) {
			out = append(out, r)
		}
	}
	return out, nil
}

func isRemoteLaunch(l Launch) bool { return l.Command == "" && l.URL != "" }

// wrapRegions is Wrap for a config of regions.
func (c *Config) wrapRegions(opts WrapOptions, cfgArg, command string) ([]byte, []Change, error) {
	d := c.regions
	sel, err := c.regionsSelected(opts.Servers)
	if err != nil {
		return nil, nil, err
	}
	var changes []Change
	var edits []jsonc.Splice
	for _, r := range sel {
		ch := Change{Block: d.format.block(), Server: r.name}
		orig, _, err := c.regionOriginal(r)
		if err != nil {
			return nil, nil, err
		}
		runs, _ := d.runsBouncer(r.vals, r.name)
		l, problem := d.format.launch(r.vals)
		ch.Remote = isRemoteLaunch(l)
		switch {
		case r.problem != "":
			ch.Status, ch.Reason = Skipped, r.problem
		case orig != "" || runs:
			ch.Status = AlreadyWrapped
			if orig == "" {
				ch.Reason = "already launches bouncer run"
			}
			if cur := l.Command; orig != "" && cur != command && opts.Relaunch != nil && opts.Relaunch(cur) && r.commandLine != nil {
				ch.Status, ch.Reason = CommandUpdated, "was "+jsonc.Quote(cur)
				ch.Text = r.commandLine(command)
				edits = append(edits, jsonc.Splice{Start: r.command[0], End: r.command[1], Text: ch.Text})
			}
		case problem != "":
			ch.Status, ch.Reason = Skipped, problem
		default:
			text, err := r.render(command, append([]string{"run", "--config", cfgArg, "--server", r.name}, opts.ExtraArgs...))
			if err != nil {
				ch.Status, ch.Reason = Skipped, err.Error()
				break
			}
			ch.Status, ch.Text, ch.Kept = Wrapped, text, string(c.data[r.start:r.end])
			edits = append(edits, jsonc.Splice{Start: r.start, End: r.end, Text: text})
		}
		changes = append(changes, ch)
	}
	out := c.apply(edits)
	if len(edits) == 0 {
		return out, changes, nil
	}
	// What init writes must read back as what it means: each server as it
	// was but those it wrapped, which launch bouncer run. Anything else is
	// a bug here, and writing it would be worse.
	again, err := d.format.parse(c.Path, out)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: bouncer init made a file that does not read (a bug; nothing written): %v", c.Path, err)
	}
	for _, r := range d.servers {
		i := slices.IndexFunc(again.servers, func(x *region) bool { return x.name == r.name })
		if i < 0 {
			return nil, nil, fmt.Errorf("%s: bouncer init lost server %q in the rewrite (a bug; nothing written)", c.Path, r.name)
		}
		wrapped := slices.ContainsFunc(changes, func(ch Change) bool { return ch.Server == r.name && ch.Status == Wrapped })
		if _, asInit := again.runsBouncer(again.servers[i].vals, r.name); wrapped && !asInit {
			return nil, nil, fmt.Errorf("%s: bouncer init's rewrite of server %q does not launch bouncer run (a bug; nothing written)", c.Path, r.name)
		}
	}
	return out, changes, nil
}

// undoRegions is Undo for a config of regions.
func (c *Config) undoRegions(servers []string) ([]byte, []Change, error) {
	d := c.regions
	sel, err := c.regionsSelected(servers)
	if err != nil {
		return nil, nil, err
	}
	var changes []Change
	var edits []jsonc.Splice
	for _, r := range sel {
		ch := Change{Block: d.format.block(), Server: r.name, Status: NotWrapped}
		orig, vals, err := c.regionOriginal(r)
		if err != nil {
			return nil, nil, err
		}
		if _, asInit := d.runsBouncer(r.vals, r.name); orig == "" && asInit && r.problem == "" {
			ch.Status, ch.Reason = Skipped, c.LostOriginal()
		}
		if orig != "" {
			l, _ := d.format.launch(vals)
			ch.Status, ch.Text, ch.Kept, ch.Remote = Restored, orig, orig, isRemoteLaunch(l)
			edits = append(edits, jsonc.Splice{Start: r.start, End: r.end, Text: orig})
		}
		changes = append(changes, ch)
	}
	return c.apply(edits), changes, nil
}

// serversRegions is Servers for a config of regions.
func (c *Config) serversRegions() []Server {
	d := c.regions
	var out []Server
	for _, r := range d.servers {
		srv := Server{Block: d.format.block(), Name: r.name}
		orig, vals, err := c.regionOriginal(r)
		runs, asInit := d.runsBouncer(r.vals, r.name)
		self, _ := d.format.launch(r.vals)
		switch {
		case err != nil:
			srv.Wrapped = true
		case orig != "":
			srv.Wrapped, srv.Kept = true, true
			srv.Launch, _ = d.format.launch(vals)
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
		srv.Remote = isRemoteLaunch(srv.Launch)
		out = append(out, srv)
	}
	return out
}

// resolveRegions is Resolve for a config of regions.
func (c *Config) resolveRegions(l Lookup, file, base string) (Resolved, error) {
	d := c.regions
	i := slices.IndexFunc(d.servers, func(r *region) bool { return r.name == l.Server })
	if i < 0 {
		return Resolved{}, &Error{File: l.File, Msg: fmt.Sprintf("no server named %q", l.Server)}
	}
	r := d.servers[i]
	orig, vals, err := c.regionOriginal(r)
	switch {
	case err != nil:
		return Resolved{}, err
	case orig == "":
		return Resolved{}, c.errAt(r.keyAt, fmt.Sprintf("server %q has no original entry kept for it in %s (%s's entries can't hold it, so bouncer init keeps it there): it was wrapped with another state directory (pass its --home), or on another machine; put the original entry back and run bouncer init", l.Server, c.keptIn, c.Client))
	}
	if _, problem := d.format.launch(vals); problem != "" {
		return Resolved{}, c.errAt(r.keyAt, fmt.Sprintf("server %q: its original entry (kept in %s): %s", l.Server, c.keptIn, problem))
	}
	e, err := d.format.entry(l, vals)
	if err != nil {
		return Resolved{}, c.errAt(r.keyAt, fmt.Sprintf("server %q: %v", l.Server, err))
	}
	return Resolved{Entry: e, File: file, Base: base}, nil
}
