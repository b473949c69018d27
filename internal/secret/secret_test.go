package secret

import (
	"slices"
	"testing"
)

func TestHeaderParts(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"Bearer tok-0123", []string{"Bearer tok-0123", "tok-0123"}},
		{"  key-0123  ", []string{"key-0123"}},
		{"Basic dXNlcjpwYXNz", []string{"Basic dXNlcjpwYXNz", "dXNlcjpwYXNz"}},
		{"token abc defg", []string{"token abc defg", "defg"}},
		{"abc", nil},
		{"", nil},
	} {
		if got := HeaderParts(c.in); !slices.Equal(got, c.want) {
			t.Errorf("HeaderParts(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestRedact(t *testing.T) {
	known := []string{"tok-0123456789", "Bearer tok-0123456789", "key-fedcba"}
	for in, want := range map[string]string{
		// The whole value first, then its parts wherever they stand.
		"Authorization: Bearer tok-0123456789": "Authorization: [redacted]",
		"unknown token tok-0123456789!":        "unknown token [redacted]!",
		"x-api-key=key-fedcba;":                "x-api-key=[redacted];",
		// What no one configured but looks like a credential.
		`{"access_token":"eyJhbGciOi.x.y"}`:     `{"access_token":"[redacted]"}`,
		"Bearer abcdefghijklmnopqrstuvwxyz0123": "Bearer [redacted]",
		// Another party's text drives no terminal and forges no line.
		"401\nAuthorization\x1b[2J\u202e": "401 Authorization[2J",
	} {
		if got := Redact(in, known); got != want {
			t.Errorf("Redact(%q)\n got %q\nwant %q", in, got, want)
		}
	}
}
