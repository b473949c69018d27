package oauth

import (
	"errors"
	"sync"

	"github.com/bouncer-mcp/bouncer/internal/secret"
)

// ErrSignInNeeded is what a request gets when the server wants a new
// sign-in (no token, or the refresh token was refused) and the
// Authorizer may not run one now: it was sealed (see
// [Authorizer.Seal]), as a proxy does once it is sandboxed. The message
// tells the user to restart Bouncer, which signs in before the sandbox.
var ErrSignInNeeded = errors.New("oauth: a new sign-in is needed")

// ErrSignInFailed marks every error of a sign-in that ran and did not
// end with a token: discovery, registration, the browser step, the code
// exchange.
var ErrSignInFailed = errors.New("oauth: sign-in failed")

// Error is every error this package returns. Its text has been redacted:
// it never holds an access or refresh token, a client secret, an
// authorization code or a PKCE verifier, even where the underlying
// error (an authorization server's answer, say) did. It deliberately
// does not unwrap to that underlying error; errors.Is matches only its
// kind ([ErrSignInNeeded], [ErrSignInFailed]) and context errors.
type Error struct {
	msg  string
	kind error
}

func (e *Error) Error() string { return e.msg }

// Is reports whether target is e's kind.
func (e *Error) Is(target error) bool { return target != nil && target == e.kind }

// secrets is the set of secret values an Authorizer has seen; every error
// and message it emits is scrubbed of them.
type secrets struct {
	mu  sync.Mutex
	set map[string]bool
}

func (s *secrets) add(vs ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.set == nil {
		s.set = map[string]bool{}
	}
	for _, v := range vs {
		// Very short values would blank out ordinary words; no real token,
		// secret, code or verifier is that short.
		if len(v) >= 6 {
			s.set[v] = true
		}
	}
}

func (s *secrets) list() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.set))
	for v := range s.set {
		out = append(out, v)
	}
	return out
}

// redact scrubs s of the known secret values, of anything shaped like a
// credential and of control characters (an authorization server's text
// must not drive the user's terminal); see [secret.Redact].
func redact(s string, known []string) string { return secret.Redact(s, known) }

// clip shortens text that came from a server, for messages.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }
