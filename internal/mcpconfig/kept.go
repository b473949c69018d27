package mcpconfig

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"

	"github.com/bouncer-mcp/bouncer/internal/jsonc"
	"github.com/bouncer-mcp/bouncer/internal/statefile"
)

// KeptFile is the state file, in Bouncer's state directory, that holds the
// original entries of the clients that refuse a key they don't know in a
// server entry (Client.KeepsOriginal): a JSON object from a config file's path
// (absolute, links resolved) to its blocks, each from a server's name to
// {"entry": TEXT}, the entry as the file had it, byte for byte.
const KeptFile = "upstreams.json"

// maxKept bounds what is read of KeptFile: a few entries per config.
const maxKept = 16 << 20

// Kept is where the original entries of a KeepsOriginal client's files are kept:
// KeptFile in the state directory State. Gemini CLI, for one, refuses to
// load a settings file with x-bouncer-upstream in a server entry, so
// there the wrapped entry holds only what the client knows, and `bouncer
// run --config FILE --server NAME`, `init --undo` and `status` find the
// original here. It is a state file (internal/statefile): 0600, written
// whole, and trusted only if it is this user's and no one else may write
// it, since it says what bouncer run starts. The zero Kept has no state
// directory: nothing is kept, and nothing is found.
type Kept struct {
	State string
}

type keptEntry struct {
	Entry string `json:"entry"`
}

// keptFiles is the whole of KeptFile: file, block, server.
type keptFiles map[string]map[string]map[string]keptEntry

// Path is KeptFile's path.
func (k Kept) Path() string { return filepath.Join(k.State, KeptFile) }

// keptKey is the key of a config file in KeptFile: its absolute path with
// links resolved, so that a dotfile manager's link and its target, or a
// relative --config and the absolute one init saw, name one file.
func keptKey(file string) string {
	abs, err := filepath.Abs(file)
	if err != nil {
		return filepath.Clean(file)
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		return r
	}
	return abs
}

func (k Kept) read() (keptFiles, error) {
	if k.State == "" {
		return nil, nil
	}
	b, err := statefile.ReadOwned(k.Path(), maxKept)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", k.Path(), err)
	}
	all := keptFiles{}
	if err := json.Unmarshal(b, &all); err != nil {
		return nil, fmt.Errorf("%s: %v (it holds the original entries of wrapped Gemini CLI servers; restore it from a backup, or rewrite those entries by hand)", k.Path(), err)
	}
	return all, nil
}

// of returns the entries kept for the config file, by block and server.
func (k Kept) of(file string) (map[string]map[string]keptEntry, error) {
	all, err := k.read()
	return all[keptKey(file)], err
}

// Record keeps in KeptFile what changes did to the config file: the
// original of each entry wrapped with Change.Kept set is kept, and that of
// each entry restored from it (Change.Kept set too) forgotten. init
// records a wrap before it writes the config, so that no wrapped entry
// is ever without its original, and an undo after.
func (k Kept) Record(file string, changes []Change) error {
	if !slices.ContainsFunc(changes, func(c Change) bool { return c.Kept != "" }) {
		return nil
	}
	if k.State == "" {
		return errors.New("no state directory to keep the original entries in")
	}
	all, err := k.read()
	if err != nil {
		return err
	}
	if all == nil {
		all = keptFiles{}
	}
	key := keptKey(file)
	blocks := all[key]
	if blocks == nil {
		blocks = map[string]map[string]keptEntry{}
	}
	for _, c := range changes {
		switch {
		case c.Kept == "":
		case c.Status == Wrapped:
			if blocks[c.Block] == nil {
				blocks[c.Block] = map[string]keptEntry{}
			}
			blocks[c.Block][c.Server] = keptEntry{Entry: c.Kept}
		case c.Status == Restored:
			delete(blocks[c.Block], c.Server)
			if len(blocks[c.Block]) == 0 {
				delete(blocks, c.Block)
			}
		}
	}
	if len(blocks) == 0 {
		delete(all, key)
	} else {
		all[key] = blocks
	}
	b, err := json.MarshalIndent(all, "", "  ")
	if err != nil {
		return err
	}
	if err := statefile.Dir(k.State); err != nil {
		return fmt.Errorf("state directory %s: %w", k.State, err)
	}
	if err := statefile.Write(k.Path(), append(b, '\n')); err != nil {
		return fmt.Errorf("%s: %w", k.Path(), err)
	}
	return nil
}

// original is a wrapped entry's original entry: under x-bouncer-upstream
// in the file, or kept in the state directory (Kept).
type original struct {
	n *jsonc.Node
	// data is the text n's offsets index: the file's, or the kept entry's.
	data []byte
	// kept is true for an entry kept in the state file keptIn, false for
	// one in the file.
	kept   bool
	keptIn string
	// at is the wrapped entry's key in the file, where problems of a kept
	// entry are named.
	at int
}

// originalOf returns the original entry of the wrapped entry m of block,
// or nil when m is not wrapped: the x-bouncer-upstream member, or, in a
// file of a client that keeps its originals in the state directory, the entry kept for it, provided m still launches
// `bouncer run --config ... --server NAME` as init wrote it (an entry the
// user replaced since is theirs, whatever is kept).
func (c *Config) originalOf(block string, m jsonc.Member) (*original, error) {
	if up, ok := m.Val.Get(UpstreamKey); ok {
		if up.Kind != jsonc.Object {
			return nil, c.errAt(up.Start, fmt.Sprintf("server %q: %s is not an object; restore the entry by hand (or from the .bak file)", m.Key, UpstreamKey))
		}
		return &original{n: up, data: c.data}, nil
	}
	k, ok := c.kept[block][m.Key]
	if !ok || !launchesConfig(m.Val, m.Key) {
		return nil, nil
	}
	data := []byte(k.Entry)
	n, err := jsonc.Parse(c.keptIn, data)
	if err == nil && n.Kind != jsonc.Object {
		err = errors.New("not an object")
	}
	if err != nil {
		return nil, c.errAt(m.KeyStart, fmt.Sprintf("server %q: its original entry, kept in %s, does not read (%v); restore the entry by hand (or from the .bak file)", m.Key, c.keptIn, err))
	}
	return &original{n: n, data: data, kept: true, keptIn: c.keptIn, at: m.KeyStart}, nil
}

// origErr is msg about the node n of the original entry o of server: at n
// in the file, or at the wrapped entry for one kept in the state
// directory. key names n ("args[1]").
func (c *Config) origErr(o *original, n *jsonc.Node, server, key, msg string) error {
	if !o.kept {
		return c.errAt(n.Start, fmt.Sprintf("server %q: %s.%s%s", server, UpstreamKey, key, msg))
	}
	return c.errAt(o.at, fmt.Sprintf("server %q: %s of its original entry (kept in %s)%s", server, key, o.keptIn, msg))
}

// text is the original entry as it stood in the file before it was
// wrapped, to put back: a kept one as kept; one under x-bouncer-upstream
// without the level of indentation the wrap added (m is the wrapped
// entry).
func (c *Config) text(o *original, m jsonc.Member) string {
	if o.kept {
		return string(o.data)
	}
	base := c.lineIndent(m.KeyStart)
	add := strings.TrimPrefix(c.lineIndent(c.memberKeyStart(m.Val, UpstreamKey)), base)
	return unindent(string(c.data[o.n.Start:o.n.End]), add)
}

// launchesConfig reports whether entry e launches `bouncer run` with
// --config and --server server: what init writes in place of an entry.
func launchesConfig(e *jsonc.Node, server string) bool {
	if !runsBouncer(e) {
		return false
	}
	args, _ := e.Get("args")
	if !allStrings(args) {
		return false
	}
	a := strs(args)
	return argAfter(a, "--config") != "" && argAfter(a, "--server") == server
}

// argAfter is the argument after the flag in args, "" when there is none.
func argAfter(args []string, flag string) string {
	for i := 0; i+1 < len(args); i++ {
		if args[i] == flag {
			return args[i+1]
		}
	}
	return ""
}
