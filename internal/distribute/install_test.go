package distribute

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

const testRepo = "registry.example/team/policy"

// artifact makes what Fetch returns, signed with k, without a registry:
// the files named names with body, the set's bundle, its statement at
// version v(version), and the manifest digest sha256(digestSeed).
func artifact(t *testing.T, k key, digestSeed string, version int, body string, names ...string) *Artifact {
	t.Helper()
	a := &Artifact{Ref: testRepo + ":prod", Repository: testRepo, Digest: sha256Digest([]byte(digestSeed))}
	for _, n := range names {
		a.Files = append(a.Files, File{Name: n, Data: []byte(body + "# " + n + "\n")})
	}
	a.SetBundle = k.sign(t, testRepo, v(version), a.Files...)
	stmt, err := k.verifier()(a.SetBundle, a.Files)
	if err != nil {
		t.Fatal(err)
	}
	if a.Statement, err = ParseStatement(stmt); err != nil {
		t.Fatal(err)
	}
	return a
}

func opts(private bool) InstallOptions { return InstallOptions{Private: private, Now: time.Now()} }

func TestInstallSwapsWholeSets(t *testing.T) {
	k := newKey(t)
	dir := filepath.Join(t.TempDir(), "policy")
	a := artifact(t, k, "one", 1, baseYAML, "a.yaml", "b.yaml")
	if _, err := Install(dir, a, opts(false)); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(dir)
	if st.Mode().Perm() != 0o755 {
		t.Errorf("shared install directory mode %v, want 0755", st.Mode().Perm())
	}
	s1, err := ReadInstalled(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{s1.Paths[0], filepath.Join(s1.Dir, SetBundleName), filepath.Join(dir, highWaterName)} {
		if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o644 {
			t.Errorf("%s in a shared directory: mode %v, want 0644 (users who run bouncer read it)", p, fi.Mode().Perm())
		}
	}

	// A second set (one file fewer) replaces the first whole; the first
	// stays until the next pull; a third pull removes it.
	b := artifact(t, k, "two", 2, teamYAML, "a.yaml")
	if _, err := Install(dir, b, opts(false)); err != nil {
		t.Fatal(err)
	}
	s2, err := ReadInstalled(dir)
	if err != nil {
		t.Fatal(err)
	}
	if s2.Digest != b.Digest || len(s2.Paths) != 1 {
		t.Fatalf("second set: %+v", s2)
	}
	if _, err := os.Stat(s1.Dir); err != nil {
		t.Fatalf("the previous set was removed at once: %v", err)
	}
	c := artifact(t, k, "three", 3, teamYAML, "c.yaml")
	if _, err := Install(dir, c, opts(false)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s1.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the set before the previous one is still there: %v", err)
	}
	if _, err := os.Stat(s2.Dir); err != nil {
		t.Fatalf("the previous set is gone: %v", err)
	}
}

// TestReadersNeverSeeAMix installs sets in turn, each newer than the last,
// while readers verify and read the current one, as bouncer run does:
// every read must be one whole set, its record and all its files from the
// same artifact, and no reader may take a set that was current as older
// than the mark (the mark moves after the link).
func TestReadersNeverSeeAMix(t *testing.T) {
	k := newKey(t)
	dir := t.TempDir()
	names := []string{"a.yaml", "b.yaml", "c.yaml", "d.yaml"}
	var sets []*Artifact
	byDigest := map[string]*Artifact{}
	for i := 0; i <= 30; i++ {
		body := baseYAML
		if i%2 == 1 {
			body = teamYAML
		}
		a := artifact(t, k, fmt.Sprint("set ", i), i, body, names...)
		sets = append(sets, a)
		byDigest[a.Digest] = a
	}
	if _, err := Install(dir, sets[0], opts(true)); err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	var reads, vanished atomic.Int64
	var wg sync.WaitGroup
	errc := make(chan error, 4)
	for r := 0; r < 2; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				s, err := VerifyInstalled(dir, k.verifier(), Freshness{})
				if errors.Is(err, os.ErrNotExist) {
					// The set was pruned between resolving and reading
					// (two pulls went by): the read fails, it never mixes.
					vanished.Add(1)
					continue
				}
				if err != nil {
					errc <- err
					return
				}
				want := byDigest[s.Digest]
				if want == nil {
					errc <- fmt.Errorf("record names digest %s", s.Digest)
					return
				}
				for i, p := range s.Paths {
					data, err := os.ReadFile(p)
					if errors.Is(err, os.ErrNotExist) {
						vanished.Add(1)
						break
					}
					if string(data) != string(want.Files[i].Data) {
						errc <- fmt.Errorf("%s holds another set's bytes than its record (%s)", p, s.Digest)
						return
					}
				}
				reads.Add(1)
			}
		}()
	}
	for _, a := range sets[1:] {
		if _, err := Install(dir, a, opts(true)); err != nil {
			t.Fatal(err)
		}
	}
	stop.Store(true)
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	if reads.Load() == 0 {
		t.Fatal("no reader finished a read")
	}
	t.Logf("%d whole reads, %d reads of a pruned set", reads.Load(), vanished.Load())
}

func TestInstallRefusesAndLeavesTheSet(t *testing.T) {
	k := newKey(t)
	dir := t.TempDir()
	a := artifact(t, k, "one", 1, baseYAML, "a.yaml")
	if _, err := Install(dir, a, opts(true)); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, dir)

	// Another pull holds the lock.
	unlock, err := lock(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Install(dir, artifact(t, k, "two", 2, teamYAML, "a.yaml"), opts(true))
	unlock()
	if err == nil || !strings.Contains(err.Error(), "another bouncer policy pull is installing") {
		t.Fatalf("install under another's lock: %v", err)
	}
	// A set with a bad name never reaches the disk.
	bad := artifact(t, k, "three", 3, teamYAML, "a.yaml")
	bad.Files[0].Name = "../a.yaml"
	if _, err := Install(dir, bad, opts(true)); err == nil {
		t.Fatal("installed a file named ../a.yaml")
	}
	// Nor does one whose files are not its statement's.
	swapped := artifact(t, k, "four", 4, teamYAML, "a.yaml")
	swapped.Files[0].Data = []byte(baseYAML)
	if _, err := Install(dir, swapped, opts(true)); !errors.Is(err, ErrSetMismatch) {
		t.Fatalf("installed files that are not the statement's: %v", err)
	}
	if after := snapshot(t, dir); after != before {
		t.Fatalf("a refused install changed the directory:\n%s\n---\n%s", before, after)
	}

	// current that is not ours is never replaced.
	other := t.TempDir()
	os.Mkdir(filepath.Join(other, currentLink), 0o755)
	if _, err := Install(other, a, opts(true)); err == nil || !strings.Contains(err.Error(), "is not a symlink") {
		t.Fatalf("install over a current directory: %v", err)
	}
}

// TestInstallNeverGoesBack: a set older than the newest installed (a lower
// version, or the same version with another statement) is refused and
// nothing changes; AllowDowngrade installs it and lowers the mark to it.
func TestInstallNeverGoesBack(t *testing.T) {
	k := newKey(t)
	dir := t.TempDir()
	v1 := artifact(t, k, "v1", 1, baseYAML, "a.yaml")
	v2 := artifact(t, k, "v2", 2, teamYAML, "a.yaml")
	v2b := artifact(t, k, "v2b", 2, baseYAML, "b.yaml")
	if _, err := Install(dir, v2, opts(true)); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, dir)
	for name, c := range map[string]struct {
		a    *Artifact
		want string
	}{
		"lower version":             {v1, "older than the newest set installed in " + dir + ": the set is version 2026-05-01T13:00:00Z, older than version 2026-05-01T14:00:00Z"},
		"same version, another set": {v2b, "the same version as the newest set but another statement"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Install(dir, c.a, opts(true))
			if !errors.Is(err, ErrRollback) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Install: %v, want ErrRollback and %q", err, c.want)
			}
			if after := snapshot(t, dir); after != before {
				t.Fatalf("a refused install changed the directory:\n%s\n---\n%s", before, after)
			}
		})
	}
	// The same set again is not going back.
	if res, err := Install(dir, v2, opts(true)); err != nil || !res.Unchanged {
		t.Fatalf("the same set again: %+v, %v", res, err)
	}

	// Going back on purpose.
	o := opts(true)
	o.AllowDowngrade = true
	if _, err := Install(dir, v1, o); err != nil {
		t.Fatal(err)
	}
	s, err := VerifyInstalled(dir, k.verifier(), Freshness{})
	if err != nil || s.Digest != v1.Digest {
		t.Fatalf("after the downgrade: %+v, %v", s, err)
	}
	hw, err := readHighWater(dir)
	if err != nil || !hw.Version.Equal(v(1)) || hw.Statement != v1.Statement.Digest {
		t.Fatalf("the mark after the downgrade: %+v, %v", hw, err)
	}
	// And forward again without it.
	if _, err := Install(dir, v2, opts(true)); err != nil {
		t.Fatal(err)
	}
}

// TestVerifyInstalled: a reader refuses an installed set that is no
// longer what was pulled, and an older set put back behind current.
func TestVerifyInstalled(t *testing.T) {
	k, other := newKey(t), newKey(t)
	old := artifact(t, k, "old", 1, baseYAML, "a.yaml", "b.yaml")
	cur := artifact(t, k, "cur", 2, teamYAML, "a.yaml", "b.yaml")
	// setup installs old, then cur (old stays as the previous set), and
	// returns the current set's directory.
	setup := func(t *testing.T) (string, *Set) {
		dir := t.TempDir()
		for _, a := range []*Artifact{old, cur} {
			if _, err := Install(dir, a, opts(true)); err != nil {
				t.Fatal(err)
			}
		}
		s, err := VerifyInstalled(dir, k.verifier(), Freshness{})
		if err != nil {
			t.Fatalf("as pulled: %v", err)
		}
		return dir, s
	}
	editRecord := func(edit func(r map[string]any)) func(t *testing.T, dir string, s *Set) {
		return func(t *testing.T, dir string, s *Set) {
			p := filepath.Join(s.Dir, RecordName)
			var r map[string]any
			raw, _ := os.ReadFile(p)
			if err := json.Unmarshal(raw, &r); err != nil {
				t.Fatal(err)
			}
			edit(r)
			raw, _ = json.Marshal(r)
			os.WriteFile(p, raw, 0o600)
		}
	}
	for _, c := range []struct {
		name string
		edit func(t *testing.T, dir string, s *Set)
		is   error
		want string
	}{
		{"a file edited", func(t *testing.T, dir string, s *Set) {
			os.WriteFile(s.Paths[1], []byte(baseYAML), 0o600)
		}, ErrNotAsPulled, "b.yaml (sha256:"},
		{"installed.json lists a subset", editRecord(func(r map[string]any) { r["files"] = []string{"b.yaml"} }),
			ErrNotAsPulled, "it lists 2 file(s) (a.yaml, b.yaml), the artifact holds 1 (b.yaml)"},
		{"installed.json reorders", editRecord(func(r map[string]any) { r["files"] = []string{"b.yaml", "a.yaml"} }),
			ErrNotAsPulled, "file 1 is b.yaml, the signed set has a.yaml there"},
		{"installed.json names another statement", editRecord(func(r map[string]any) { r["statement"] = old.Statement.Digest }),
			ErrNotAsPulled, "records statement " + old.Statement.Digest},
		{"installed.json names another version", editRecord(func(r map[string]any) { r["version"] = "2030-01-01T00:00:00Z" }),
			ErrNotAsPulled, "records version 2030-01-01T00:00:00Z, but the signed set is version 2026-05-01T14:00:00Z"},
		{"installed.json names another repository", editRecord(func(r map[string]any) { r["repository"] = "registry.example/other" }),
			ErrNotAsPulled, "records repository registry.example/other, but the set was signed for " + testRepo},
		{"the set's bundle replaced by another key's", func(t *testing.T, dir string, s *Set) {
			os.WriteFile(filepath.Join(s.Dir, SetBundleName), other.sign(t, testRepo, v(2), cur.Files...), 0o600)
		}, ErrNotAsPulled, "signature does not verify with key team.pub"},
		{"the set's bundle gone", func(t *testing.T, dir string, s *Set) {
			os.Remove(filepath.Join(s.Dir, SetBundleName))
		}, os.ErrNotExist, "set.sigstore.json: no such file"},
		{"current pointed back at the previous set", func(t *testing.T, dir string, s *Set) {
			prev, _ := filepath.Glob(filepath.Join(dir, setPrefix+"*"))
			for _, p := range prev {
				if p != s.Dir {
					os.Remove(filepath.Join(dir, currentLink))
					os.Symlink(filepath.Base(p), filepath.Join(dir, currentLink))
				}
			}
		}, ErrRollback, "is version 2026-05-01T13:00:00Z, older than version 2026-05-01T14:00:00Z (" + "DIR/current was pointed at an older set)"},
		{"the mark removed", func(t *testing.T, dir string, s *Set) {
			os.Remove(filepath.Join(dir, highWaterName))
		}, ErrNotAsPulled, highWaterName + " is missing"},
		{"a set from before sets were signed", editRecord(func(r map[string]any) { delete(r, "statement") }),
			ErrNotAsPulled, "installed by a bouncer from before sets were signed whole"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir, s := setup(t)
			c.edit(t, dir, s)
			_, err := VerifyInstalled(dir, k.verifier(), Freshness{})
			want := strings.ReplaceAll(c.want, "DIR", dir)
			if !errors.Is(err, c.is) || !strings.Contains(err.Error(), want) {
				t.Fatalf("VerifyInstalled: %v\nwant %v and %q", err, c.is, want)
			}
		})
	}
	t.Run("not installed", func(t *testing.T) {
		if _, err := VerifyInstalled(t.TempDir(), k.verifier(), Freshness{}); !errors.Is(err, ErrNotInstalled) {
			t.Fatalf("VerifyInstalled of an empty directory: %v", err)
		}
	})
}

func TestInstallCleansUpAfterACrash(t *testing.T) {
	k := newKey(t)
	dir := t.TempDir()
	// What a pull killed half-way leaves: a staging directory and a
	// temporary link. Neither is current, and the next pull removes them.
	os.MkdirAll(filepath.Join(dir, stagePrefix+"123", "x"), 0o700)
	os.Symlink("nowhere", filepath.Join(dir, linkPrefix+"abcd"))
	if _, err := ReadInstalled(dir); !errors.Is(err, ErrNotInstalled) {
		t.Fatalf("ReadInstalled with only leftovers: %v", err)
	}
	if _, err := Install(dir, artifact(t, k, "one", 1, baseYAML, "a.yaml"), opts(true)); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), stagePrefix) || strings.HasPrefix(e.Name(), linkPrefix) {
			t.Errorf("leftover %s not removed", e.Name())
		}
	}
	// Killed between the swap and the mark: the next pull takes the
	// current set's version as the floor.
	os.Remove(filepath.Join(dir, highWaterName))
	if _, err := Install(dir, artifact(t, k, "zero", 0, baseYAML, "a.yaml"), opts(true)); !errors.Is(err, ErrRollback) {
		t.Fatalf("an older set with the mark missing: %v", err)
	}
	if _, err := Install(dir, artifact(t, k, "two", 2, baseYAML, "a.yaml"), opts(true)); err != nil {
		t.Fatal(err)
	}
	if _, err := VerifyInstalled(dir, k.verifier(), Freshness{}); err != nil {
		t.Fatal(err)
	}
}

func TestReadInstalledRefuses(t *testing.T) {
	for name, c := range map[string]struct {
		prep func(dir string)
		want string
	}{
		"link elsewhere": {func(dir string) { os.Symlink("/etc", filepath.Join(dir, currentLink)) }, "not at a set directory beside it"},
		"no record": {func(dir string) {
			os.Mkdir(filepath.Join(dir, "set-1"), 0o700)
			os.Symlink("set-1", filepath.Join(dir, currentLink))
		}, "no such file"},
		"record naming a path": {func(dir string) {
			os.Mkdir(filepath.Join(dir, "set-1"), 0o700)
			os.WriteFile(filepath.Join(dir, "set-1", RecordName), []byte(`{"ref":"r","repository":"r","digest":"sha256:00","files":["../../x.yaml"],"installed":"2026-01-01T00:00:00Z"}`), 0o600)
			os.Symlink("set-1", filepath.Join(dir, currentLink))
		}, `file name "../../x.yaml"`},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			c.prep(dir)
			if _, err := ReadInstalled(dir); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("ReadInstalled: %v, want %q", err, c.want)
			}
		})
	}
}

// An install directory another user could change is refused by a reader
// and by a pull, whatever the sets in it say: the red team's 0777
// directory let another user point current back at the older signed set
// and write the mark down to it, which verifies as a set never pulled past.
func TestOpenToOthersRefused(t *testing.T) {
	k := newKey(t)
	old := artifact(t, k, "old", 1, baseYAML, "a.yaml")
	cur := artifact(t, k, "cur", 2, teamYAML, "a.yaml")
	setup := func(t *testing.T) (string, string) {
		base := t.TempDir()
		dir := filepath.Join(base, "policy")
		for _, a := range []*Artifact{old, cur} {
			if _, err := Install(dir, a, opts(false)); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := VerifyInstalled(dir, k.verifier(), Freshness{}); err != nil {
			t.Fatalf("as pulled: %v", err)
		}
		return base, dir
	}
	// rollBack does what the other user did: current at the older set,
	// and the mark lowered to it.
	rollBack := func(t *testing.T, dir string) {
		sets, _ := filepath.Glob(filepath.Join(dir, setPrefix+"*"))
		s, _ := ReadInstalled(dir)
		for _, p := range sets {
			if p != s.Dir {
				os.Remove(filepath.Join(dir, currentLink))
				os.Symlink(filepath.Base(p), filepath.Join(dir, currentLink))
			}
		}
		hw, _ := json.Marshal(highWater{Version: old.Statement.Version, Statement: old.Statement.Digest})
		p := filepath.Join(dir, highWaterName)
		os.Remove(p)
		if err := os.WriteFile(p, hw, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name string
		open func(t *testing.T, base, dir string) string // what is open; its fix
	}{
		{"the directory 0777", func(t *testing.T, base, dir string) string {
			os.Chmod(dir, 0o777)
			return dir + ": mode 0777 lets other users write in it, so they could replace what Bouncer reads from it (an older set, a lower high-water mark); run: chmod go-w " + dir
		}},
		{"a directory above it 0777", func(t *testing.T, base, dir string) string {
			os.Chmod(base, 0o777)
			return base + ", a directory above " + dir + ": mode 0777 lets other users write in it"
		}},
		{"the mark group-writable", func(t *testing.T, base, dir string) string {
			os.Chmod(filepath.Join(dir, highWaterName), 0o664)
			return filepath.Join(dir, highWaterName) + ": mode 0664 lets other users write it"
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			base, dir := setup(t)
			rollBack(t, dir)
			want := c.open(t, base, dir)
			if _, err := VerifyInstalled(dir, k.verifier(), Freshness{}); !errors.Is(err, ErrOpenToOthers) || !strings.Contains(err.Error(), want) {
				t.Fatalf("VerifyInstalled: %v\nwant %q", err, want)
			}
			if _, err := Install(dir, cur, opts(false)); !errors.Is(err, ErrOpenToOthers) {
				t.Fatalf("Install: %v", err)
			}
		})
	}
	if os.Geteuid() == 0 {
		t.Run("the mark another user's", func(t *testing.T) {
			_, dir := setup(t)
			rollBack(t, dir)
			p := filepath.Join(dir, highWaterName)
			if err := os.Chown(p, 65534, 65534); err != nil {
				t.Fatal(err)
			}
			if _, err := VerifyInstalled(dir, k.verifier(), Freshness{}); !errors.Is(err, ErrOpenToOthers) || !strings.Contains(err.Error(), p+": owned by uid 65534, neither by this user (uid 0) nor by root") {
				t.Fatalf("VerifyInstalled: %v", err)
			}
		})
	}
}
