package setup

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/bouncer-mcp/bouncer/internal/bundle"
	"github.com/bouncer-mcp/bouncer/internal/distribute"
	"github.com/bouncer-mcp/bouncer/internal/policy"
)

// Sources are the flags that say which policy is in force. run, check,
// serve, report, the policy subcommands and init's summary all take them
// and hand them to LoadPolicy, so that none of them can describe a policy
// other than the one run enforces.
type Sources struct {
	// Policies are the --policy files, in order (paths as the command
	// resolved them: run resolves a relative one against where a relative
	// --config was found).
	Policies []string
	// PolicyDir is --policy-dir: the directory `bouncer policy pull`
	// installed a signed set into. Its files load before the --policy
	// files, and only as they were pulled. "" for none.
	PolicyDir string
	// Trust is --trust, the user's trust file; "" looks for trust.yaml in
	// StateDir. The system file applies either way (bundle.LoadTrust).
	Trust string
	// StateDir is Bouncer's state directory: the user's trust file is
	// found there without --trust, and no sandbox key may let the
	// upstream reach it.
	StateDir string
}

// InForce is the policy the Sources put in force, and what its files
// were checked against.
type InForce struct {
	Policy *policy.Policy
	// Files are the policy files in load order, as named: the installed
	// set's absolute paths, then the --policy files as given.
	Files []string
	// Trust is the trust configuration the files were checked under; nil
	// when there is no trust file anywhere.
	Trust *bundle.Trust
	// Set is the installed set --policy-dir names, verified; nil without
	// --policy-dir.
	Set *distribute.Set
}

// OwnFiles are the files of the policy in force that are Bouncer's own
// (OwnSources.InForce): the policy files, the trust files and their keys,
// and the install directory of the set in force (--policy-dir), whole.
func (in *InForce) OwnFiles() []string {
	files := append(append([]string(nil), in.Policy.Files...), in.Trust.AllFiles()...)
	if in.Set != nil {
		files = append(files, filepath.Dir(in.Set.Dir))
	}
	return files
}

// LoadPolicy is the one place that decides which policy is in force: the
// built-in packs, then the set installed in PolicyDir (verified as it was
// pulled, each file's bytes against the signed digest), then each
// --policy file (its bytes checked under the trust configuration:
// require_signed, or a bundle beside it that must verify), then extra,
// documents that are not files (serve's policy_yaml). Every check is made
// on the exact bytes that are then parsed.
//
// A trust file that exists but does not load is an error, as is any file
// that fails its check: nothing is loaded, and the command must stop
// (exit 2). What judges a document rather than what is in force (serve's
// validate_policy, the protect guard's judgement of an edit) parses it
// with policy.LoadSources.
func LoadPolicy(s Sources, extra ...policy.Source) (*InForce, error) {
	tr, err := bundle.LoadTrust(s.Trust, s.StateDir)
	switch {
	case errors.Is(err, bundle.ErrNoTrust):
		tr = nil
	case err != nil:
		return nil, err
	}
	check := func(string, []byte) error { return nil }
	if tr != nil {
		check = tr.CheckPolicy
	}
	in := &InForce{Trust: tr}
	if s.PolicyDir != "" {
		if _, err := distribute.ReadInstalled(s.PolicyDir); err != nil {
			return nil, fmt.Errorf("--policy-dir %s: %v", s.PolicyDir, err)
		}
		set, err := VerifyInstalled(s.PolicyDir, tr)
		if err != nil {
			return nil, fmt.Errorf("--policy-dir %s: refused: %v", s.PolicyDir, err)
		}
		in.Set = set
		in.Files = append(in.Files, set.Paths...)
		check = setCheck(set, check)
	}
	in.Files = append(in.Files, s.Policies...)
	if in.Policy, err = policy.LoadFiles(check, in.Files, extra...); err != nil {
		return nil, err
	}
	return in, nil
}

// setCheck is the check of a file of the installed set: its bytes must
// hash to the digest the verified statement names for it, so the bytes
// parsed are the bytes signed, even if the file changed since
// VerifyInstalled read it. Other files get base.
func setCheck(set *distribute.Set, base func(string, []byte) error) func(string, []byte) error {
	want := make(map[string]string, len(set.Paths))
	for i, p := range set.Paths {
		want[p] = set.Statement.Files[i].Digest
	}
	return func(file string, data []byte) error {
		d, ok := want[file]
		if !ok {
			return base(file, data)
		}
		sum := sha256.Sum256(data)
		if got := "sha256:" + hex.EncodeToString(sum[:]); got != d {
			return fmt.Errorf("%s: installed from %s@%s: changed since the pull (%s, the signed set says %s); %s", file, set.Repository, set.Digest, got, d, PullAgain)
		}
		return nil
	}
}

// PullAgain is what to do about an installed set that is not as pulled.
const PullAgain = "run bouncer policy pull to install the signed set again"

// VerifyInstalled checks the set installed in dir as LoadPolicy does
// before it loads it (doctor shows the same verdict): its signed statement
// verifies under t, whatever require_signed says, it is not older than
// the newest set pulled into dir, and it is not expired, by its own
// expiry or t's max_age (distribute.VerifyInstalled). A nil t, or one
// naming no signer, can verify nothing and refuses every set.
func VerifyInstalled(dir string, t *bundle.Trust) (*distribute.Set, error) {
	if t == nil || !t.HasSigners() {
		return nil, errors.New("no trust configuration names a signer, so the installed set can't be verified; set keys (or identities) in the trust file")
	}
	set, err := distribute.VerifyInstalled(dir, SetVerifier(t), Freshness(t))
	if errors.Is(err, distribute.ErrExpired) {
		return nil, err // it says what to pull
	}
	if err != nil {
		return nil, fmt.Errorf("%v; %s", err, PullAgain)
	}
	return set, nil
}

// Freshness is how old a set t lets be installed or used: its own
// expiry, and t's max_age (nil t: its own expiry alone).
func Freshness(t *bundle.Trust) distribute.Freshness {
	var f distribute.Freshness
	if t != nil {
		f.MaxAge, f.Source = t.MaxAge()
	}
	return f
}

// SetVerifier verifies a set's bundle under t: its signature, by the
// signers t accepts, over a statement that names each file's digest. pull
// and push check a set with it before it is installed or sent, and
// VerifyInstalled after.
func SetVerifier(t *bundle.Trust) distribute.Verifier {
	return func(setBundle []byte, files []distribute.File) ([]byte, error) {
		subjects := make([]bundle.Subject, len(files))
		for i, f := range files {
			sum := sha256.Sum256(f.Data)
			subjects[i] = bundle.Subject{Name: f.Name, SHA256: sum[:]}
		}
		stmt, _, err := t.VerifyStatement(setBundle, subjects)
		return stmt, err
	}
}
