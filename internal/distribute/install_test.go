package distribute

import (
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

// artifact makes a verified-looking artifact without a registry; Install
// trusts its caller to have fetched it with Fetch.
func artifact(digestSeed, body string, names ...string) *Artifact {
	a := &Artifact{Ref: "registry.example/team/policy:prod", Repository: "registry.example/team/policy",
		Digest: sha256Digest([]byte(digestSeed))}
	for _, n := range names {
		a.Files = append(a.Files, File{Name: n, Data: []byte(body + "# " + n + "\n"), Bundle: []byte(`{"for":"` + digestSeed + "/" + n + `"}`)})
	}
	return a
}

func TestInstallSwapsWholeSets(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "policy")
	a := artifact("one", baseYAML, "a.yaml", "b.yaml")
	if _, err := Install(dir, a, false, time.Now()); err != nil {
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
	if fi, _ := os.Stat(s1.Paths[0]); fi.Mode().Perm() != 0o644 {
		t.Errorf("file in a shared directory: mode %v, want 0644 (users who run bouncer read it)", fi.Mode().Perm())
	}

	// A second set (one file fewer) replaces the first whole; the first
	// stays until the next pull; a third pull removes it.
	b := artifact("two", teamYAML, "a.yaml")
	if _, err := Install(dir, b, false, time.Now()); err != nil {
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
	c := artifact("three", teamYAML, "c.yaml")
	if _, err := Install(dir, c, false, time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s1.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the set before the previous one is still there: %v", err)
	}
	if _, err := os.Stat(s2.Dir); err != nil {
		t.Fatalf("the previous set is gone: %v", err)
	}
}

// TestReadersNeverSeeAMix installs two sets in turn while readers resolve
// and read the current one, as bouncer run does: every read must be one
// whole set, its record and all its files from the same artifact.
func TestReadersNeverSeeAMix(t *testing.T) {
	dir := t.TempDir()
	names := []string{"a.yaml", "b.yaml", "c.yaml", "d.yaml"}
	sets := []*Artifact{artifact("one", baseYAML, names...), artifact("two", teamYAML, names...)}
	if _, err := Install(dir, sets[0], true, time.Now()); err != nil {
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
				s, err := ReadInstalled(dir)
				if err != nil {
					// The set was pruned between resolving and reading
					// (two pulls went by): the read fails, it never mixes.
					vanished.Add(1)
					continue
				}
				var want *Artifact
				for _, a := range sets {
					if a.Digest == s.Digest {
						want = a
					}
				}
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
	for i := 0; i < 30; i++ {
		if _, err := Install(dir, sets[(i+1)%2], true, time.Now()); err != nil {
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
	dir := t.TempDir()
	a := artifact("one", baseYAML, "a.yaml")
	if _, err := Install(dir, a, true, time.Now()); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, dir)

	// Another pull holds the lock.
	unlock, err := lock(dir, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Install(dir, artifact("two", teamYAML, "a.yaml"), true, time.Now())
	unlock()
	if err == nil || !strings.Contains(err.Error(), "another bouncer policy pull is installing") {
		t.Fatalf("install under another's lock: %v", err)
	}
	// A set with a bad name never reaches the disk.
	bad := artifact("three", teamYAML, "a.yaml")
	bad.Files[0].Name = "../a.yaml"
	if _, err := Install(dir, bad, true, time.Now()); err == nil {
		t.Fatal("installed a file named ../a.yaml")
	}
	if after := snapshot(t, dir); after != before {
		t.Fatalf("a refused install changed the directory:\n%s\n---\n%s", before, after)
	}

	// current that is not ours is never replaced.
	other := t.TempDir()
	os.Mkdir(filepath.Join(other, currentLink), 0o755)
	if _, err := Install(other, a, true, time.Now()); err == nil || !strings.Contains(err.Error(), "is not a symlink") {
		t.Fatalf("install over a current directory: %v", err)
	}
}

func TestInstallCleansUpAfterACrash(t *testing.T) {
	dir := t.TempDir()
	// What a pull killed half-way leaves: a staging directory and a
	// temporary link. Neither is current, and the next pull removes them.
	os.MkdirAll(filepath.Join(dir, stagePrefix+"123", "x"), 0o700)
	os.Symlink("nowhere", filepath.Join(dir, linkPrefix+"abcd"))
	if _, err := ReadInstalled(dir); !errors.Is(err, ErrNotInstalled) {
		t.Fatalf("ReadInstalled with only leftovers: %v", err)
	}
	if _, err := Install(dir, artifact("one", baseYAML, "a.yaml"), true, time.Now()); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), stagePrefix) || strings.HasPrefix(e.Name(), linkPrefix) {
			t.Errorf("leftover %s not removed", e.Name())
		}
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
