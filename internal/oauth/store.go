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

	"github.com/bouncer-mcp/bouncer/internal/statefile"
)

// record is what Bouncer keeps for one server URL, in
// STATE/oauth/<key>.json (0600, written and read back by statefile). It
// holds the tokens and the client that got them, so a restart neither
// signs in nor registers again.
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

// maxRecordFile bounds a record file: tokens and a client take a few
// kilobytes. A longer file is refused whole.
const maxRecordFile = 1 << 20

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

// load returns the record of serverURL, or nil if there is none. A file
// that another user owns or may write is refused (statefile.ReadOwned):
// its tokens and token endpoint would be theirs.
func (s store) load(serverURL string) (*record, error) {
	p := s.path(serverURL)
	data, err := statefile.ReadOwned(p, maxRecordFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the stored sign-in %s: %v", p, err)
	}
	// Tokens are secrets: a file loosened so that others may read it is
	// put back to 0600 (refusing it would not take back what was read).
	// The sandboxed proxy may not chmod; then it stays as it is.
	if fi, err := os.Stat(p); err == nil && fi.Mode().Perm() != statefile.Perm {
		_ = os.Chmod(p, statefile.Perm)
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

// save writes r (statefile.Write: 0600, whole, on disk) in the 0700
// directory.
func (s store) save(r *record) error {
	r.Version = recordVersion
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := statefile.Dir(s.dir); err != nil {
		return fmt.Errorf("storing the sign-in in %s: %v", s.dir, err)
	}
	if err := statefile.Write(s.path(r.ServerURL), append(data, '\n')); err != nil {
		return fmt.Errorf("storing the sign-in in %s: %v", s.dir, err)
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
