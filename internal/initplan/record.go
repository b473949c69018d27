package initplan

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"

	"github.com/bouncer-mcp/bouncer/internal/hooks"
	"github.com/bouncer-mcp/bouncer/internal/statefile"
)

// RecordFile is the file in the state directory where init keeps what it
// added to each hook file: a JSON object from the hook file's path to
// hooks.Added.
const RecordFile = "init.json"

// maxRecord bounds what is read of the record. It holds, per hook file,
// a few rules and at most that file as init created it: far less.
const maxRecord = 16 << 20

// Record is init's record in the state directory State: what it added to
// each hook file, so that --undo removes that and nothing the user had.
// It is a state file (internal/statefile): written whole, and trusted
// only if it is this user's and no one else may write it, since it says
// what undo removes from the user's files.
type Record struct {
	State string
}

func (r Record) path() string { return filepath.Join(r.State, RecordFile) }

// Get returns what init recorded adding to the hook file at path; nothing
// when there is no record.
func (r Record) Get(path string) (hooks.Added, error) {
	all, err := r.read()
	return all[path], err
}

// Update changes what is recorded for the hook file at path by f, and
// forgets the file when nothing is left.
func (r Record) Update(path string, f func(*hooks.Added)) error {
	all, err := r.read()
	if err != nil {
		return err
	}
	if all == nil {
		all = map[string]hooks.Added{}
	}
	a := all[path]
	f(&a)
	if a.Empty() && !a.Config {
		delete(all, path)
	} else {
		all[path] = a
	}
	b, err := json.MarshalIndent(all, "", "  ")
	if err != nil {
		return err
	}
	if err := statefile.Dir(r.State); err != nil {
		return fmt.Errorf("state directory %s: %w", r.State, err)
	}
	if err := statefile.Write(r.path(), append(b, '\n')); err != nil {
		return fmt.Errorf("%s: %w", r.path(), err)
	}
	return nil
}

// Files lists the hook files init recorded adding to, and the MCP configs
// whose servers it wrapped, in name order: Bouncer's own files, for every
// proxy (setup.InitFiles).
func (r Record) Files() ([]string, error) {
	all, err := r.read()
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(all))
	for f := range all {
		out = append(out, f)
	}
	sort.Strings(out)
	return out, nil
}

// Forget drops what is recorded for the hook file at path.
func (r Record) Forget(path string) error {
	return r.Update(path, func(a *hooks.Added) { *a = hooks.Added{} })
}

// Wrapped records whether the MCP config at path (absolute) has servers
// init wrapped.
func (r Record) Wrapped(path string, wrapped bool) error {
	return r.Update(path, func(a *hooks.Added) { a.Config = wrapped })
}

// read returns the whole record; nil when there is none.
func (r Record) read() (map[string]hooks.Added, error) {
	b, err := statefile.ReadOwned(r.path(), maxRecord)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", r.path(), err)
	}
	all := map[string]hooks.Added{}
	if err := json.Unmarshal(b, &all); err != nil {
		return nil, fmt.Errorf("%s: %v", r.path(), err)
	}
	return all, nil
}
