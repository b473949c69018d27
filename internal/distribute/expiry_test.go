package distribute

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// expiring is artifact at version v(version) with the statement's expiry
// at expires (zero: none).
func expiring(t *testing.T, k key, digestSeed string, version int, expires time.Time) *Artifact {
	t.Helper()
	a := &Artifact{Ref: testRepo + ":prod", Repository: testRepo, Digest: sha256Digest([]byte(digestSeed))}
	a.Files = []File{{Name: "a.yaml", Data: []byte(baseYAML + "# " + digestSeed + "\n")}}
	stmt, err := NewStatement(testRepo, v(version), expires, a.Files)
	if err != nil {
		t.Fatal(err)
	}
	if a.SetBundle, err = k.signer.SignStatement(stmt); err != nil {
		t.Fatal(err)
	}
	raw, err := k.verifier()(a.SetBundle, a.Files)
	if err != nil {
		t.Fatal(err)
	}
	if a.Statement, err = ParseStatement(raw); err != nil {
		t.Fatal(err)
	}
	return a
}

// A statement's expiry is signed with it, read back, and must come after
// its version.
func TestStatementExpires(t *testing.T) {
	files := []File{file("a.yaml", baseYAML)}
	raw, err := NewStatement(testRepo, v(0), v(24), files)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), `"expires": "2026-05-02T12:00:00Z"`) {
		t.Fatalf("statement:\n%s", raw)
	}
	st, err := ParseStatement(raw)
	if err != nil || !st.Expires.Equal(v(24)) {
		t.Fatalf("%+v %v", st, err)
	}
	plain, _ := NewStatement(testRepo, v(0), time.Time{}, files)
	if strings.Contains(string(plain), "expires") {
		t.Errorf("no expiry written as one:\n%s", plain)
	}
	if _, err := NewStatement(testRepo, v(1), v(1), files); err == nil {
		t.Error("an expiry at the version was signed")
	}
	bad := strings.Replace(string(plain), `"version": "2026-05-01T12:00:00Z"`, `"version": "2026-05-01T12:00:00Z", "expires": "2026-04-01T00:00:00Z"`, 1)
	if _, err := ParseStatement([]byte(bad)); err == nil || !strings.Contains(err.Error(), "is not after the version") {
		t.Errorf("an expiry before the version: %v", err)
	}
	bad = strings.Replace(string(plain), `"version": "2026-05-01T12:00:00Z"`, `"version": "2026-05-01T12:00:00Z", "expires": "soon"`, 1)
	if _, err := ParseStatement([]byte(bad)); err == nil || !strings.Contains(err.Error(), "expires") {
		t.Errorf("an expiry that is no time: %v", err)
	}
}

// When a set stops being fresh: its own expiry, the version plus max_age,
// whichever comes first; never, for a set with neither.
func TestFreshness(t *testing.T) {
	st := func(expires time.Time) *Statement { return &Statement{Version: v(0), Expires: expires} }
	for _, c := range []struct {
		name    string
		st      *Statement
		maxAge  time.Duration
		now     time.Time
		expired string // "" = fresh
	}{
		{"no expiry, no max_age: for ever", st(time.Time{}), 0, v(100000), ""},
		{"before its expiry", st(v(24)), 0, v(23), ""},
		{"at its expiry", st(v(24)), 0, v(24), "expired on 2026-05-02T12:00:00Z, as its signed statement says"},
		{"max_age on an old set without expiry", st(time.Time{}), 48 * time.Hour, v(48), "expired on 2026-05-03T12:00:00Z, by max_age 2d (trust.yaml:3), counted from its version"},
		{"max_age within it", st(time.Time{}), 48 * time.Hour, v(47), ""},
		{"max_age sooner than the expiry", st(v(72)), 48 * time.Hour, v(50), "by max_age"},
		{"the expiry sooner than max_age", st(v(24)), 48 * time.Hour, v(30), "as its signed statement says"},
	} {
		f := Freshness{Now: c.now, MaxAge: c.maxAge, Source: "max_age 2d (trust.yaml:3)"}
		err := f.Check(c.st)
		if (c.expired == "") != (err == nil) || (err != nil && (!errors.Is(err, ErrExpired) || !strings.Contains(err.Error(), c.expired))) {
			t.Errorf("%s: %v, want %q", c.name, err, c.expired)
		}
	}
}

// An expired set is neither installed nor used: a registry serving the
// team's last set for ever (a freeze) is found out once it expires, by
// pull and by every reader, as TUF's timestamp role finds it.
func TestExpiredSetRefused(t *testing.T) {
	k := newKey(t)
	dir := t.TempDir()
	a := expiring(t, k, "one", 0, v(24))
	if _, err := Install(dir, a, InstallOptions{Private: true, Now: v(1)}); err != nil {
		t.Fatal(err)
	}
	if _, err := VerifyInstalled(dir, k.verifier(), Freshness{Now: v(23)}); err != nil {
		t.Fatalf("before its expiry: %v", err)
	}
	_, err := VerifyInstalled(dir, k.verifier(), Freshness{Now: v(24)})
	if !errors.Is(err, ErrExpired) || !strings.Contains(err.Error(), "bouncer policy pull "+testRepo+":prod") {
		t.Fatalf("past its expiry: %v", err)
	}
	// The registry still serving it: pull refuses it, and leaves the
	// directory as it was (the same set, or an older one).
	before := snapshot(t, dir)
	if _, err := Install(dir, a, InstallOptions{Private: true, Now: v(25)}); !errors.Is(err, ErrExpired) || !strings.Contains(err.Error(), "the registry serves a set that is no longer to be used") {
		t.Fatalf("pulling the expired set again: %v", err)
	}
	if snapshot(t, dir) != before {
		t.Fatal("a refused pull changed the directory")
	}
	// A newer set, signed before the old one expired, takes over.
	b := expiring(t, k, "two", 20, v(200))
	if _, err := Install(dir, b, InstallOptions{Private: true, Now: v(25)}); err != nil {
		t.Fatal(err)
	}
	if _, err := VerifyInstalled(dir, k.verifier(), Freshness{Now: v(25)}); err != nil {
		t.Fatal(err)
	}

	// An old set with no expiry keeps working, until a max_age is set.
	dir = t.TempDir()
	old := expiring(t, k, "old", 0, time.Time{})
	if _, err := Install(dir, old, InstallOptions{Private: true, Now: v(1)}); err != nil {
		t.Fatal(err)
	}
	if _, err := VerifyInstalled(dir, k.verifier(), Freshness{Now: v(100000)}); err != nil {
		t.Fatalf("no expiry, no max_age: %v", err)
	}
	if _, err := VerifyInstalled(dir, k.verifier(), Freshness{Now: v(24 * 31), MaxAge: 30 * 24 * time.Hour, Source: "max_age 30d (trust.yaml:2)"}); !errors.Is(err, ErrExpired) || !strings.Contains(err.Error(), "max_age 30d (trust.yaml:2)") {
		t.Fatalf("max_age 30d, 31 days on: %v", err)
	}
	if _, err := Install(dir, old, InstallOptions{Private: true, Now: v(24 * 31), MaxAge: 30 * 24 * time.Hour}); !errors.Is(err, ErrExpired) {
		t.Fatalf("pulling it again under max_age: %v", err)
	}
}
