// Package secret keeps credentials out of what Bouncer prints. Text that
// another party wrote (an authorization server's error, a collector's
// answer) can echo the token it was sent; Bouncer shows such text only
// through [Redact], with the values it knows to be secret.
package secret

import (
	"regexp"
	"slices"
	"strings"
	"unicode"
)

// Mark is what a secret is replaced with.
const Mark = "[redacted]"

// HeaderParts is what of a configured header value must never be shown:
// the value itself, and each word of it but the name of an authorization
// scheme, so that "Bearer TOKEN" hides TOKEN wherever it appears alone.
// A part shorter than 4 bytes is left out: it is no credential, and
// hiding it would blank out ordinary words.
func HeaderParts(v string) []string {
	var out []string
	add := func(p string) {
		if len(p) >= 4 {
			out = append(out, p)
		}
	}
	v = strings.TrimSpace(v)
	add(v)
	for _, w := range strings.Fields(v) {
		if w != v && !strings.EqualFold(w, "bearer") && !strings.EqualFold(w, "basic") && !strings.EqualFold(w, "token") {
			add(w)
		}
	}
	return out
}

// Patterns for secrets whose value this process never learned (an answer
// that carried a token we then failed to parse, say): JSON members, form
// or query parameters and Authorization headers that carry credentials.
var (
	jsonSecret = regexp.MustCompile(`(?i)("(?:access_token|refresh_token|id_token|client_secret|code|code_verifier|registration_access_token|assertion)"\s*:\s*")(?:[^"\\]|\\.)*"`)
	formSecret = regexp.MustCompile(`(?i)\b((?:access_token|refresh_token|id_token|client_secret|code|code_verifier|registration_access_token|assertion)=)[^&\s"']+`)
	authHeader = regexp.MustCompile(`(?i)\b(bearer|basic|dpop)(\s+)[A-Za-z0-9\-._~+/]{12,}=*`)
)

// Redact scrubs s of the known secret values (the longest first, so a
// value is hidden whole before a part of it), of anything shaped like a
// credential, and of control characters: another party's text must not
// drive the user's terminal or forge a line of its own (a newline or tab
// becomes a space).
func Redact(s string, known []string) string {
	known = slices.Clone(known)
	slices.SortFunc(known, func(a, b string) int { return len(b) - len(a) })
	for _, v := range known {
		if v != "" {
			s = strings.ReplaceAll(s, v, Mark)
		}
	}
	s = jsonSecret.ReplaceAllString(s, `${1}`+Mark+`"`)
	s = formSecret.ReplaceAllString(s, `${1}`+Mark)
	s = authHeader.ReplaceAllStringFunc(s, func(m string) string {
		// "basic authentication" is prose; a credential has more than
		// lower-case letters.
		sub := authHeader.FindStringSubmatch(m)
		cred := m[len(sub[1])+len(sub[2]):]
		if strings.IndexFunc(cred, func(r rune) bool { return r < 'a' || r > 'z' }) < 0 {
			return m
		}
		return sub[1] + sub[2] + Mark
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
