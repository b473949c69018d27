package oauth

import (
	"errors"
	"regexp"
	"strings"
	"sync"
	"unicode"
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

const redacted = "[redacted]"

// Patterns for secrets whose value this process never learned (an answer
// that carried a token we then failed to parse, say): JSON members, form
// or query parameters and Authorization headers that carry credentials.
var (
	jsonSecret = regexp.MustCompile(`(?i)("(?:access_token|refresh_token|id_token|client_secret|code|code_verifier|registration_access_token|assertion)"\s*:\s*")(?:[^"\\]|\\.)*"`)
	formSecret = regexp.MustCompile(`(?i)\b((?:access_token|refresh_token|id_token|client_secret|code|code_verifier|registration_access_token|assertion)=)[^&\s"']+`)
	authHeader = regexp.MustCompile(`(?i)\b(bearer|basic|dpop)(\s+)[A-Za-z0-9\-._~+/]{12,}=*`)
)

// redact scrubs s of the known secret values and of anything shaped like
// a credential, and of control characters (an authorization server's
// text must not drive the user's terminal).
func redact(s string, known []string) string {
	for _, v := range known {
		s = strings.ReplaceAll(s, v, redacted)
	}
	s = jsonSecret.ReplaceAllString(s, `${1}`+redacted+`"`)
	s = formSecret.ReplaceAllString(s, `${1}`+redacted)
	s = authHeader.ReplaceAllStringFunc(s, func(m string) string {
		// "basic authentication" is prose; a credential has more than
		// lower-case letters.
		sub := authHeader.FindStringSubmatch(m)
		cred := m[len(sub[1])+len(sub[2]):]
		if strings.IndexFunc(cred, func(r rune) bool { return r < 'a' || r > 'z' }) < 0 {
			return m
		}
		return sub[1] + sub[2] + redacted
	})
	return strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' {
			return ' '
		}
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' || unicode.Is(unicode.Bidi_Control, r) {
			return -1
		}
		return r
	}, s)
}

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
