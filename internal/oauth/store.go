package oauth

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// record is what Bouncer keeps for one server URL, in
// STATE/oauth/<key>.json (0600, written atomically). It holds the tokens
// and the client that got them, so a restart neither signs in nor
// registers again.
type record struct {
	Version   int    `json:"version"`
	ServerURL string `json:"server_url"`
	// Resource is the RFC 8707 resource indicator the tokens were issued
	// for (the protected resource metadata's resource).
	Resource string `json:"resource,omitempty"`
	// Issuer and the endpoints of the authorization server that issued
	// the tokens.
	Issuer        string        `json:"issuer,omitempty"`
	TokenEndpoint string        `json:"token_endpoint,omitempty"`
	Client        *clientRecord `json:"client,omitempty"`
	Token         *tokenRecord  `json:"token,omitempty"`
	// Scopes are the scopes granted so far (what a step-up adds to).
	Scopes []string `json:"scopes,omitempty"`
}

const recordVersion = 1

type clientRecord struct {
	ID     string `json:"client_id"`
	Secret string `json:"client_secret,omitempty"`
	// AuthMethod is the token endpoint authentication method:
	// none, client_secret_basic or client_secret_post.
	AuthMethod string `json:"token_endpoint_auth_method,omitempty"`
	// Registration is how the client came to be: "dynamic" (RFC 7591),
	// "metadata-document" (the client ID is a URL) or "configured".
	Registration string `json:"registration"`
	// RedirectURI is the loopback redirect URI the client was registered
	// with (dynamic registration: reused while its port is free).
	RedirectURI string `json:"redirect_uri,omitempty"`
	// Issuer is the authorization server the client belongs to.
	Issuer string `json:"issuer"`
	// SecretExpiresAt is when a dynamically registered secret expires
	// (zero: never).
	SecretExpiresAt time.Time `json:"client_secret_expires_at,omitzero"`
}

type tokenRecord struct {
	AccessToken  string    `json:"access_token"`
	TokenType    string    `json:"token_type,omitempty"`
	RefreshToken string    `json:"refresh_token,omitempty"`
	Expiry       time.Time `json:"expiry,omitzero"`
	Scope        string    `json:"scope,omitempty"`
}

// store reads and writes the records of one state directory.
type store struct {
	dir string // STATE/oauth
}

func newStore(stateDir string) store {
	return store{dir: filepath.Join(stateDir, "oauth")}
}

// canonicalURL is the server URL as the key and the resource are
// derived from it: scheme and host lower case, default port dropped, no
// fragment. The path and query are kept as they are.
func canonicalURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", err
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("%q is not an http or https URL", raw)
	}
	if u.Host == "" {
		return "", fmt.Errorf("%q has no host", raw)
	}
	if u.User != nil {
		return "", fmt.Errorf("the server URL must not carry a user name or password")
	}
	u.Scheme = strings.ToLower(u.Scheme)
	u.Host = strings.ToLower(u.Host)
	if (u.Scheme == "https" && u.Port() == "443") || (u.Scheme == "http" && u.Port() == "80") {
		u.Host = u.Hostname()
		if strings.Contains(u.Host, ":") {
			u.Host = "[" + u.Host + "]"
		}
	}
	u.Fragment = ""
	u.RawFragment = ""
	return u.String(), nil
}

// path is the file of a server URL: a hash, so that no URL can name a
// path outside the directory, and so that the name says nothing about
// the server to someone listing the directory.
func (s store) path(serverURL string) string {
	sum := sha256.Sum256([]byte(serverURL))
	return filepath.Join(s.dir, hex.EncodeToString(sum[:16])+".json")
}

// load returns the record of serverURL, or nil if there is none.
func (s store) load(serverURL string) (*record, error) {
	p := s.path(serverURL)
	data, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the stored sign-in %s: %v", p, err)
	}
	// Every file Bouncer keeps is 0600; put one that was loosened back.
	if fi, err := os.Stat(p); err == nil && fi.Mode().Perm() != 0o600 {
		_ = os.Chmod(p, 0o600)
	}
	var r record
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("the stored sign-in %s is damaged (%v): remove it and Bouncer will sign in again", p, err)
	}
	if r.ServerURL != serverURL {
		// A hash collision or a copied file: not ours to use.
		return nil, nil
	}
	return &r, nil
}

// save writes r atomically: a temporary file in the same directory,
// synced, then renamed over the old one. The file is 0600 and the
// directory 0700.
func (s store) save(r *record) error {
	r.Version = recordVersion
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return fmt.Errorf("creating %s: %v", s.dir, err)
	}
	tmp, err := os.CreateTemp(s.dir, ".tmp-*.json")
	if err != nil {
		return fmt.Errorf("storing the sign-in in %s: %v", s.dir, err)
	}
	done := false
	defer func() {
		if !done {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	// CreateTemp made it 0600 (no chmod: the sandboxed proxy may not).
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		return fmt.Errorf("storing the sign-in in %s: %v", s.dir, err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("storing the sign-in in %s: %v", s.dir, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("storing the sign-in in %s: %v", s.dir, err)
	}
	if err := os.Rename(tmp.Name(), s.path(r.ServerURL)); err != nil {
		return fmt.Errorf("storing the sign-in in %s: %v", s.dir, err)
	}
	done = true
	if d, err := os.Open(s.dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

// lockPath is the lock file of serverURL's record.
func (s store) lockPath(serverURL string) string {
	return strings.TrimSuffix(s.path(serverURL), ".json") + ".lock"
}

// remove deletes the record of serverURL, if any.
func (s store) remove(serverURL string) error {
	err := os.Remove(s.path(serverURL))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
