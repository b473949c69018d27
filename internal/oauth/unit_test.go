package oauth

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestRedact(t *testing.T) {
	known := []string{"s3cr3t-known-value"}
	for in, want := range map[string]string{
		`token endpoint said {"access_token":"eyJhbGciOi.x.y","token_type":"Bearer"}`: `token endpoint said {"access_token":"[redacted]","token_type":"Bearer"}`,
		`{"refresh_token" : "r\"t"}`:                                    `{"refresh_token" : "[redacted]"}`,
		`request was code=abc123&code_verifier=xyz&client_secret=s&x=1`: `request was code=[redacted]&code_verifier=[redacted]&client_secret=[redacted]&x=1`,
		`Authorization: Bearer abcdefghijklmnopqrstuvwxyz0123`:          `Authorization: Bearer [redacted]`,
		`Authorization: Basic Y2xpZW50OnNlY3JldA==`:                     `Authorization: Basic [redacted]`,
		`it uses basic authentication`:                                  `it uses basic authentication`,
		`the value s3cr3t-known-value leaked`:                           `the value [redacted] leaked`,
		"line\nbreak\x1b[31m red \u202e":                                "line break[31m red ",
	} {
		if got := redact(in, known); got != want {
			t.Errorf("redact(%q)\n got %q\nwant %q", in, got, want)
		}
	}
}

func TestErrorKinds(t *testing.T) {
	a := &Authorizer{}
	a.secret.add("leaky-token-value")
	err := a.fail(ErrSignInFailed, errors.New("answer had leaky-token-value in it"))
	if !errors.Is(err, ErrSignInFailed) || errors.Is(err, ErrSignInNeeded) {
		t.Fatalf("kind: %v", err)
	}
	if strings.Contains(err.Error(), "leaky") || !strings.HasPrefix(err.Error(), "oauth: ") {
		t.Fatalf("message %q", err)
	}
}

func TestOpenWith(t *testing.T) {
	found := func(names ...string) func(string) (string, error) {
		return func(n string) (string, error) {
			for _, x := range names {
				if x == n {
					return "/bin/true", nil
				}
			}
			return "", errors.New("not found")
		}
	}
	// $BROWSER entries are tried in order; a missing one is skipped.
	if err := openWith("https://as.example/authorize?x=1", "nonexistent-browser:true", "linux", found("true")); err != nil {
		t.Fatal(err)
	}
	// Nothing to open with is reported, not fatal.
	if err := openWith("https://as.example/", "", "linux", found()); !errors.Is(err, errNoBrowser) {
		t.Fatalf("err = %v", err)
	}
	// %s stands for the URL; the URL is one argument, never a shell word.
	dir := t.TempDir()
	out := filepath.Join(dir, "args")
	script := writeScript(t, dir, "br", `for a in "$@"; do echo "[$a]"; done > '`+out+`'`)
	url := "https://as.example/authorize?a=1&b=$(touch /tmp/pwned) c"
	if err := openWith(url, script+" --new-window %s", "linux", func(p string) (string, error) { return p, nil }); err != nil {
		t.Fatal(err)
	}
	var got []byte
	for i := 0; i < 100; i++ {
		if got, _ = os.ReadFile(out); len(got) > 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if want := "[--new-window]\n[" + url + "]\n"; string(got) != want {
		t.Fatalf("browser args %q, want %q", got, want)
	}
}

func TestCanonicalURL(t *testing.T) {
	for in, want := range map[string]string{
		"HTTPS://MCP.Example.com:443/mcp#frag": "https://mcp.example.com/mcp",
		"http://127.0.0.1:8080/mcp?x=1":        "http://127.0.0.1:8080/mcp?x=1",
		"http://[::1]:80/":                     "http://[::1]/",
	} {
		got, err := canonicalURL(in)
		if err != nil || got != want {
			t.Errorf("canonicalURL(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"ftp://x/", "https:///x", "https://user:pw@x/", "::"} {
		if _, err := canonicalURL(bad); err == nil {
			t.Errorf("canonicalURL(%q) accepted", bad)
		}
	}
}

func TestStoreAtomic0600(t *testing.T) {
	home := t.TempDir()
	s := newStore(home)
	r := &record{ServerURL: "https://mcp.example.com/mcp", Token: &tokenRecord{AccessToken: "a", RefreshToken: "r", Expiry: time.Unix(2e9, 0).UTC()}}
	if err := s.save(r); err != nil {
		t.Fatal(err)
	}
	r.Token.AccessToken = "b"
	if err := s.save(r); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(s.dir)
	if len(entries) != 1 {
		t.Fatalf("%d files (temporary files left?)", len(entries))
	}
	fi, _ := os.Stat(s.path(r.ServerURL))
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", fi.Mode())
	}
	// Loosened by hand: put back to 0600 on load.
	os.Chmod(s.path(r.ServerURL), 0o644)
	got, err := s.load(r.ServerURL)
	if err != nil || got.Token.AccessToken != "b" || !got.Token.Expiry.Equal(r.Token.Expiry) {
		t.Fatalf("load: %+v %v", got, err)
	}
	if fi, _ := os.Stat(s.path(r.ServerURL)); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode after load %v", fi.Mode())
	}
	// Another server's URL has its own file; a damaged file is an error that says what to do.
	if got, _ := s.load("https://mcp.example.com/other"); got != nil {
		t.Fatal("another server's record")
	}
	os.WriteFile(s.path(r.ServerURL), []byte("{"), 0o600)
	if _, err := s.load(r.ServerURL); err == nil || !strings.Contains(err.Error(), "remove it") {
		t.Fatalf("damaged: %v", err)
	}
}
