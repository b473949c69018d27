// Package protect works out what `bouncer init` puts in a policy file for
// the servers it wraps, and says per server what is enforced and what is
// not. Both are derived from the built-in packs and the policy as loaded
// (package policy), not from a list of its own: a pack that changes changes
// what init writes and says.
package protect

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/bouncer-mcp/bouncer/internal/mcpconfig"
	"github.com/bouncer-mcp/bouncer/internal/pathtree"
	"github.com/bouncer-mcp/bouncer/internal/policy"
	"github.com/bouncer-mcp/bouncer/internal/yamlstrict"
)

// FilesystemPack is the pack whose write tools init confines to the
// server's own directories.
const FilesystemPack = "filesystem"

var checkedAgainst = regexp.MustCompile(`(?m)^# Checked against (\S+) `)

// packPackage returns the npm package a pack was checked against, from the
// pack's own header ("# Checked against PACKAGE VERSION").
func packPackage(p policy.Pack) string {
	m := checkedAgainst.FindSubmatch(p.Data)
	if m == nil {
		return ""
	}
	return string(m[1])
}

// Recognize tells which built-in pack was written for the server an entry
// launches, and returns the arguments that follow the server's name (for
// the filesystem server, its directories). It knows the server by the
// package its pack was checked against, however it is started: through npx
// (or bunx, pnpm dlx), `node .../node_modules/PACKAGE/...`, its installed
// binary (mcp-server-NAME), or Docker's mcp/NAME image.
func Recognize(l mcpconfig.Launch) (pack string, rest []string, ok bool) {
	words := append([]string{l.Command}, l.Args...)
	for _, p := range policy.Packs() {
		pkg := packPackage(p)
		if pkg == "" {
			continue
		}
		bin := "mcp-" + pkg[strings.LastIndexByte(pkg, '/')+1:]
		image := regexp.MustCompile(`^([^/\s]+/)?mcp/` + regexp.QuoteMeta(p.Name) + `(:[^/\s]*)?$`)
		for i, w := range words {
			if w == pkg || strings.HasPrefix(w, pkg+"@") || strings.Contains(w, "/node_modules/"+pkg+"/") ||
				filepath.Base(w) == bin || image.MatchString(w) {
				return p.Name, words[i+1:], true
			}
		}
	}
	return "", nil, false
}

// Dirs returns a filesystem server's directories: its arguments that are
// not flags.
func Dirs(rest []string) []string {
	var out []string
	for _, a := range rest {
		if !strings.HasPrefix(a, "-") {
			out = append(out, a)
		}
	}
	return out
}

// writeTools returns the pack's tools that have write_params, with them.
func writeTools(pack string) ([]string, map[string][]string, error) {
	base, err := policy.LoadSources()
	if err != nil {
		return nil, nil, err
	}
	var names []string
	params := map[string][]string{}
	for _, p := range policy.Packs() {
		if p.Name != pack {
			continue
		}
		for _, t := range p.Tools {
			if e, ok := base.Lookup(t); ok && len(e.WriteParams) > 0 {
				names = append(names, t)
				params[t] = e.WriteParams
			}
		}
	}
	return names, params, nil
}

// Edit is what init changes in a policy file.
type Edit struct {
	Path string
	// Old is the file as read; nil when it does not exist.
	Old []byte
	// New is the text to write; equal to Old when nothing is missing.
	New []byte
	// Added says what New adds, one line each.
	Added []string
	// Left says what init left as the user wrote it, and what to do.
	Left []string
}

// Changed reports whether the edit writes anything.
func (e Edit) Changed() bool { return e.Old == nil || !bytes.Equal(e.Old, e.New) }

// Header starts a policy file init creates.
const Header = `# Bouncer policy, written by bouncer init. Edit it freely: init only adds
# what is missing and never removes or changes an entry you wrote.
# Reference: docs/policy.md. Relative paths are relative to this file.
`

// Confinement is what Extend confines the filesystem pack's write tools to.
type Confinement struct {
	// Dirs are the prefixes, each as it is to be written: relative to the
	// policy file's directory, or absolute.
	Dirs []string
	// Guarded are absolute paths no prefix may cover (see Around). Extend
	// never writes one that does, and says in Left which prefixes the file
	// already has that do.
	Guarded []string
	// Listed: some of Dirs are what a directory holds around guarded
	// paths (Around), not the directory; the file then says so.
	Listed bool
	// Refuse: the servers' directories held nothing but guarded paths, so
	// there is no prefix to give. A tool the file does not name gets
	// max_calls: 0 instead, which refuses it: no entry would leave the
	// tools unconfined.
	Refuse bool
}

// Extend returns the policy file at path (holding old, nil when missing)
// with the filesystem pack's write tools confined as c says. A tool the
// file does not name gets an entry; one it names with the pack's
// write_params and a list of allowed_path_prefixes gets the directories it
// lacks; one it configures otherwise is left alone, and Left says so, as
// it says of every prefix already in the file that covers a guarded path.
func Extend(path string, old []byte, c Confinement) (Edit, error) {
	dirs := c.Dirs
	e := Edit{Path: path, Old: old, New: old}
	dir := filepath.Dir(path)
	abs := func(p string) string {
		if filepath.IsAbs(p) {
			return filepath.Clean(p)
		}
		return filepath.Join(dir, p)
	}
	for _, d := range dirs {
		if g := Covered([]string{abs(d)}, c.Guarded); len(g) > 0 {
			return e, fmt.Errorf("bouncer init was about to confine writes to %s, which holds %s (a bug; nothing written)", d, strings.Join(g, ", "))
		}
	}
	tools, params, err := writeTools(FilesystemPack)
	if err != nil {
		return e, err
	}
	var oldPol *policy.Policy
	if old != nil {
		if oldPol, err = policy.LoadSources(policy.Source{Name: path, Dir: dir, Data: old}); err != nil {
			return e, err
		}
		for _, tool := range tools {
			t, ok := oldPol.Lookup(tool)
			if !ok {
				continue
			}
			if g := Covered(t.AllowedPathPrefixes, c.Guarded); len(g) > 0 {
				e.Left = append(e.Left, fmt.Sprintf("%s (%s): its allowed_path_prefixes cover %s, another server's policy or Bouncer's state directory: a server that may write there can loosen another server's rules. Name what it may write instead (the entries beside them), as init does for a new policy",
					tool, t.Source, someOf(g)))
			}
		}
	}
	if len(dirs) == 0 && !c.Refuse {
		return e, nil
	}
	text := old
	if text == nil {
		text = []byte(Header)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(text, &doc); err != nil {
		return e, fmt.Errorf("%s: %v", path, err)
	}
	var top *yaml.Node
	if len(doc.Content) > 0 && doc.Content[0].Kind == yaml.MappingNode {
		top = doc.Content[0]
	}
	var appendText strings.Builder
	type insert struct {
		line int // insert before this 1-based line (len+1: at the end)
		text string
	}
	var inserts []insert
	lines := strings.SplitAfter(string(text), "\n")
	added := map[string]bool{} // tools init writes an entry for
	for _, tool := range tools {
		var entry *yaml.Node
		var keyLine int
		if top != nil {
			for i := 0; i+1 < len(top.Content); i += 2 {
				if top.Content[i].Value == tool {
					entry, keyLine = top.Content[i+1], top.Content[i].Line
				}
			}
		}
		added[tool] = entry == nil
		var key, wps string
		if entry == nil {
			// One writer for YAML text (yamlstrict): what it writes reads
			// back as the same strings under the strict dialect.
			var err error
			if key, err = yamlstrict.Key(tool, yamlstrict.Scalar); err != nil {
				return e, fmt.Errorf("%s: %w", path, err)
			}
			if wps, err = yamlstrict.Flow(params[tool], yamlstrict.Scalar); err != nil {
				return e, fmt.Errorf("%s: %w", path, err)
			}
		}
		if entry == nil && len(dirs) == 0 {
			fmt.Fprintf(&appendText, "\n%s:\n  write_params: %s\n  max_calls: 0\n", key, wps)
			e.Added = append(e.Added, fmt.Sprintf("%s: refused (max_calls: 0)", tool))
			continue
		}
		if entry == nil {
			fmt.Fprintf(&appendText, "\n%s:\n  write_params: %s\n  allowed_path_prefixes:\n", key, wps)
			for _, d := range dirs {
				q, err := yamlstrict.Scalar(d)
				if err != nil {
					return e, fmt.Errorf("%s: %w", path, err)
				}
				fmt.Fprintf(&appendText, "    - %s\n", q)
			}
			e.Added = append(e.Added, fmt.Sprintf("%s: writes confined to %s", tool, strings.Join(dirs, ", ")))
			continue
		}
		where := fmt.Sprintf("%s:%d", path, keyLine)
		if len(dirs) == 0 {
			// Named already, and there is nothing to add to it: say so if
			// it lets the server write anywhere.
			if t, ok := oldPol.Lookup(tool); oldPol != nil && ok && len(t.AllowedPathPrefixes) == 0 && (t.MaxCalls == nil || *t.MaxCalls != 0) {
				e.Left = append(e.Left, fmt.Sprintf("%s (%s) is configured in a way init leaves alone, and does not confine the filesystem server's writes; its directories are Bouncer's state directory or another server's policy: set max_calls: 0 there, or name in allowed_path_prefixes what it may write", tool, where))
			}
			continue
		}
		wp, prefixes, other := toolKeys(entry)
		if other != "" || wp == nil || !sameList(wp, params[tool]) || prefixes == nil {
			e.Left = append(e.Left, fmt.Sprintf("%s (%s) is configured in a way init leaves alone; add %s to its allowed_path_prefixes there to confine the filesystem server's writes", tool, where, strings.Join(dirs, ", ")))
			continue
		}
		var missing []string
		for _, d := range dirs {
			covered := false
			for _, it := range prefixes.Content {
				if pathtree.Within(abs(d), abs(it.Value)) {
					covered = true
				}
			}
			if !covered {
				missing = append(missing, d)
			}
		}
		if len(missing) == 0 {
			continue
		}
		switch {
		case prefixes.Style&yaml.FlowStyle == 0 && len(prefixes.Content) > 0 && singleLine(prefixes.Content):
			last := prefixes.Content[len(prefixes.Content)-1]
			ind := strings.Repeat(" ", last.Column-1)
			if ln := lines[last.Line-1]; strings.HasPrefix(strings.TrimLeft(ln, " "), "- ") {
				ind = ln[:len(ln)-len(strings.TrimLeft(ln, " "))]
			}
			var b strings.Builder
			for _, d := range missing {
				q, err := yamlstrict.Scalar(d)
				if err != nil {
					return e, fmt.Errorf("%s: %w", path, err)
				}
				fmt.Fprintf(&b, "%s- %s\n", ind, q)
			}
			inserts = append(inserts, insert{last.Line + 1, b.String()})
		default:
			e.Left = append(e.Left, fmt.Sprintf("%s (%s): its allowed_path_prefixes is not a list init can add to; add %s there", tool, where, strings.Join(missing, ", ")))
			continue
		}
		e.Added = append(e.Added, fmt.Sprintf("%s: allowed_path_prefixes += %s", tool, strings.Join(missing, ", ")))
	}
	sort.SliceStable(inserts, func(i, j int) bool { return inserts[i].line < inserts[j].line })
	var out strings.Builder
	next := 0
	for i, ln := range lines {
		for next < len(inserts) && inserts[next].line == i+1 {
			out.WriteString(inserts[next].text)
			next++
		}
		out.WriteString(ln)
	}
	if s := out.String(); s != "" && !strings.HasSuffix(s, "\n") && (next < len(inserts) || appendText.Len() > 0) {
		out.WriteString("\n")
	}
	for ; next < len(inserts); next++ {
		out.WriteString(inserts[next].text)
	}
	if appendText.Len() > 0 {
		switch {
		case len(dirs) == 0:
			out.WriteString("\n# Added by bouncer init: the filesystem server's directories are Bouncer's state\n" +
				"# directory or another server's policy, which it must not write, so its writes are\n" +
				"# refused. To let it write, replace max_calls: 0 with allowed_path_prefixes naming\n" +
				"# what it may write (a subdirectory, say).")
		case old != nil:
			out.WriteString("\n# Added by bouncer init: the filesystem server's writes stay in its own directories.")
		}
		if len(dirs) > 0 && c.Listed && old == nil {
			out.WriteString("\n# They name what the directories hold but another server's policy and Bouncer's\n" +
				"# state directory, which a server that can write must not reach: a new entry at\n" +
				"# a level listed here is refused until you add it.")
		}
		out.WriteString(appendText.String())
	}
	e.New = []byte(out.String())
	// What was written must load, and must confine what it says it does;
	// anything else is a bug here, and writing it would be worse.
	pol, err := policy.LoadSources(policy.Source{Name: path, Dir: dir, Data: e.New})
	if err != nil {
		return e, fmt.Errorf("bouncer init made a policy that does not load (a bug; nothing written): %v", err)
	}
	for _, tool := range tools {
		t, _ := pol.Lookup(tool)
		for _, d := range dirs {
			if t != nil && len(t.AllowedPathPrefixes) > 0 && !pathtree.WithinAny(abs(d), t.AllowedPathPrefixes) && !leftAlone(e.Left, tool) {
				return e, fmt.Errorf("bouncer init made a policy that does not confine %s to %s (a bug; nothing written)", tool, d)
			}
		}
		if added[tool] && (t == nil || len(t.AllowedPathPrefixes) == 0 && (t.MaxCalls == nil || *t.MaxCalls != 0)) {
			return e, fmt.Errorf("bouncer init made a policy that leaves %s unconfined (a bug; nothing written)", tool)
		}
	}
	if old != nil && bytes.Equal(e.New, old) {
		e.New = old
	}
	return e, nil
}

func leftAlone(left []string, tool string) bool {
	for _, l := range left {
		if strings.HasPrefix(l, tool+" ") {
			return true
		}
	}
	return false
}

// toolKeys returns an entry's write_params and allowed_path_prefixes, and
// the name of any other key it has.
func toolKeys(entry *yaml.Node) (wp []string, prefixes *yaml.Node, other string) {
	if entry.Kind != yaml.MappingNode {
		return nil, nil, "(not a mapping)"
	}
	for i := 0; i+1 < len(entry.Content); i += 2 {
		k, v := entry.Content[i].Value, entry.Content[i+1]
		switch k {
		case "write_params":
			if v.Kind != yaml.SequenceNode {
				return nil, nil, k
			}
			for _, it := range v.Content {
				wp = append(wp, it.Value)
			}
		case "allowed_path_prefixes":
			if v.Kind != yaml.SequenceNode || v.Anchor != "" || v.Alias != nil {
				return nil, nil, k
			}
			prefixes = v
		default:
			other = k
		}
	}
	return wp, prefixes, other
}

func singleLine(items []*yaml.Node) bool {
	for _, it := range items {
		if it.Kind != yaml.ScalarNode || strings.ContainsAny(it.Value, "\n") || it.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
			return false
		}
	}
	return true
}

func sameList(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// someOf names guarded paths for a message: those that exist (all of them
// when none does), at most four.
func someOf(paths []string) string {
	var exist []string
	for _, p := range paths {
		if _, err := os.Lstat(p); err == nil {
			exist = append(exist, p)
		}
	}
	if len(exist) == 0 {
		exist = paths
	}
	if len(exist) > 4 {
		return fmt.Sprintf("%s and %d more", strings.Join(exist[:4], ", "), len(exist)-4)
	}
	return strings.Join(exist, ", ")
}
