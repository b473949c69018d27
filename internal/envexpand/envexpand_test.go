package envexpand

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

var env = map[string]string{
	"TOKEN":  "t0k",
	"EMPTY":  "",
	"_X1":    "x",
	"NESTED": "${TOKEN}",
	"DOLLAR": "$",
}

func lookup(k string) (string, bool) { v, ok := env[k]; return v, ok }

func TestExpand(t *testing.T) {
	for _, c := range []struct {
		in, want string
		err      string // "" = no error; else a part of the message
		unset    string // the Name an unset-variable error carries
	}{
		// ${NAME} is replaced, wherever it is and however many there are.
		{in: "Bearer ${TOKEN}", want: "Bearer t0k"},
		{in: "${TOKEN}${TOKEN}", want: "t0kt0k"},
		{in: "${_X1}-${TOKEN}-end", want: "x-t0k-end"},
		// Set to "" is "", not an error.
		{in: "a${EMPTY}b", want: "ab"},
		// No "${": the value as written, byte for byte.
		{in: "", want: ""},
		{in: "plain", want: "plain"},
		{in: "\xff\x00", want: "\xff\x00"},
		// $NAME, a lone $, $$ and a { without $ are literal.
		{in: "$TOKEN {TOKEN}", want: "$TOKEN {TOKEN}"},
		{in: "pa$$word$", want: "pa$$word$"},
		{in: "$$${TOKEN}", want: "$$t0k"},
		{in: "}{TOKEN}$", want: "}{TOKEN}$"},
		// A value is never expanded again.
		{in: "${NESTED}", want: "${TOKEN}"},
		{in: "${DOLLAR}{TOKEN}", want: "${TOKEN}"},
		// Unset: an error naming the variable, never "".
		{in: "Bearer ${NOPE}", err: "${NOPE} is not set in the environment; set it where bouncer is started", unset: "NOPE"},
		{in: "${TOKEN}${NOPE}${ALSO_NOPE}", err: "${NOPE} is not set", unset: "NOPE"},
		// Malformed: an error, not literal text, and it quotes no value.
		{in: "Bearer ${s3cr3t", err: `the "${" at byte 7 has no closing "}"`},
		{in: "${}", err: `the "${...}" at byte 0 is not a variable reference`},
		{in: "x${1TOKEN}", err: "at byte 1 is not a variable reference"},
		{in: "${TOKEN:-s3cr3t}", err: "there are no defaults"},
		{in: "${env:TOKEN}", err: "not a variable reference"},
		{in: "${TO KEN}", err: "not a variable reference"},
		{in: "${${TOKEN}}", err: "at byte 0 is not a variable reference"},
		{in: "${TOKEN}${", err: `the "${" at byte 8 has no closing`},
	} {
		got, err := Expand("", c.in, lookup)
		if c.err == "" {
			if err != nil || got != c.want {
				t.Errorf("Expand(%q) = %q, %v; want %q", c.in, got, err, c.want)
			}
			continue
		}
		var e *Error
		if !errors.As(err, &e) || !strings.Contains(err.Error(), c.err) || got != "" {
			t.Errorf("Expand(%q) = %q, %v; want an *Error with %q", c.in, got, err, c.err)
			continue
		}
		if e.Name != c.unset {
			t.Errorf("Expand(%q): Name %q, want %q", c.in, e.Name, c.unset)
		}
		if strings.Contains(err.Error(), "s3cr3t") {
			t.Errorf("Expand(%q): the error quotes the value: %v", c.in, err)
		}
		// Check agrees on syntax and reads no variable.
		if cerr := Check("", c.in); (cerr == nil) != (c.unset != "") {
			t.Errorf("Check(%q) = %v", c.in, cerr)
		}
	}
}

// The caller's name for the value leads the message, so one unset variable
// reads the same from every caller but for where it was written.
func TestErrorWhere(t *testing.T) {
	for _, c := range []struct{ where, in, want string }{
		{"trust.yaml:3: audit_ship.headers.Authorization", "Bearer ${NOPE}",
			"trust.yaml:3: audit_ship.headers.Authorization: ${NOPE} is not set in the environment; set it where bouncer is started"},
		{"--header #2 (X-Key)", "${NOPE}",
			"--header #2 (X-Key): ${NOPE} is not set in the environment; set it where bouncer is started"},
		{"", "${NOPE}", "${NOPE} is not set in the environment; set it where bouncer is started"},
		{"f:1: k", "${1}", `f:1: k: the "${...}" at byte 0 is not a variable reference`},
	} {
		_, err := Expand(c.where, c.in, lookup)
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%q %q: %v, want %q", c.where, c.in, err, c.want)
		}
		if cerr := Check(c.where, c.in); cerr != nil && !strings.HasPrefix(cerr.Error(), c.where) {
			t.Errorf("Check %q %q: %v", c.where, c.in, cerr)
		}
	}
}

// Only the variables referenced are read, each once a reference, in order,
// and none after the first that is unset.
func TestExpandReadsWhatIsReferenced(t *testing.T) {
	var asked []string
	_, err := Expand("", "$A ${TOKEN} ${NOPE} ${EMPTY}", func(k string) (string, bool) {
		asked = append(asked, k)
		return lookup(k)
	})
	if err == nil || strings.Join(asked, ",") != "TOKEN,NOPE" {
		t.Fatalf("asked %v, err %v", asked, err)
	}
}

// FuzzExpand holds the rule's invariants on any input: no panic; a value
// with no "${" is returned as written; every reference is replaced by its
// value and nothing else (a lookup that answers "${NAME}" for NAME gives
// back the input, which also shows no value is expanded twice); an error is
// an *Error whose message quotes nothing of the value but a variable name.
func FuzzExpand(f *testing.F) {
	for _, s := range []string{"", "Bearer ${TOKEN}", "$TOKEN", "${", "${}", "${A:-b}", "${A}${B}", "a${1}", "$${X}", "${\x00}", "\xff${A}\xfe"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		self := func(k string) (string, bool) { return "${" + k + "}", true }
		got, err := Expand("", s, self)
		if !strings.Contains(s, "${") && (err != nil || got != s) {
			t.Fatalf("Expand(%q) = %q, %v: no reference, so the value as written", s, got, err)
		}
		if err == nil && got != s {
			t.Fatalf("Expand(%q) with ${NAME} for NAME = %q", s, got)
		}
		if (Check("", s) == nil) != (err == nil) {
			t.Fatalf("Check and Expand disagree on %q", s)
		}
		// With every variable unset, a value with a reference is refused.
		_, uerr := Expand("", s, func(string) (string, bool) { return "", false })
		if (uerr == nil) != !strings.Contains(s, "${") {
			t.Fatalf("Expand(%q) with nothing set: %v", s, uerr)
		}
		for _, e := range []error{err, uerr} {
			if e == nil {
				continue
			}
			var ee *Error
			if !errors.As(e, &ee) || ee.Offset < 0 || ee.Offset >= len(s) || s[ee.Offset:ee.Offset+2] != "${" {
				t.Fatalf("Expand(%q): %#v", s, e)
			}
			if ee.Name != "" && !strings.HasPrefix(s[ee.Offset:], "${"+ee.Name+"}") {
				t.Fatalf("Expand(%q): names %q, not the reference at %d", s, ee.Name, ee.Offset)
			}
			msg := e.Error()
			for _, r := range msg {
				if r >= utf8.RuneSelf || r < ' ' {
					t.Fatalf("Expand(%q): the message quotes the value: %q", s, msg)
				}
			}
		}
	})
}
