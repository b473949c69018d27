package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"path/filepath"
	"sort"
	"strings"

	"github.com/bouncer-mcp/bouncer/internal/policy"
	"github.com/bouncer-mcp/bouncer/internal/statefile"
)

// PinnedDir is the directory, in the state directory, where `bouncer run`
// keeps the tool list it pinned for each server, so that `bouncer report`
// can show every tool without a --tools file.
const PinnedDir = "tools"

// PinnedPath is the file holding server's pinned tool list.
func PinnedPath(stateDir, server string) string {
	return filepath.Join(stateDir, PinnedDir, url.PathEscape(server)+".json")
}

// MaxPinnedFile bounds a saved tool list. A longer one is neither
// written nor read (statefile.ReadOwned refuses it whole).
const MaxPinnedFile = 64 << 20

// SavePinned writes the tool list a proxy pinned for server, as a
// tools/list result (statefile.Write: 0600, whole, on disk), with the
// built-in pack that applied to the server ("" for none) beside it, so
// that the pack describes each server's tools under that server's pack.
func SavePinned(stateDir, server, pack string, tools []json.RawMessage) error {
	if tools == nil {
		tools = []json.RawMessage{}
	}
	b, err := json.Marshal(struct {
		Tools []json.RawMessage `json:"tools"`
		Pack  string            `json:"bouncerPack,omitempty"`
	}{tools, pack})
	if err != nil {
		return err
	}
	path := PinnedPath(stateDir, server)
	if len(b) > MaxPinnedFile {
		return fmt.Errorf("%s: not written: %d bytes, more than %d MiB", path, len(b), MaxPinnedFile>>20)
	}
	if err := statefile.Dir(filepath.Dir(path)); err != nil {
		return fmt.Errorf("%s: %w", filepath.Dir(path), err)
	}
	if err := statefile.Write(path, b); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// LoadPinned reads the saved tool lists: server's only, or every server's
// when server is "". Files that can't be read, or that another user owns
// or may write (statefile.ReadOwned: they could hide a tool from the
// review), are skipped with an error naming them.
func LoadPinned(stateDir, server string) ([]ToolList, error) {
	var paths []string
	if server != "" {
		paths = []string{PinnedPath(stateDir, server)}
	} else {
		paths, _ = filepath.Glob(filepath.Join(stateDir, PinnedDir, "*.json"))
		sort.Strings(paths)
	}
	var out []ToolList
	var problems []string
	for _, p := range paths {
		data, err := statefile.ReadOwned(p, MaxPinnedFile)
		if errors.Is(err, fs.ErrNotExist) && server != "" {
			continue
		}
		if err == nil {
			var tools []ToolDef
			if tools, err = ParseTools(data); err == nil {
				var saved struct {
					Pack string `json:"bouncerPack"`
				}
				_ = json.Unmarshal(data, &saved)
				if saved.Pack != "" && policy.CheckPack(saved.Pack) != nil {
					saved.Pack = "" // not this binary's: described by no pack, as its lines say
				}
				name, _ := url.PathUnescape(strings.TrimSuffix(filepath.Base(p), ".json"))
				out = append(out, ToolList{Server: name, File: p, Tools: tools, Pack: saved.Pack})
				continue
			}
		}
		problems = append(problems, fmt.Sprintf("%s: %v", p, err))
	}
	if len(problems) > 0 {
		return out, fmt.Errorf("saved tool lists skipped: %s", strings.Join(problems, "; "))
	}
	return out, nil
}
