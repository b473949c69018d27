package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// launcherPath is this very binary, even if it was replaced on disk since
// it started.
const launcherPath = "/proc/self/exe"

// Guarding is how Launch.Guard keeps the upstream off Bouncer's own files.
type Guarding struct {
	// Files are the own files.
	Files OwnFiles
	// Max is the strongest form to try (the policy's own_files; the
	// default is OwnNamespace), and Why says why it is below
	// OwnNamespace ("own_files: landlock at FILE:LINE").
	Max OwnForm
	Why string
	// Dir is the upstream's working directory ("": ours).
	Dir string
	// Strict refuses to fall back to the argument checks alone: bouncer
	// run --sandbox strict.
	Strict bool
	// Around returns what covers dir but the guarded paths
	// (protect.Around), for the landlock form.
	Around func(dir string, guarded []string) (cover, left []string)
}

// ownStart is where a Launch is in trying the own-files forms.
type ownStart struct {
	g       Guarding
	form    OwnForm  // the form being tried, then the one in force
	why     []string // why each stronger form is not in force
	missing []string
	status  ownStatus
	// statusR and statusW are the launcher's status pipe while a form is
	// tried: we read statusR, the launcher gets statusW as fd 3.
	statusR, statusW *os.File
	// probe has the launcher set up the form and exit (ProbeOwn).
	probe bool
}

// Direct is the Launch of an upstream that has no sandbox key: it runs as
// given, unless Guard puts the launcher in front of it.
func Direct(path string, args []string) *Launch {
	return &Launch{Path: path, Args: args, argv: append([]string{path}, args...)}
}

// Guard keeps the upstream off Bouncer's own files with the strongest form
// up to g.Max that this system offers. Forms known not to work here (no
// user namespaces, no Landlock) are skipped now, with the reason; the
// others are tried when the upstream starts (Command, Started, Fallback),
// since only trying shows what a container or an LSM refuses.
func (l *Launch) Guard(g Guarding) {
	o := &ownStart{g: g, form: g.Max}
	if g.Why != "" {
		o.why = append(o.why, g.Why)
	}
	if g.Max != OwnArguments {
		// Only a stronger form's note names the paths it could not pin
		// (OwnNote); argument checks pin nothing, and a walk of every
		// own path per start (bouncer listen starts one per session)
		// would be thrown away.
		o.missing = g.Files.Missing()
	}
	l.own = o
	for o.form != OwnArguments {
		why := formUnavailable(o.form)
		if why == "" {
			break
		}
		o.lower(why)
	}
}

// lower moves to the next weaker form, keeping why the current one is not
// in force.
func (o *ownStart) lower(why string) {
	o.why = append(o.why, fmt.Sprintf("%s refused: %s", formName(o.form), why))
	o.form--
}

// Form is the own-files form in force (or being tried).
func (l *Launch) Form() OwnForm {
	if l.own == nil {
		return OwnArguments
	}
	return l.own.form
}

// Command is the command line that starts the upstream with the form
// being tried, and what to set on its exec.Cmd (the namespaces, the
// launcher's status pipe) before it starts; setup is nil when there is
// nothing to set.
func (l *Launch) Command() (path string, args []string, setup func(*exec.Cmd), err error) {
	p := l.plan
	o := l.own
	if o == nil || o.form == OwnArguments {
		if !p.Confine {
			return l.argv[0], l.argv[1:], nil, nil
		}
		path, args, err = l.launcher(p)
		return path, args, nil, err
	}
	if o.form == OwnNamespace && seatbelt {
		return seatbeltCommand(o.g.Files, l.argv, p, l.launcher)
	}
	p.Own = &ownPlan{Form: o.form.String(), Hidden: o.g.Files.Hidden, ReadOnly: o.g.Files.ReadOnly, Dir: o.g.Dir, Probe: o.probe}
	if p.Own.Dir == "" {
		p.Own.Dir, _ = os.Getwd()
	}
	if o.form == OwnLandlock {
		p.Own.Around = o.cover()
	}
	path, args, err = l.launcher(p)
	if err != nil {
		return "", nil, nil, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return "", nil, nil, fmt.Errorf("sandbox: status pipe: %w", err)
	}
	o.statusR, o.statusW = r, w
	form := o.form
	return path, args, func(cmd *exec.Cmd) {
		cmd.ExtraFiles = []*os.File{w} // fd 3: statusFD
		if form == OwnNamespace {
			namespaceAttrs(cmd)
		}
	}, nil
}

// cover is what the landlock form grants whole.
func (o *ownStart) cover() []string {
	if o.g.Around == nil {
		return nil
	}
	cover, _ := o.g.Around("/", append(append([]string(nil), o.g.Files.Hidden...), o.g.Files.ReadOnly...))
	return cover
}

// statusFD is the launcher's end of the status pipe.
const statusFD = 3

// Started reads what the launcher says once it has set up the form being
// tried: nil when the form is in force, else why not (the launcher has
// then exited without starting the server; call Fallback).
func (l *Launch) Started() error {
	o := l.own
	if o == nil || o.statusR == nil {
		return nil
	}
	o.statusW.Close()
	r := o.statusR
	o.statusR, o.statusW = nil, nil
	defer r.Close()
	_ = r.SetReadDeadline(time.Now().Add(30 * time.Second))
	b, err := io.ReadAll(io.LimitReader(r, 64<<10))
	if err != nil {
		return fmt.Errorf("no word from the launcher: %w", err)
	}
	if len(b) == 0 {
		return errors.New("the launcher stopped before it said what it set up")
	}
	var st ownStatus
	if err := json.Unmarshal(b, &st); err != nil {
		return fmt.Errorf("the launcher said %q", b)
	}
	if st.Fail != "" {
		return errors.New(st.Fail)
	}
	o.status = st
	return nil
}

// Abandon closes what Command opened, for a start that failed.
func (l *Launch) Abandon() {
	if o := l.own; o != nil && o.statusR != nil {
		o.statusR.Close()
		o.statusW.Close()
		o.statusR, o.statusW = nil, nil
	}
}

// Fallback moves to the next weaker form after the form being tried failed
// with err (the start failed, or Started said why). It reports false when
// there is none to move to: err then stands.
func (l *Launch) Fallback(err error) bool {
	o := l.own
	if o == nil || o.form == OwnArguments {
		return false
	}
	if o.form == OwnLandlock && o.g.Strict {
		return false
	}
	o.lower(err.Error())
	return true
}

// OwnNote says which form keeps the upstream off Bouncer's own files, and
// why no stronger one does, for the start line: "own files: mount namespace
// (state directory hidden, 5 paths read-only)", or "own files: argument
// checks only: --sandbox off".
func (l *Launch) OwnNote() string {
	if l.own == nil {
		return ownNote(OwnArguments, OwnFiles{}, nil, nil, ownStatus{})
	}
	o := l.own
	missing := o.missing
	if o.form == OwnArguments {
		missing = nil
	}
	return ownNote(o.form, o.g.Files, o.why, missing, o.status)
}

// formName names a form in the start line.
func formName(f OwnForm) string {
	switch f {
	case OwnNamespace:
		return namespaceName()
	case OwnLandlock:
		return "landlock"
	}
	return "argument checks"
}

// reportOwn writes the launcher's status line for the proxy: st, or the
// failure err. With err it returns errOwnSetup, and the launcher exits
// without starting the server; the proxy tries a weaker form.
func reportOwn(st ownStatus, err error) error {
	return writeStatus(os.NewFile(statusFD, "status"), st, err)
}

// writeStatus writes st, or the failure err, on the status pipe f and
// closes it; with err it returns errOwnSetup.
func writeStatus(f *os.File, st ownStatus, err error) error {
	if err != nil {
		st = ownStatus{Fail: err.Error()}
	}
	b, _ := json.Marshal(st)
	_, werr := f.Write(append(b, '\n'))
	f.Close()
	if err != nil {
		if werr != nil {
			return err // nobody to tell but stderr
		}
		return errOwnSetup
	}
	return nil
}

// errOwnSetup: the launcher told the proxy why the form failed; it exits
// quietly.
var errOwnSetup = errors.New("own files form failed")

// ProbeOwn says which form bouncer run would keep a server off Bouncer's
// own files with, here and now, and why no stronger one: it starts the
// launcher in each form in turn with nothing to protect, as bouncer run
// would, and stops at the first that sets up (bouncer doctor).
func ProbeOwn() (OwnForm, []string) {
	l := Direct(launcherPath, nil)
	l.Guard(Guarding{Max: OwnNamespace})
	o := l.own
	for o.form != OwnArguments && !(o.form == OwnNamespace && seatbelt) {
		err := probeOnce(l)
		if err == nil {
			break
		}
		o.lower(err.Error())
	}
	return o.form, o.why
}

func probeOnce(l *Launch) error {
	l.own.probe = true
	path, args, setup, err := l.Command()
	if err != nil {
		return err
	}
	cmd := exec.Command(path, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{}
	if setup != nil {
		setup(cmd)
	}
	if err := cmd.Start(); err != nil {
		l.Abandon()
		return err
	}
	err = l.Started()
	_ = cmd.Wait()
	return err
}
