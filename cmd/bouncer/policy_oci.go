package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/bouncer-mcp/bouncer/internal/bundle"
	"github.com/bouncer-mcp/bouncer/internal/distribute"
	"github.com/bouncer-mcp/bouncer/internal/pathtree"
	"github.com/bouncer-mcp/bouncer/internal/policy"
	"github.com/bouncer-mcp/bouncer/internal/setup"
	"github.com/bouncer-mcp/bouncer/internal/statefile"
)

// This file is `bouncer policy push` and `bouncer policy pull` (policy as an
// OCI artifact), and doctor's view of what pull installed. The artifact,
// the registry and the install layout are internal/distribute's; trust is
// internal/bundle's; whether a set loads, and how an installed set is
// verified before any command loads it (--policy-dir), is internal/setup's.
// This file wires them.

// registryTimeout bounds one push or pull, so a timer's pull never hangs.
const registryTimeout = 2 * time.Minute

// policyDirName is the default install directory in the state directory.
const policyDirName = "policy"

func registryOptions(plainHTTP bool) distribute.Options {
	return distribute.Options{PlainHTTP: plainHTTP, UserAgent: "bouncer/" + version}
}

func policyPush(args []string) error {
	fs, home := newFlags("policy push", policySynopsis)
	keyFile := fs.String("key", "", "sign the set with this unencrypted PKCS#8 PEM private `KEY`")
	setBundle := fs.String("set-bundle", "", "push with this `BUNDLE`: the set statement signed elsewhere (cosign attest-blob --statement, on what --print-statement prints), instead of --key")
	printStatement := fs.Bool("print-statement", false, "print the set statement for FILE... and REF, to be signed elsewhere, and push nothing")
	versionFlag := fs.String("version", "", "the set's version, an RFC 3339 `TIME` (default: now); pull never installs a set older than the one installed")
	expiresFlag := fs.String("expires", "", "the set expires this long after its version (`DURATION`: 30d, 720h) or at this RFC 3339 TIME; past it, pull refuses the set and run --policy-dir stops (default: never)")
	trust := fs.String("trust", "", "trust configuration `FILE` to check the set's bundle against before pushing (default $BOUNCER_HOME/trust.yaml, when there is one)")
	plain := fs.Bool("plain-http", false, "allow plain HTTP to the registry in REF (loopback registries never need it)")
	ops, done, st := parseOperands(fs, args)
	if done {
		return st
	}
	if len(ops) < 2 {
		return usageErr("%s", "policy push: give FILE... REF")
	}
	paths, ref := ops[:len(ops)-1], ops[len(ops)-1]
	if _, err := distribute.ParseReference(ref, *plain); err != nil {
		return usageErr("%s", "policy push: "+err.Error())
	}
	repo, _ := distribute.RepositoryOf(ref, *plain)
	switch n := btoi(*keyFile != "") + btoi(*setBundle != "") + btoi(*printStatement); {
	case n == 0:
		return usageErr("%s", "policy push: give --key KEY to sign the set, or --set-bundle BUNDLE with the set signed elsewhere (see --print-statement)")
	case n > 1:
		return usageErr("%s", "policy push: give one of --key, --set-bundle and --print-statement")
	case *setBundle != "" && *versionFlag != "":
		return usageErr("%s", "policy push: --version goes with --key or --print-statement; a --set-bundle carries its version in its statement")
	case *setBundle != "" && *expiresFlag != "":
		return usageErr("%s", "policy push: --expires goes with --key or --print-statement; a --set-bundle carries its expiry in its statement")
	}
	ver := time.Now()
	if *versionFlag != "" {
		var err error
		if ver, err = distribute.ParseVersion(*versionFlag); err != nil {
			return usageErr("policy push: --version: %v", err)
		}
		if err := distribute.CheckVersion(ver, time.Now()); err != nil {
			return usageErr("policy push: --version: %v", err)
		}
	}
	var expires time.Time
	if *expiresFlag != "" {
		var err error
		if expires, err = parseExpires(*expiresFlag, ver); err != nil {
			return usageErr("policy push: --expires: %v", err)
		}
	}
	var signer *bundle.Signer
	if *keyFile != "" {
		pemData, err := statefile.ReadFile(*keyFile, maxKeyFile)
		if err != nil {
			return badInput(fmt.Errorf("policy push: key: %v", err))
		}
		if signer, err = bundle.ParsePrivateKey(pemData); err != nil {
			return badInput(fmt.Errorf("policy push: key: %v", err))
		}
	}
	dir, err := stateDir(*home)
	if err != nil {
		return badInput(fmt.Errorf("%v", err))
	}

	// Read each file once; these bytes are what is signed, checked and
	// pushed.
	files := make([]distribute.File, 0, len(paths))
	srcs := make([]policy.Source, 0, len(paths))
	for _, p := range paths {
		if st, err := os.Stat(p); err != nil || !st.Mode().IsRegular() {
			if err == nil {
				err = errors.New("not a regular file")
			}
			return badInput(fmt.Errorf("policy push: %s: %v", p, err))
		}
		name := filepath.Base(p)
		if err := distribute.CheckName(name); err != nil {
			return badInput(fmt.Errorf("policy push: %s: %v", p, err))
		}
		data, err := policy.ReadFile(p)
		if err != nil {
			return badInput(fmt.Errorf("policy push: %s: %v", p, err))
		}
		files = append(files, distribute.File{Name: name, Data: data})
		abs, _ := filepath.Abs(p)
		srcs = append(srcs, policy.Source{Name: p, Dir: filepath.Dir(abs), Data: data})
	}
	// What pull would refuse is not signed or pushed: the set must load.
	if _, err := setup.Load(setup.Config{Sources: setup.Sources{Trust: *trust, StateDir: dir}, Extra: srcs}); err != nil {
		return badInput(fmt.Errorf("%v", err))
	}

	// The one signature covers the set: these files, in this order, for
	// this repository, at this version.
	var setJSON []byte
	switch {
	case *printStatement:
		stmt, err := distribute.NewStatement(repo, ver, expires, files)
		if err != nil {
			return badInput(fmt.Errorf("policy push: %v", err))
		}
		os.Stdout.Write(stmt)
		return nil
	case signer != nil:
		stmt, err := distribute.NewStatement(repo, ver, expires, files)
		if err != nil {
			return badInput(fmt.Errorf("policy push: %v", err))
		}
		if setJSON, err = signer.SignStatement(stmt); err != nil {
			return failed(fmt.Errorf("policy push: sign: %v", err))
		}
		errorf("signed the set: %d file(s), version %s, for %s", len(files), distribute.FormatVersion(ver), repo)
	default:
		if setJSON, err = statefile.ReadFile(*setBundle, distribute.MaxBundleSize); err != nil {
			return badInput(fmt.Errorf("policy push: --set-bundle %s: %v", *setBundle, err))
		}
		raw, err := bundle.PeekStatement(setJSON)
		if err != nil {
			return badInput(fmt.Errorf("policy push: --set-bundle %s: %v", *setBundle, err))
		}
		stmt, err := distribute.ParseStatement(raw)
		if err == nil {
			err = stmt.Match(repo, files)
		}
		if err != nil {
			return badInput(fmt.Errorf("policy push: --set-bundle %s: %v; sign the statement --print-statement prints for these files and this REF", *setBundle, err))
		}
		if err := distribute.CheckVersion(stmt.Version, time.Now()); err != nil {
			return badInput(fmt.Errorf("policy push: --set-bundle %s: %v", *setBundle, err))
		}
		if err := (distribute.Freshness{}).Check(stmt); err != nil {
			return badInput(fmt.Errorf("policy push: --set-bundle %s: %v; pull would refuse it: sign a new statement", *setBundle, err))
		}
		ver = stmt.Version
	}

	// Where this machine has a trust configuration with signers, the set's
	// bundle must verify under it, as pull will check it.
	t, err := bundle.LoadTrust(*trust, dir)
	switch {
	case errors.Is(err, bundle.ErrNoTrust):
	case err != nil:
		return badInput(fmt.Errorf("%v", err))
	case t.HasSigners():
		if _, err := setup.SetVerifier(t)(setJSON, files); err != nil {
			return failed(fmt.Errorf("policy push: the set's bundle: pull would refuse it: %v", err))
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), registryTimeout)
	defer cancel()
	digest, err := distribute.Push(ctx, ref, files, setJSON, registryOptions(*plain))
	if err != nil {
		return failed(fmt.Errorf("policy push: %s: %v", ref, err))
	}
	fmt.Fprintf(os.Stdout, "%s@%s\n", repo, digest)
	errorf("pushed %d file(s), version %s, to %s", len(files), distribute.FormatVersion(ver), ref)
	return nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func policyPull(args []string) error {
	fs, home := newFlags("policy pull", policySynopsis)
	trust := fs.String("trust", "", "trust configuration `FILE` (default $BOUNCER_HOME/trust.yaml, with /etc/bouncer/trust.yaml always applied when present)")
	dirFlag := fs.String("dir", "", "install into `DIR` (default $BOUNCER_HOME/policy)")
	plain := fs.Bool("plain-http", false, "allow plain HTTP to the registry in REF (loopback registries never need it)")
	allowDowngrade := fs.Bool("allow-downgrade", false, "install the set even if it is older (a lower version) than the newest one installed in DIR")
	ops, done, st := parseOperands(fs, args)
	if done {
		return st
	}
	if len(ops) > 1 {
		return usageErr("%s", "policy pull: give at most one REF")
	}
	sdir, err := stateDir(*home)
	if err != nil {
		return badInput(fmt.Errorf("%v", err))
	}
	t, err := bundle.LoadTrust(*trust, sdir)
	if errors.Is(err, bundle.ErrNoTrust) {
		return badInput(fmt.Errorf("policy pull: %v; it must name keys (or identities and trusted_root): unsigned policy from a registry is never installed", err))
	}
	if err != nil {
		return badInput(fmt.Errorf("%v", err))
	}
	if !t.HasSigners() {
		return badInput(fmt.Errorf("policy pull: %s names no signer; set keys (or identities and trusted_root) there: unsigned policy from a registry is never installed", joinFiles(t.Files())))
	}
	ref, source := "", ""
	if len(ops) == 1 {
		ref = ops[0]
	} else if ref, source = t.PolicyArtifact(); ref == "" {
		return usageErr("%s", fmt.Sprintf("policy pull: give REF, or set policy_artifact in %s", joinFiles(t.Files())))
	}
	if _, err := distribute.ParseReference(ref, *plain); err != nil {
		if source != "" {
			return badInput(fmt.Errorf("%s: policy_artifact: %v", source, err))
		}
		return usageErr("%s", "policy pull: "+err.Error())
	}

	installDir := *dirFlag
	if installDir == "" {
		if err := ensureStateDir(sdir); err != nil {
			return failed(fmt.Errorf("%v", err))
		}
		installDir = filepath.Join(sdir, policyDirName)
	}
	installDir, err = filepath.Abs(installDir)
	if err != nil {
		return badInput(fmt.Errorf("%v", err))
	}

	ctx, cancel := context.WithTimeout(context.Background(), registryTimeout)
	defer cancel()
	a, err := distribute.Fetch(ctx, ref, setup.SetVerifier(t), registryOptions(*plain))
	if err != nil {
		return failed(fmt.Errorf("policy pull: %s: %v; nothing was installed", ref, err))
	}
	// Signed is not enough: a set this binary can't load (as run loads
	// it: the policy and its sandbox key) would stop every run that uses
	// it. Keep the set that loads.
	srcs := make([]policy.Source, len(a.Files))
	for i, f := range a.Files {
		srcs[i] = policy.Source{Name: f.Name, Dir: installDir, Data: f.Data}
	}
	if _, err := setup.Load(setup.Config{Sources: setup.Sources{Trust: *trust, StateDir: sdir}, Extra: srcs}); err != nil {
		return failed(fmt.Errorf("policy pull: %s: signed, but this bouncer can't load it: %v; nothing was installed", a.Pinned(), err))
	}
	fresh := setup.Freshness(t)
	res, err := distribute.Install(installDir, a, distribute.InstallOptions{
		Private: pathtree.Within(installDir, sdir), Now: time.Now(), AllowDowngrade: *allowDowngrade,
		MaxAge: fresh.MaxAge, MaxAgeSource: fresh.Source})
	if errors.Is(err, distribute.ErrRollback) {
		return failed(fmt.Errorf("policy pull: %s: %v; nothing was installed (if going back is what you mean, give --allow-downgrade)", a.Pinned(), err))
	}
	if err != nil {
		return failed(fmt.Errorf("policy pull: %s: %v; nothing was installed", a.Pinned(), err))
	}
	names := make([]string, len(a.Files))
	for i, f := range a.Files {
		names[i] = f.Name
	}
	what := fmt.Sprintf("%s (%s), version %s, in %s", a.Pinned(), strings.Join(names, ", "), distribute.FormatVersion(a.Statement.Version), installDir)
	if at, why := fresh.Expiry(a.Statement); !at.IsZero() {
		what += fmt.Sprintf("; expires %s, %s", distribute.FormatVersion(at), why)
	}
	if res.Unchanged {
		fmt.Fprintf(os.Stdout, "up to date: %s\n", what)
		return nil
	}
	fmt.Fprintf(os.Stdout, "installed %s\n", what)
	return nil
}

// parseExpires reads --expires: a length of time after the set's version
// (30d, 720h), or an RFC 3339 time. The expiry must be after the version
// and still ahead: a set already expired would be refused by every pull.
func parseExpires(s string, version time.Time) (time.Time, error) {
	at, err := distribute.ParseVersion(s)
	if d, derr := bundle.ParseAge(s); derr == nil {
		at, err = version.Add(d), nil
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is neither a length of time (30d, 720h) nor an RFC 3339 time (2026-12-01T00:00:00Z)", s)
	}
	switch {
	case !at.After(version):
		return time.Time{}, fmt.Errorf("%s is not after the set's version %s", distribute.FormatVersion(at), distribute.FormatVersion(version))
	case !at.After(time.Now()):
		return time.Time{}, fmt.Errorf("%s is past already: every pull would refuse the set", distribute.FormatVersion(at))
	}
	return at, nil
}

// policySetStatus is doctor's view of an install directory.
type policySetStatus struct {
	Dir       string    `json:"dir"`
	Ref       string    `json:"ref,omitempty"`
	Digest    string    `json:"digest,omitempty"`
	Version   time.Time `json:"version,omitzero"`
	Files     []string  `json:"files,omitempty"`
	Installed time.Time `json:"installed,omitzero"`
	// Expires is when the set stops being used (its own expiry, or the
	// trust file's max_age past its version); zero for never.
	Expires time.Time `json:"expires,omitzero"`
	Follows string    `json:"follows,omitempty"` // policy_artifact in the trust file
	Error   string    `json:"error,omitempty"`
	// Refused is set when a set is installed but is not as it was pulled
	// (or can't be verified); run --policy-dir would refuse it too.
	Refused bool `json:"refused,omitempty"`
}

// policySet checks the set installed in dir as run --policy-dir would,
// under trustFile.
func policySet(home, dir, trustFile string) *policySetStatus {
	sdir, err := stateDir(home)
	if err != nil {
		return &policySetStatus{Dir: dir, Error: err.Error()}
	}
	if dir == "" {
		dir = filepath.Join(sdir, policyDirName)
	}
	st := &policySetStatus{Dir: dir}
	t, terr := bundle.LoadTrust(trustFile, sdir)
	if terr == nil {
		if ref, src := t.PolicyArtifact(); ref != "" {
			st.Follows = ref + " (" + src + ")"
		}
	}
	set, err := distribute.ReadInstalled(dir)
	if err != nil {
		if errors.Is(err, distribute.ErrNotInstalled) {
			st.Error = "none installed"
		} else {
			st.Error, st.Refused = err.Error(), true
		}
		return st
	}
	st.Ref, st.Digest, st.Version, st.Files, st.Installed = set.Ref, set.Digest, set.Version, set.Files, set.Installed
	if terr != nil && !errors.Is(terr, bundle.ErrNoTrust) {
		st.Error = terr.Error()
	} else if vs, err := setup.VerifyInstalled(dir, t); err != nil {
		// The check run --policy-dir makes (setup.LoadPolicy); with no
		// trust file, t names no signer and the set is refused.
		st.Error = err.Error()
	} else {
		st.Expires, _ = setup.Freshness(t).Expiry(vs.Statement)
	}
	st.Refused = st.Error != ""
	return st
}

// verdict is doctor's exit: 2 when run --policy-dir would refuse the set
// installed, saying so once more on stderr.
func (s *policySetStatus) verdict() error {
	if !s.Refused {
		return nil
	}
	return badInput(fmt.Errorf("doctor: the policy set in %s is refused: %s", s.Dir, s.Error))
}

func (s *policySetStatus) lines() []string {
	out := []string{}
	if s.Digest != "" {
		out = append(out, fmt.Sprintf("policy set:    %s: %s from %s, version %s, installed %s (%s)", s.Dir, s.Digest, s.Ref,
			distribute.FormatVersion(s.Version), s.Installed.Local().Format(time.RFC3339), strings.Join(s.Files, ", ")))
	}
	if !s.Expires.IsZero() {
		out = append(out, fmt.Sprintf("policy set:    %s: expires %s (pull a newer set before then)", s.Dir, distribute.FormatVersion(s.Expires)))
	}
	switch {
	case s.Refused:
		out = append(out, fmt.Sprintf("policy set:    %s: refused: %s", s.Dir, s.Error))
	case s.Error != "":
		out = append(out, fmt.Sprintf("policy set:    %s: %s", s.Dir, s.Error))
	}
	if s.Follows != "" {
		out = append(out, "policy pull:   follows "+s.Follows)
	}
	return out
}
