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
