package session

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/bouncer-mcp/bouncer/internal/dest"
	"github.com/bouncer-mcp/bouncer/internal/statefile"
	"github.com/bouncer-mcp/bouncer/internal/vouch"
)

// RememberedFile is the name, in the state directory, of the destinations
// humans chose to remember.
const RememberedFile = vouch.RememberedFile

// Limits on what is remembered: a hijacked agent can't add entries (only a
// human at a terminal or the client's own question can), but the file is
// read on every decision and must stay small.
const (
	MaxRemembered     = 10000
	MaxRememberedDest = 4096
	// MaxRememberedFile bounds the file: what MaxRemembered entries of a
	// usual length take, with room. A longer file is refused whole (so
	// nothing is vouched for by it), never read in part.
	MaxRememberedFile = 16 << 20
)

// Entry is one remembered destination: allowed for every send through
// Server from now on, even when a server's output holds it too.
type Entry struct {
	Server      string    `json:"server"`
	Destination string    `json:"destination"`
	Added       time.Time `json:"added"`
	// Via says how the human vouched: "approve", "trust add", "client".
	Via string `json:"via"`
}

// Remembered is the file of remembered destinations. It is re-read when it
// changes, so a `bouncer trust add` reaches running proxies at their next
// decision.
type Remembered struct {
	path string

	mu      sync.Mutex
	size    int64
	mtime   time.Time
	entries []Entry
	err     error
}

// OpenRemembered returns the remembered destinations of a state directory.
func OpenRemembered(stateDir string) *Remembered {
	return &Remembered{path: filepath.Join(stateDir, RememberedFile)}
}

// Path is the file's path.
func (r *Remembered) Path() string { return r.path }

// Has reports whether d is remembered for server: the same destination in
// its canonical form (dest.Same), nothing looser. A file that can't be
// read remembers nothing.
func (r *Remembered) Has(server, d string) bool {
	entries, _ := r.List()
	for _, e := range entries {
		if e.Server == server && dest.Same(e.Destination, d) {
			return true
		}
	}
	return false
}

// List returns the remembered destinations, re-reading the file if it
// changed.
func (r *Remembered) List() ([]Entry, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	st, err := os.Stat(r.path)
	if errors.Is(err, os.ErrNotExist) {
		r.entries, r.err, r.size, r.mtime = nil, nil, -1, time.Time{}
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if st.Size() == r.size && st.ModTime().Equal(r.mtime) {
		return r.entries, r.err
	}
	r.size, r.mtime = st.Size(), st.ModTime()
	r.entries, r.err = readRemembered(r.path)
	return r.entries, r.err
}

type rememberedFile struct {
	Version      int     `json:"version"`
	Destinations []Entry `json:"destinations"`
}

func readRemembered(path string) ([]Entry, error) {
	b, err := statefile.ReadOwned(path, MaxRememberedFile)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var f rememberedFile
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("%s: %w; fix or remove it (bouncer trust list shows it)", path, err)
	}
	if f.Version != 1 {
		return nil, fmt.Errorf("%s: version %d is not 1", path, f.Version)
	}
	return f.Destinations, nil
}

// Add remembers d for server. It is idempotent.
func (r *Remembered) Add(server, d, via string, now time.Time) error {
	if err := validEntry(server, d); err != nil {
		return err
	}
	return r.update(func(es []Entry) ([]Entry, error) {
		for _, e := range es {
			if e.Server == server && dest.Same(e.Destination, d) {
				return nil, nil
			}
		}
		if len(es) >= MaxRemembered {
			return nil, fmt.Errorf("%d destinations are remembered already; remove some with bouncer trust remove", len(es))
		}
		return append(es, Entry{Server: server, Destination: strings.Trim(d, " "), Added: now.UTC(), Via: via}), nil
	})
}

// Remove forgets d for server and reports whether it was remembered.
func (r *Remembered) Remove(server, d string) (bool, error) {
	found := false
	err := r.update(func(es []Entry) ([]Entry, error) {
		out := es[:0:0]
		for _, e := range es {
			if e.Server == server && (e.Destination == d || dest.Same(e.Destination, d)) {
				found = true
				continue
			}
			out = append(out, e)
		}
		if !found {
			return nil, nil
		}
		return out, nil
	})
	return found, err
}

// validEntry refuses what can't be remembered: a destination with no
// canonical form would never match (package dest), so remembering it
// would only look like a vouch.
func validEntry(server, d string) error {
	switch {
	case server == "":
		return errors.New("no server named")
	case strings.TrimSpace(d) == "":
		return errors.New("no destination given")
	case len(d) > MaxRememberedDest:
		return fmt.Errorf("destination is longer than %d bytes", MaxRememberedDest)
	}
	if _, err := dest.Parse(d); err != nil {
		return fmt.Errorf("destination %q can't be compared exactly (%v), so it can't be remembered; approve each send instead", d, err)
	}
	return nil
}

// update changes the file under an exclusive lock and replaces it whole.
func (r *Remembered) update(fn func([]Entry) ([]Entry, error)) error {
	unlock, err := statefile.Lock(r.path + ".lock")
	if err != nil {
		return fmt.Errorf("%s: %w", r.path, err)
	}
	defer unlock()
	var es []Entry
	if _, err := os.Stat(r.path); err == nil {
		if es, err = readRemembered(r.path); err != nil {
			return err
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	next, err := fn(es)
	if err != nil || next == nil {
		return err
	}
	sort.SliceStable(next, func(i, j int) bool {
		if next[i].Server != next[j].Server {
			return next[i].Server < next[j].Server
		}
		return next[i].Destination < next[j].Destination
	})
	b, err := json.MarshalIndent(rememberedFile{Version: 1, Destinations: next}, "", "  ")
	if err != nil {
		return err
	}
	if len(b) >= MaxRememberedFile {
		return fmt.Errorf("%s would grow past %d bytes; remove some with bouncer trust remove", r.path, MaxRememberedFile)
	}
	if err := statefile.Write(r.path, append(b, '\n')); err != nil {
		return fmt.Errorf("%s: %w", r.path, err)
	}
	return nil
}
