package main

import (
	"net/http"
	"strings"
	"testing"
)

// A credential written out on the command line is told apart from a
// ${VAR} reference and from a header that carries none.
func TestArgvCredential(t *testing.T) {
	for _, c := range []struct {
		name, raw string
		want      bool
	}{
		{"Authorization", "Bearer abc.def", true},
		{"Authorization", "Bearer ${TOKEN}", false},
		{"Authorization", "${AUTH}", false},
		{"Authorization", "Basic dXNlcjpwYXNz", true},
		{"authorization", "abc", true},
		{"Proxy-Authorization", "Basic x", true},
		{"Cookie", "session=abc", true},
		{"X-Api-Key", "k-123", true},
		{"X-API-KEY", "${KEY}", false},
		{"Private-Token", "glpat-xyz", true},
		{"X-Client-Secret", "s", true},
		{"X-Auth", "abc", true},
		{"X-Custom", "Bearer abc", true},
		{"X-Custom", "token abc", true},
		{"X-Team", "blue", false},
		{"Accept-Language", "en", false},
		{"X-Trace", "Bearer", false},
		{"Authorization", "Bearer ${A}${B}", false},
		{"Authorization", "", false},

		// Vendor headers that carry a key under a name no list holds: the
		// value's shape gives them away.
		{"X-Honeycomb-Team", "7d3f0c2b9a8e4f61b5d2c0e9a7f4b3c1", true},
		{"X-Honeycomb-Team", "hcaik_01j8x2v7k9m3n4p5q6r7s8t9u0w1y2z3a4b5c6d7e8f9g0h1", true},
		{"X-JFrog-Art-Api", "AKCp8jQ8tS6nkTVSBnH3XG9SWzRmWbKX6L3DwNB7KxQmGfBb2zP5fR8bXhYq4nV9Ju2cW", true},
		{"X-Custom", "ghp_R2d7kLq9Xz0vB4nM8sT1wY6cF3hJ5pA7eG2u", true},
		{"X-Custom", "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U", true},
		{"X-Amz-Key", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", true},
		{"X-Dd-Api", "AKIAIOSFODNN7EXAMPLE", true},
		{"X-Custom", "xoxb-123456789012-1234567890123-Ab3dEf9hIjK1MnOpQ7StUvWx", true},
		{"X-Custom", "prefix ${SECRET} 9f86d081884c7d659a2feaa0c55ad015", true},
		{"X-Honeycomb-Team", "${HONEYCOMB_KEY}", false},

		// Ordinary headers stay quiet.
		{"Accept", "application/json", false},
		{"Accept", "application/vnd.github.v3+json", false},
		{"Accept", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8", false},
		{"Content-Type", "application/x-www-form-urlencoded; charset=UTF-8", false},
		{"User-Agent", "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36", false},
		{"User-Agent", "bouncer/1.2.3 (linux; go1.26.8)", false},
		{"X-Request-Id", "abc123", false},
		{"X-Request-Id", "req-20261201-0042", false},
		{"X-Correlation-Id", "3f2a9c01-b4de-4c1e-8a55-7c1e0a55b4de", false},
		{"Accept-Language", "en-US,en;q=0.9", false},
		{"X-Timestamp", "2026-12-01T09:30:00.000000000Z", false},
		{"X-Timestamp", "20261201T093000Z", false},
		{"If-Modified-Since", "Wed, 21 Oct 2015 07:28:00 GMT", false},
		{"X-Client-Version", "ReleaseCandidate2024", false},
		{"X-Account", "123456789012345678", false},
		{"X-Mcp-Server", "mcp.internal.example.com", false},
	} {
		if got := argvCredential(c.name, c.raw); got != c.want {
			t.Errorf("%s: %q: %v, want %v", c.name, c.raw, got, c.want)
		}
	}
}

func TestExpandEnvHeaders(t *testing.T) {
	env := map[string]string{"TOKEN": "t0k", "EMPTY": ""}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	h := http.Header{}
	env["NESTED"] = "${TOKEN}"
	if err := addHeaders(h, []string{"Authorization: Bearer ${TOKEN}", "X-E: a${EMPTY}b", "X-Lit: $TOKEN {TOKEN}", "X-Once: ${NESTED}"}, lookup); err != nil {
		t.Fatal(err)
	}
	if h.Get("Authorization") != "Bearer t0k" || h.Get("X-E") != "ab" || h.Get("X-Lit") != "$TOKEN {TOKEN}" || h.Get("X-Once") != "${TOKEN}" {
		t.Fatalf("headers %v", h)
	}
	for _, c := range []struct{ flag, want string }{
		{"Authorization: Bearer ${NOPE}", "--header #1 (Authorization): ${NOPE} is not set"},
		{"Authorization: Bearer ${TOKEN:-s3cr3t}", `--header #1 (Authorization): the "${...}" at byte 7 is not a variable reference`},
		{"Authorization: Bearer ${s3cr3t", `--header #1 (Authorization): the "${" at byte 7 has no closing "}"`},
		{"Bad Name: x", "--header #1: give it as"},
		{"X-Nl: ${NL}", "the value has a line break"},
		{"no colon s3cr3t", "--header #1: give it as"},
	} {
		env["NL"] = "a\nb"
		err := addHeaders(http.Header{}, []string{c.flag}, lookup)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "s3cr3t") {
			t.Errorf("%q: %v, want %q", c.flag, err, c.want)
		}
	}
}

func TestValidHeaderName(t *testing.T) {
	for name, ok := range map[string]bool{
		"Authorization": true, "X-Api-Key": true, "x_custom.1~": true,
		"": false, "Bad Name": false, "Na:me": false, "Ünicode": false, "a\tb": false, "(x)": false,
	} {
		if validHeaderName(name) != ok {
			t.Errorf("%q: want %v", name, ok)
		}
	}
}
