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
	"github.com/bouncer-mcp/bouncer/internal/policy"
	"github.com/bouncer-mcp/bouncer/internal/setup"
)

// This file is `bouncer policy push` and `bouncer policy pull` (policy as an
// OCI artifact), and the two places that read what pull installed: run's
// --policy-dir and doctor. The artifact, the registry and the install
// layout are internal/distribute's; trust is internal/bundle's; whether a
// set loads is internal/policy's. This file wires them.

// registryTimeout bounds one push or pull, so a timer's pull never hangs.
const registryTimeout = 2 * time.Minute

// policyDirName is the default install directory in the state directory.
const policyDirName = "policy"

func registryOptions(plainHTTP bool) distribute.Options {
	return distribute.Options{PlainHTTP: plainHTTP, UserAgent: "bouncer/" + version}
}

func policyPush(args []string) error {
	fs, home := newFlags("policy push", policySynopsis)
	keyFile := fs.String("key", "", "sign each FILE with this unencrypted PKCS#8 PEM private `KEY` first (writes FILE.sigstore.json, as bouncer sign does)")
	trust := fs.String("trust", "", "trust configuration `FILE` to check the bundles against before pushing (default $BOUNCER_HOME/trust.yaml, when there is one)")
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
	var signer *bundle.Signer
	if *keyFile != "" {
		pemData, err := os.ReadFile(*keyFile)
		if err != nil {
			return badInput(fmt.Errorf("policy push: key: %v", err))
		}
		if signer, err = bundle.ParsePrivateKey(pemData); err != nil {
			return badInput(fmt.Errorf("policy push: key %s: %v", *keyFile, err))
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
		var b []byte
		if signer != nil {
			var bp string
			if b, bp, err = signer.SignBytes(p, data); err != nil {
				return failed(fmt.Errorf("policy push: sign: %v", err))
			}
			errorf("signed %s -> %s", p, bp)
		} else {
			bp := bundle.BundlePath(p)
			b, err = readSmall(bp, distribute.MaxBundleSize)
			if errors.Is(err, os.ErrNotExist) {
				return badInput(fmt.Errorf("policy push: %s: no bundle %s; sign it first (bouncer sign --key KEY %s, or cosign sign-blob --bundle %s %s), or give --key", p, bp, p, bp, p))
			}
			if err != nil {
				return badInput(fmt.Errorf("policy push: %s: %v", bp, err))
			}
		}
		files = append(files, distribute.File{Name: name, Data: data, Bundle: b})
		abs, _ := filepath.Abs(p)
		srcs = append(srcs, policy.Source{Name: p, Dir: filepath.Dir(abs), Data: data})
	}

	// What pull would refuse is not pushed: the set must load, and where
	// this machine has a trust configuration with signers, each bundle
	// must verify under it.
	if _, err := setup.Load(setup.Config{Extra: srcs, StateDir: dir}); err != nil {
		return badInput(fmt.Errorf("%v", err))
	}
	t, err := bundle.LoadTrust(*trust, dir)
	switch {
	case errors.Is(err, bundle.ErrNoTrust):
	case err != nil:
		return badInput(fmt.Errorf("%v", err))
	case t.HasSigners():
		for i, f := range files {
			if _, err := t.VerifyBundle(paths[i], f.Data, f.Bundle); err != nil {
				return failed(fmt.Errorf("policy push: %s: pull would refuse it: %v", paths[i], err))
			}
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), registryTimeout)
	defer cancel()
	digest, err := distribute.Push(ctx, ref, files, registryOptions(*plain))
	if err != nil {
		return failed(fmt.Errorf("policy push: %s: %v", ref, err))
	}
	r, _ := distribute.ParseReference(ref, *plain)
	fmt.Fprintf(os.Stdout, "%s@%s\n", r.Context(), digest)
	errorf("pushed %d file(s) to %s", len(files), ref)
	return nil
}

func policyPull(args []string) error {
	fs, home := newFlags("policy pull", policySynopsis)
	trust := fs.String("trust", "", "trust configuration `FILE` (default $BOUNCER_HOME/trust.yaml, with /etc/bouncer/trust.yaml always applied when present)")
	dirFlag := fs.String("dir", "", "install into `DIR` (default $BOUNCER_HOME/policy)")
	plain := fs.Bool("plain-http", false, "allow plain HTTP to the registry in REF (loopback registries never need it)")
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
	verify := func(name string, data, b []byte) error {
		_, err := t.VerifyBundle(name, data, b)
		return err
	}
	a, err := distribute.Fetch(ctx, ref, verify, registryOptions(*plain))
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
	if _, err := setup.Load(setup.Config{Extra: srcs, StateDir: sdir}); err != nil {
		return failed(fmt.Errorf("policy pull: %s: signed, but this bouncer can't load it: %v; nothing was installed", a.Pinned(), err))
	}
	res, err := distribute.Install(installDir, a, isWithin(installDir, sdir), time.Now())
	if err != nil {
		return failed(fmt.Errorf("policy pull: %s: %v; nothing was installed", a.Pinned(), err))
	}
	names := make([]string, len(a.Files))
	for i, f := range a.Files {
		names[i] = f.Name
	}
	if res.Unchanged {
		fmt.Fprintf(os.Stdout, "up to date: %s (%s) in %s\n", a.Pinned(), strings.Join(names, ", "), installDir)
		return nil
	}
	fmt.Fprintf(os.Stdout, "installed %s (%s) in %s\n", a.Pinned(), strings.Join(names, ", "), installDir)
	return nil
}

// isWithin reports whether path is dir or below it.
func isWithin(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// readSmall reads a regular file of at most limit bytes.
func readSmall(path string, limit int64) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, errors.New("not a regular file")
	}
	if st.Size() > limit {
		return nil, fmt.Errorf("larger than %d bytes", limit)
	}
	return os.ReadFile(path)
}

// installedPolicy is run's --policy-dir: the policy files of the set
// installed in dir, to load before the --policy files, and the check each
// file's exact bytes must pass before they are parsed. Files of the set
// need a bundle that verifies under the trust configuration whatever
// require_signed says, since pull installed nothing else; other files get
// base (run's ordinary check, which may be nil).
func installedPolicy(dir, trustFile, stateDir string, base func(string, []byte) error) ([]string, func(string, []byte) error, error) {
	set, err := distribute.ReadInstalled(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("--policy-dir %s: %v", dir, err)
	}
	t, err := bundle.LoadTrust(trustFile, stateDir)
	if err != nil && !errors.Is(err, bundle.ErrNoTrust) {
		return nil, nil, err
	}
	if err != nil || !t.HasSigners() {
		return nil, nil, fmt.Errorf("--policy-dir %s: no trust configuration names a signer, so the installed set can't be verified; set keys (or identities) in the trust file", dir)
	}
	inSet := make(map[string]bool, len(set.Paths))
	for _, p := range set.Paths {
		inSet[p] = true
	}
	check := func(file string, data []byte) error {
		if !inSet[file] {
			if base == nil {
				return nil
			}
			return base(file, data)
		}
		if _, err := t.VerifyBytes(file, data, bundle.BundlePath(file)); err != nil {
			return fmt.Errorf("%s: installed from %s@%s: signature check failed: %w", file, set.Repository, set.Digest, err)
		}
		return nil
	}
	return set.Paths, check, nil
}

// policySetStatus is doctor's view of an install directory.
type policySetStatus struct {
	Dir       string    `json:"dir"`
	Ref       string    `json:"ref,omitempty"`
	Digest    string    `json:"digest,omitempty"`
	Files     []string  `json:"files,omitempty"`
	Installed time.Time `json:"installed,omitzero"`
	Follows   string    `json:"follows,omitempty"` // policy_artifact in the trust file
	Error     string    `json:"error,omitempty"`
}

func policySet(home, dir string) *policySetStatus {
	sdir, err := stateDir(home)
	if err != nil {
		return &policySetStatus{Dir: dir, Error: err.Error()}
	}
	if dir == "" {
		dir = filepath.Join(sdir, policyDirName)
	}
	st := &policySetStatus{Dir: dir}
	if t, err := bundle.LoadTrust("", sdir); err == nil {
		if ref, src := t.PolicyArtifact(); ref != "" {
			st.Follows = ref + " (" + src + ")"
		}
	}
	set, err := distribute.ReadInstalled(dir)
	if err != nil {
		if errors.Is(err, distribute.ErrNotInstalled) {
			st.Error = "none installed"
		} else {
			st.Error = err.Error()
		}
		return st
	}
	st.Ref, st.Digest, st.Files, st.Installed = set.Ref, set.Digest, set.Files, set.Installed
	return st
}

func (s *policySetStatus) lines() []string {
	out := []string{}
	if s.Error != "" {
		out = append(out, fmt.Sprintf("policy set:    %s: %s", s.Dir, s.Error))
	} else {
		out = append(out, fmt.Sprintf("policy set:    %s: %s from %s, installed %s (%s)", s.Dir, s.Digest, s.Ref,
			s.Installed.Local().Format(time.RFC3339), strings.Join(s.Files, ", ")))
	}
	if s.Follows != "" {
		out = append(out, "policy pull:   follows "+s.Follows)
	}
	return out
}
