package listen

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	"github.com/bouncer-mcp/bouncer/internal/unixshim"
)

// Authenticator says who a request is from.
type Authenticator interface {
	// Authenticate returns the user, or an error for a 401.
	Authenticate(r *http.Request) (user string, err error)
	// Challenge answers a request Authenticate refused.
	Challenge(w http.ResponseWriter, r *http.Request, err error)
}

// None lets every request in as one user: only on a loopback address (the
// caller checks), where the machine's users are the only clients.
type None struct{ User string }

// Authenticate implements Authenticator.
func (n None) Authenticate(*http.Request) (string, error) { return n.User, nil }

// Challenge implements Authenticator; None never refuses.
func (None) Challenge(w http.ResponseWriter, _ *http.Request, err error) {
	http.Error(w, err.Error(), http.StatusUnauthorized)
}

// Tokens are static bearer tokens, one user each, each read from a file
// only its owner may read. A presented token is compared by its SHA-256,
// looked up in a map: the time taken does not depend on how much of a
// token matched.
type Tokens struct {
	byHash map[[32]byte]string
}

// maxTokenFile bounds a token file.
const maxTokenFile = 4096

// LoadTokens reads the token files: user → path. Each file holds one token
// (surrounding whitespace ignored), is a regular file of this process's
// user, and no one else may read or write it (0600 or stricter).
func LoadTokens(files map[string]string) (*Tokens, error) {
	t := &Tokens{byHash: map[[32]byte]string{}}
	for user, path := range files {
		if user == "" {
			return nil, fmt.Errorf("token file %s: the user name is empty", path)
		}
		tok, err := readSecret(path)
		if err != nil {
			return nil, err
		}
		if len(tok) < 16 {
			return nil, fmt.Errorf("token file %s: the token is %d characters; use at least 16 random ones (openssl rand -hex 32)", path, len(tok))
		}
		h := sha256.Sum256([]byte(tok))
		if other, dup := t.byHash[h]; dup {
			return nil, fmt.Errorf("token file %s: the same token as user %q's; give each user a token of their own", path, other)
		}
		t.byHash[h] = user
	}
	if len(t.byHash) == 0 {
		return nil, errors.New("auth: token needs at least one entry in tokens")
	}
	return t, nil
}

// readSecret reads a credential file: a regular file of this user that
// nobody else may read or write.
func readSecret(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("token file: %v", err)
	}
	defer f.Close()
	var st unixshim.Stat_t
	if err := unixshim.Fstat(int(f.Fd()), &st); err != nil {
		return "", fmt.Errorf("token file %s: %v", path, err)
	}
	mode := uint32(st.Mode)
	// The listener's own file, 0600 or stricter; or, as a Kubernetes
	// Secret is mounted (defaultMode 0440, fsGroup), root's file that only
	// the listener's group may read, and nobody write.
	own := int(st.Uid) == os.Geteuid() && mode&0o077 == 0
	mounted := st.Uid == 0 && int(st.Gid) == os.Getegid() && mode&0o337 == 0
	switch {
	case mode&unixshim.S_IFMT != unixshim.S_IFREG:
		return "", fmt.Errorf("token file %s: not a regular file", path)
	case !own && !mounted && int(st.Uid) != os.Geteuid() && st.Uid != 0:
		return "", fmt.Errorf("token file %s: owned by uid %d, not by this user (uid %d); it holds a credential, so it must be the listener's", path, st.Uid, os.Geteuid())
	case !own && !mounted:
		return "", fmt.Errorf("token file %s: mode %04o lets others read or write it; it holds a credential: chmod 600 %s", path, mode&0o777, path)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxTokenFile+1))
	if err != nil {
		return "", fmt.Errorf("token file %s: %v", path, err)
	}
	if len(data) > maxTokenFile {
		return "", fmt.Errorf("token file %s: larger than %d bytes; it holds one token", path, maxTokenFile)
	}
	tok := strings.TrimSpace(string(data))
	if tok == "" || strings.ContainsAny(tok, " \t\r\n") {
		return "", fmt.Errorf("token file %s: give one token, on one line", path)
	}
	return tok, nil
}

// bearer returns the request's bearer token.
func bearer(r *http.Request) (string, bool) {
	hs := r.Header.Values("Authorization")
	if len(hs) != 1 {
		return "", false
	}
	scheme, tok, ok := strings.Cut(hs[0], " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimSpace(tok)
	return tok, tok != ""
}

var errNoToken = errors.New("unauthorized: send Authorization: Bearer TOKEN")

// Authenticate implements Authenticator.
func (t *Tokens) Authenticate(r *http.Request) (string, error) {
	tok, ok := bearer(r)
	if !ok {
		return "", errNoToken
	}
	user, ok := t.byHash[sha256.Sum256([]byte(tok))]
	if !ok {
		return "", errors.New("unauthorized: the token is not one of this listener's")
	}
	return user, nil
}

// Challenge implements Authenticator.
func (t *Tokens) Challenge(w http.ResponseWriter, _ *http.Request, err error) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="bouncer"`)
	http.Error(w, err.Error(), http.StatusUnauthorized)
}
