package setup

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bouncer-mcp/bouncer/internal/bundle"
	"github.com/bouncer-mcp/bouncer/internal/distribute"
	"github.com/bouncer-mcp/bouncer/internal/engine"
	"github.com/bouncer-mcp/bouncer/internal/policy"
)

const (
	teamYAML  = "send_email:\n  exfiltrating: true\n  sink_params: [to]\n  trusted_destinations: [boss@corp.example]\n"
	localYAML = "get_ticket:\n  max_calls: 0\n"
	testRepo  = "registry.example/team/policy"
)

// signer makes a P-256 key, as openssl genpkey does, and writes its public
// half to dir/team.pub for a trust file to name.
func signer(t *testing.T, dir string) *bundle.Signer {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	s, err := bundle.ParsePrivateKey(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "team.pub"), string(s.PublicKeyPEM()))
	return s
}

func write(t *testing.T, path, data string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// install signs files as one set, as policy push does, and installs it in
// dir as policy pull does (distribute.Install), with no registry between.
func install(t *testing.T, s *bundle.Signer, dir string, files ...distribute.File) {
	t.Helper()
	stmt, err := distribute.NewStatement(testRepo, time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC), time.Time{}, files)
	if err != nil {
		t.Fatal(err)
	}
	setBundle, err := s.SignStatement(stmt)
	if err != nil {
		t.Fatal(err)
	}
	st, err := distribute.ParseStatement(stmt)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(stmt)
	a := &distribute.Artifact{Ref: testRepo + ":prod", Repository: testRepo, Digest: "sha256:" + hex.EncodeToString(sum[:]),
		Files: files, SetBundle: setBundle, Statement: st}
	if _, err := distribute.Install(dir, a, distribute.InstallOptions{Private: true, Now: time.Now()}); err != nil {
		t.Fatal(err)
	}
}

// fixture is a state directory with a trust file naming team.pub, a set
// installed in STATE/policy holding team.yaml, and local.yaml beside it.
type fixture struct {
	state, setDir, local, trust string
	signer                      *bundle.Signer
}

func newFixture(t *testing.T, trust string) *fixture {
	t.Helper()
	f := &fixture{state: filepath.Join(t.TempDir(), "state")}
	f.signer = signer(t, f.state)
	f.trust = write(t, filepath.Join(f.state, bundle.UserTrustFileName), trust)
	f.setDir = filepath.Join(f.state, "policy")
	install(t, f.signer, f.setDir, distribute.File{Name: "team.yaml", Data: []byte(teamYAML)})
	f.local = write(t, filepath.Join(t.TempDir(), "local.yaml"), localYAML)
	return f
}

func TestLoadPolicyLayersTheSetThenTheFilesThenExtra(t *testing.T) {
	f := newFixture(t, "keys: [team.pub]\n")
	extra := policy.Source{Name: "policy_yaml", Data: []byte("echo:\n  max_calls: 3\n")}
	in, err := LoadPolicy(Sources{Policies: []string{f.local}, PolicyDir: f.setDir, StateDir: f.state}, extra)
	if err != nil {
		t.Fatal(err)
	}
	if len(in.Files) != 2 || filepath.Base(in.Files[0]) != "team.yaml" || in.Files[1] != f.local {
		t.Fatalf("Files %v, want the set's team.yaml, then %s", in.Files, f.local)
	}
	if want := append(append([]string(nil), in.Files...), "policy_yaml"); strings.Join(in.Policy.Files, " ") != strings.Join(want, " ") {
		t.Fatalf("layers %v, want %v", in.Policy.Files, want)
	}
	if tool, _ := in.Policy.Lookup("send_email"); !tool.Trusts("boss@corp.example") {
		t.Errorf("send_email from the installed set: %+v", tool)
	}
	if in.Set == nil || in.Trust == nil || len(in.Trust.Files()) != 1 || in.Trust.Files()[0] != f.trust {
		t.Errorf("set %v, trust %v: want the set and %s", in.Set, in.Trust, f.trust)
	}
	// The same flags give the same digest, which is what run writes on
	// every audit line and report and policy digest compare with.
	again, err := LoadPolicy(Sources{Policies: []string{f.local}, PolicyDir: f.setDir, StateDir: f.state}, extra)
	if err != nil || again.Policy.Digest("v") != in.Policy.Digest("v") {
		t.Fatalf("the same flags again: %v, digest %s vs %s", err, again.Policy.Digest("v"), in.Policy.Digest("v"))
	}
	packs, _ := LoadPolicy(Sources{StateDir: f.state})
	if packs.Policy.Digest("v") == in.Policy.Digest("v") || packs.Files != nil {
		t.Errorf("no flags: files %v, the same digest as with the set", packs.Files)
	}
}

func TestLoadPolicyRefuses(t *testing.T) {
	cases := []struct {
		name  string
		trust string // the user's trust file in the state directory; "" for none
		edit  func(t *testing.T, f *fixture) Sources
		want  string
	}{
		{"unsigned file under require_signed", "require_signed: true\nkeys: [team.pub]\n",
			func(t *testing.T, f *fixture) Sources { return Sources{Policies: []string{f.local}} },
			"local.yaml: not signed: "},
		{"a bundle that no longer verifies", "keys: [team.pub]\n",
			func(t *testing.T, f *fixture) Sources {
				if _, err := f.signer.SignFile(f.local); err != nil {
					t.Fatal(err)
				}
				write(t, f.local, localYAML+"echo:\n  max_calls: 9\n")
				return Sources{Policies: []string{f.local}}
			},
			"local.yaml: signature check failed: "},
		{"a malformed trust file", "keys: team.pub\n",
			func(t *testing.T, f *fixture) Sources { return Sources{Policies: []string{f.local}} },
			"trust.yaml:1: keys: expected a list"},
		{"a --trust file that does not exist", "keys: [team.pub]\n",
			func(t *testing.T, f *fixture) Sources {
				return Sources{Policies: []string{f.local}, Trust: filepath.Join(f.state, "nope.yaml")}
			},
			"nope.yaml: "},
		{"an installed file edited after the pull", "keys: [team.pub]\n",
			func(t *testing.T, f *fixture) Sources {
				write(t, filepath.Join(f.setDir, "current", "team.yaml"), teamYAML+"# edited\n")
				return Sources{PolicyDir: f.setDir}
			},
			"refused: the installed set does not match what was pulled: "},
		{"an installed set and no signer to check it", "require_signed: false\n",
			func(t *testing.T, f *fixture) Sources { return Sources{PolicyDir: f.setDir} },
			"refused: no trust configuration names a signer"},
		{"no set installed", "keys: [team.pub]\n",
			func(t *testing.T, f *fixture) Sources { return Sources{PolicyDir: filepath.Join(f.state, "nowhere")} },
			"nowhere: no policy set installed in "},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, c.trust)
			s := c.edit(t, f)
			s.StateDir = f.state
			in, err := LoadPolicy(s)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("LoadPolicy: %v, %v; want an error with %q", in, err, c.want)
			}
			// setup.Load, which run, check and serve call, refuses alike.
			if _, lerr := Load(Config{Sources: s}); lerr == nil || lerr.Error() != err.Error() {
				t.Fatalf("Load: %v; want %v", lerr, err)
			}
		})
	}
}

// The bytes parsed are the bytes signed: a file of the set replaced between
// the set's verification and the parse is refused.
func TestSetCheckHoldsTheParsedBytesToTheSignedDigest(t *testing.T) {
	f := newFixture(t, "keys: [team.pub]\n")
	tr, err := bundle.LoadTrust("", f.state)
	if err != nil {
		t.Fatal(err)
	}
	set, err := VerifyInstalled(f.setDir, tr)
	if err != nil {
		t.Fatal(err)
	}
	base := errors.New("base check")
	check := setCheck(set, func(string, []byte) error { return base })
	if err := check(set.Paths[0], []byte(teamYAML)); err != nil {
		t.Fatalf("the signed bytes: %v", err)
	}
	if err := check(set.Paths[0], []byte(teamYAML+"# swapped\n")); err == nil || !strings.Contains(err.Error(), "changed since the pull") {
		t.Fatalf("other bytes under the set's name: %v", err)
	}
	if err := check(f.local, []byte(localYAML)); err != base {
		t.Fatalf("a file outside the set: %v, want the base check", err)
	}
}

// The trust configuration's files are Bouncer's own in every command that
// builds an engine: a key outside the state directory is out of a tool's
// reach in check and serve as in run.
func TestLoadProtectsTheTrustFiles(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	signer(t, dir)
	key := filepath.Join(dir, "team.pub")
	write(t, filepath.Join(state, bundle.UserTrustFileName), "keys: ["+key+"]\n")
	dec, err := Load(Config{Sources: Sources{StateDir: state}, WorkDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	e := dec.Engine("fs")
	e.PinAll()
	c, err := engine.ParseCall([]byte(`{"name":"write_file","arguments":{"path":"` + key + `","content":"x"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if d := e.Decide(c); d.Verdict != engine.Deny || !strings.Contains(d.Reason, "Bouncer's own state") {
		t.Fatalf("a write to the trust file's key: %+v", d)
	}
}

// The install directory --policy-dir names is Bouncer's own state whole,
// wherever it is: not only the set's policy files, but its rollback floor
// (high-water.json), the current link, each set's installed.json and
// set.sigstore.json, and the sets kept beside. A tool that could write
// them outside the state directory (a filesystem server rooted at the home
// directory, DIR=~/team-policy) could lower the floor and move an older
// signed set behind current, or stop every run with a broken record.
func TestLoadProtectsThePolicyDir(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	s := signer(t, state)
	write(t, filepath.Join(state, bundle.UserTrustFileName), "keys: [team.pub]\n")
	pdir := filepath.Join(dir, "team-policy")
	install(t, s, pdir, distribute.File{Name: "team.yaml", Data: []byte(teamYAML)})
	dec, err := Load(Config{Sources: Sources{PolicyDir: pdir, StateDir: state}, WorkDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	e := dec.Engine("fs")
	e.PinAll()
	for _, p := range []string{
		filepath.Join(pdir, "high-water.json"),
		filepath.Join(pdir, "current"),
		filepath.Join(dec.Set.Dir, distribute.RecordName),
		filepath.Join(dec.Set.Dir, distribute.SetBundleName),
		filepath.Join(pdir, "set-older"),
		pdir,
	} {
		c, err := engine.ParseCall([]byte(`{"name":"write_file","arguments":{"path":"` + p + `","content":"x"}}`))
		if err != nil {
			t.Fatal(err)
		}
		if d := e.Decide(c); d.Verdict != engine.Deny || !strings.Contains(d.Reason, "Bouncer's own state") {
			t.Errorf("a write to %s: %+v", p, d)
		}
	}
}

// TestSandboxKeepsOffThePolicyDir: the sandbox key may not let the
// upstream write into the directory --policy-dir names (its rollback
// floor sits there), even by a path inside it that holds no policy file;
// the engine refuses the same writes (TestLoadProtectsThePolicyDir).
func TestSandboxKeepsOffThePolicyDir(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	s := signer(t, state)
	write(t, filepath.Join(state, bundle.UserTrustFileName), "keys: [team.pub]\n")
	pdir := filepath.Join(dir, "team-policy")
	install(t, s, pdir, distribute.File{Name: "team.yaml", Data: []byte(teamYAML)})
	floor := filepath.Join(pdir, "high-water.json")
	if _, err := os.Stat(floor); err != nil {
		t.Fatalf("the install left no %s: %v", floor, err)
	}
	extra := write(t, filepath.Join(dir, "box.yaml"), "sandbox:\n  read_write: ["+floor+"]\n")
	_, err := Load(Config{Sources: Sources{PolicyDir: pdir, Policies: []string{extra}, StateDir: state}, WorkDir: dir})
	if err == nil || !strings.Contains(err.Error(), "inside "+pdir) {
		t.Fatalf("a sandbox key writing %s: %v, want it refused as inside %s", floor, err, pdir)
	}
	// A directory beside it is fine.
	work := filepath.Join(dir, "work")
	if err := os.Mkdir(work, 0o700); err != nil {
		t.Fatal(err)
	}
	write(t, extra, "sandbox:\n  read_write: ["+work+"]\n")
	if _, err := Load(Config{Sources: Sources{PolicyDir: pdir, Policies: []string{extra}, StateDir: state}, WorkDir: dir}); err != nil {
		t.Fatalf("a sandbox key writing %s: %v", work, err)
	}
}
