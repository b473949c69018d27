package initplan

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/bouncer-mcp/bouncer/internal/mcpconfig"
	"github.com/bouncer-mcp/bouncer/internal/protect"
)

// Wrapping is what init is to write for one config, worked out before it
// asks: the config's new text and the policy file its entries load.
type Wrapping struct {
	// Out is the config's new text, Changes what it does to each entry.
	Out     []byte
	Changes []mcpconfig.Change
	// Rewrite is true when the config changes: an entry is wrapped, or
	// its command updated.
	Rewrite bool
	// PolicyFile is the policy file the entries load, Policy its edit
	// (protect.Extend); WritePolicy is true when it is to be written.
	PolicyFile  string
	Policy      protect.Edit
	WritePolicy bool
	// Notes say which of the filesystem servers' directories are not
	// confined, and why.
	Notes []string
	// KeptOut is, per server, what of its directories its writes are kept
	// from (for Summary.KeptOut).
	KeptOut map[string][]string
}

// Wrap works out what init writes for config t, read as cfg, whose
// entries are to launch command (Launcher.Command): every selected entry
// wrapped (and those wrapped before whose command relaunch says is to be
// replaced, pointed at command), naming the policy file (PolicyFile) in
// which the filesystem servers' directories confine their writes
// (Confine). The policy file is written when it would change and is of
// use: the config changes, it exists already, or it confines something.
// An error is a problem with the config or the policy file, which names
// it.
func (p *Plan) Wrap(t mcpconfig.Found, cfg *mcpconfig.Config, command string, relaunch func(cur string) bool) (*Wrapping, error) {
	abs, err := filepath.Abs(t.Path)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", t.Path, err)
	}
	w := &Wrapping{PolicyFile: p.PolicyFile(t)}
	servers, err := cfg.Servers(t.Project)
	if err != nil {
		return nil, err
	}
	c := p.Confine(t, cfg, servers, w.PolicyFile, p.Guarded(w.PolicyFile))
	w.Notes, w.KeptOut = c.Notes, c.KeptOut
	oldPol, err := os.ReadFile(w.PolicyFile)
	if errors.Is(err, fs.ErrNotExist) {
		oldPol, err = nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %v", w.PolicyFile, err)
	}
	if w.Policy, err = protect.Extend(w.PolicyFile, oldPol, c.Confinement); err != nil {
		return nil, err
	}
	if w.Policy.New == nil && (p.Policy != "" || t.Workspace == "") {
		// The file the entries name must exist: the one --policy gives,
		// or the user's own policy, which every user file's entries load
		// whatever order init finds the files in, so that a rule the user
		// adds there later reaches them all.
		w.Policy.New = []byte(protect.Header)
	}
	usePolicy := w.Policy.New != nil
	opts := mcpconfig.WrapOptions{
		Servers: p.Servers, Project: t.Project, Command: command,
		ConfigArg: ProjectArg(t, abs), Remote: true, Workspace: t.Workspace,
		// Entries wrapped before that launch a bouncer that is gone, or
		// that the client can't find, launch this one now.
		Relaunch: relaunch,
	}
	if cfg.Client.KeepsOriginal() && t.Workspace == "" && filepath.Clean(p.State) != filepath.Join(p.Home, ".bouncer") {
		// The originals are kept in this state directory, which bouncer
		// run started by the client would not look in by default. A
		// project's file, which a team shares, names no path of this
		// machine: there $BOUNCER_HOME must be the same (docs/clients.md).
		opts.ExtraArgs = append(opts.ExtraArgs, "--home", p.State)
	}
	if usePolicy {
		opts.ExtraArgs = append(opts.ExtraArgs, "--policy", ProjectArg(t, w.PolicyFile))
	}
	if w.Out, w.Changes, err = cfg.Wrap(opts); err != nil {
		return nil, err
	}
	for _, ch := range w.Changes {
		w.Rewrite = w.Rewrite || ch.Status == mcpconfig.Wrapped || ch.Status == mcpconfig.CommandUpdated
	}
	w.WritePolicy = usePolicy && w.Policy.Changed() && (w.Rewrite || oldPol != nil || len(c.Dirs) > 0 || c.Refuse)
	return w, nil
}
