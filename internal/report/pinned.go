package report

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// PinnedDir is the directory, in the state directory, where `bouncer run`
// keeps the tool list it pinned for each server, so that `bouncer report`
// can show every tool without a --tools file.
const PinnedDir = "tools"

// PinnedPath is the file holding server's pinned tool list.
func PinnedPath(stateDir, server string) string {
	return filepath.Join(stateDir, PinnedDir, url.PathEscape(server)+".json")
}

// SavePinned writes the tool list a proxy pinned for server, as a
// tools/list result (0600, replaced whole).
func SavePinned(stateDir, server string, tools []json.RawMessage) error {
	if tools == nil {
		tools = []json.RawMessage{}
	}
	b, err := json.Marshal(struct {
		Tools []json.RawMessage `json:"tools"`
	}{tools})
	if err != nil {
		return err
	}
	path := PinnedPath(stateDir, server)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tools-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// LoadPinned reads the saved tool lists: server's only, or every server's
// when server is "". Files that can't be read are skipped with an error
// naming them.
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
		data, err := os.ReadFile(p)
		if os.IsNotExist(err) && server != "" {
			continue
		}
		if err == nil {
			var tools []ToolDef
			if tools, err = ParseTools(data); err == nil {
				name, _ := url.PathUnescape(strings.TrimSuffix(filepath.Base(p), ".json"))
				out = append(out, ToolList{Server: name, File: p, Tools: tools})
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
