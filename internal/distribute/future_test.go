package distribute

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// A set whose version is far past the machine's clock is refused: once
// installed it would be the rollback floor, and every set the team signs
// afterwards (at its real time, with a key rotated after a leak even)
// would be refused as older, on every machine, until someone ran
// --allow-downgrade on each. A signer's typo (--version 2062-...) or a
// leaked key signing version 9999-12-31 would pin the fleet.
func TestInstallRefusesASetFromTheFuture(t *testing.T) {
	k := newKey(t)
	dir := t.TempDir()
	now := v(100)
	cur := artifact(t, k, "cur", 99, baseYAML, "a.yaml")
	if _, err := Install(dir, cur, InstallOptions{Private: true, Now: now}); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, dir)
	far := artifactAt(t, k, "far", time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC), baseYAML, "a.yaml")
	for _, downgrade := range []bool{false, true} {
		_, err := Install(dir, far, InstallOptions{Private: true, Now: now, AllowDowngrade: downgrade})
		if !errors.Is(err, ErrFuture) || !strings.Contains(err.Error(), "9999-12-31T23:59:59.999999999Z") {
			t.Fatalf("a set of version 9999 (allow downgrade %v): %v", downgrade, err)
		}
		if after := snapshot(t, dir); after != before {
			t.Fatalf("a refused install changed the directory:\n%s\n---\n%s", before, after)
		}
	}
	// Within a day of the clock is fine (clocks drift; a set signed a
	// moment ago on a machine whose clock runs ahead).
	soon := artifactAt(t, k, "soon", now.Add(MaxFuture), baseYAML, "a.yaml")
	if _, err := Install(dir, soon, InstallOptions{Private: true, Now: now}); err != nil {
		t.Fatalf("a set within %v of the clock: %v", MaxFuture, err)
	}
	if err := CheckVersion(now.Add(MaxFuture+time.Nanosecond), now); !errors.Is(err, ErrFuture) {
		t.Fatalf("CheckVersion a nanosecond past the limit: %v", err)
	}
}

// artifactAt is artifact at an exact version.
func artifactAt(t *testing.T, k key, digestSeed string, version time.Time, body string, names ...string) *Artifact {
	t.Helper()
	a := &Artifact{Ref: testRepo + ":prod", Repository: testRepo, Digest: sha256Digest([]byte(digestSeed))}
	for _, n := range names {
		a.Files = append(a.Files, File{Name: n, Data: []byte(body + "# " + n + "\n")})
	}
	a.SetBundle = k.sign(t, testRepo, version, a.Files...)
	stmt, err := k.verifier()(a.SetBundle, a.Files)
	if err != nil {
		t.Fatal(err)
	}
	if a.Statement, err = ParseStatement(stmt); err != nil {
		t.Fatal(err)
	}
	return a
}
