package bundle

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// max_age is a length of time, read from either trust file; the smaller
// one wins, so a user's file can shorten the system file's, never
// lengthen it.
func TestMaxAge(t *testing.T) {
	dir := t.TempDir()
	tr := loadTrustFile(t, dir, "require_signed: false\nmax_age: 30d\n")
	if d, src := tr.MaxAge(); d != 30*24*time.Hour || src != "max_age 30d ("+filepath.Join(dir, "trust.yaml")+":2)" {
		t.Fatalf("MaxAge = %v, %q", d, src)
	}
	if d, src := loadTrustFile(t, t.TempDir(), "require_signed: false\n").MaxAge(); d != 0 || src != "" {
		t.Fatalf("no max_age: %v, %q", d, src)
	}

	for _, c := range []struct{ sys, user, want string }{
		{"max_age: 30d\n", "require_signed: false\nmax_age: 7d\n", "max_age 7d"},
		{"max_age: 7d\n", "require_signed: false\nmax_age: 30d\n", "max_age 7d"},
		{"max_age: 720h\n", "require_signed: false\n", "max_age 720h"},
	} {
		etc := t.TempDir()
		old := systemTrustFile
		systemTrustFile = writeFile(t, filepath.Join(etc, "trust.yaml"), []byte(c.sys))
		user := writeFile(t, filepath.Join(t.TempDir(), "mine.yaml"), []byte(c.user))
		tr, err := LoadTrust(user, "")
		systemTrustFile = old
		if err != nil {
			t.Fatal(err)
		}
		if _, src := tr.MaxAge(); !strings.HasPrefix(src, c.want+" (") {
			t.Errorf("system %q, user %q: %q, want %q", c.sys, c.user, src, c.want)
		}
	}

	for body, want := range map[string]string{
		"max_age: 0d\n":    `trust.yaml:1: max_age: "0d" is not a length of time`,
		"max_age: -5h\n":   `"-5h" is not a length of time`,
		"max_age: month\n": `"month" is not a length of time (write 30d, 720h or 90m)`,
		"max_age: 30\n":    "max_age: expected a string",
	} {
		p := writeFile(t, filepath.Join(t.TempDir(), "trust.yaml"), []byte(body))
		if _, err := LoadTrust(p, ""); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err %v, want %q", body, err, want)
		}
	}
}

func TestParseAge(t *testing.T) {
	for s, want := range map[string]time.Duration{"30d": 30 * 24 * time.Hour, "1d": 24 * time.Hour, "720h": 720 * time.Hour, "90m": 90 * time.Minute, "1h30m": 90 * time.Minute} {
		if d, err := ParseAge(s); err != nil || d != want {
			t.Errorf("%q: %v %v, want %v", s, d, err, want)
		}
	}
	for _, s := range []string{"", "0", "0d", "-1d", "d", "1.5d", "30 d", "1w", "99999999d"} {
		if d, err := ParseAge(s); err == nil {
			t.Errorf("%q read as %v", s, d)
		}
	}
}
