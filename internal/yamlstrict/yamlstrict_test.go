package yamlstrict

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/bouncer-mcp/bouncer/internal/filepos"
)

// What Decode hands back for documents the dialect accepts: nil for no
// document, a null scalar for an explicit empty one, else the top node.
func TestDecodeAccepts(t *testing.T) {
	cases := []struct {
		name, doc string
		kind      yaml.Kind // 0: nil
		tag       string
	}{
		{"empty file", "", 0, ""},
		{"only comments", "# nothing here\n", 0, ""},
		{"explicit empty document", "---\n", yaml.ScalarNode, "!!null"},
		{"null", "~\n", yaml.ScalarNode, "!!null"},
		{"mapping", "a: 1\nb: [x, y]\n", yaml.MappingNode, "!!map"},
		{"one document marked", "---\na: 1\n...\n", yaml.MappingNode, "!!map"},
		{"same key in two mappings", "a: {x: 1}\nb: {x: 1}\n", yaml.MappingNode, "!!map"},
		{"list", "- a\n- b\n", yaml.SequenceNode, "!!seq"},
		{"quoted merge-looking key", "\"<<\": 1\n", yaml.MappingNode, "!!map"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			top, err := Decode("f.yaml", []byte(c.doc))
			if err != nil {
				t.Fatal(err)
			}
			if c.kind == 0 {
				if top != nil {
					t.Fatalf("got %v, want nil", top.Kind)
				}
				return
			}
			if top == nil || top.Kind != c.kind || top.ShortTag() != c.tag {
				t.Fatalf("got %+v, want kind %v tag %s", top, c.kind, c.tag)
			}
		})
	}
}

// A refusal is a *filepos.Error whose line stays inside the file, and one
// without a line only where the YAML parser gave none.
func TestDecodeRefusalsArePlaced(t *testing.T) {
	cases := []struct{ doc, want string }{
		{"a: *x\n", "f.yaml: invalid YAML: unknown anchor 'x' referenced"},
		{"a:\n\tb: 1\n", "f.yaml:2: invalid YAML: found character that cannot start any token (a tab? YAML indents with spaces)"},
		// yaml.v3 gives a parser error's line 0-based, and none for the
		// first line: the line here is the one at fault.
		{"a:\n  b: [x\n", "f.yaml:2: invalid YAML: did not find expected ',' or ']' (a [list] not closed with ]?)"},
		{"x: 1\ny: 2\na:\n  b: [x\n  c: 2\n", "f.yaml:4: invalid YAML: did not find expected ',' or ']' (a [list] not closed with ]?)"},
		{"a: [x\n", "f.yaml:1: invalid YAML: did not find expected ',' or ']' (a [list] not closed with ]?)"},
		{"a:\n  b: 1\n c: 2\n", "f.yaml:3: invalid YAML: did not find expected key (a line indented differently from the keys beside it?)"},
		{"a: b: c\n", "f.yaml:1: invalid YAML: mapping values are not allowed in this context (a second ': ' on one line (quote a value that holds ': '), or a key indented under a value?)"},
		{"a: 1\n  b: 2\n", "f.yaml:2: invalid YAML: mapping values are not allowed in this context (a second ': ' on one line (quote a value that holds ': '), or a key indented under a value?)"},
		{"a:\n  b: \"x\n", "f.yaml:2: invalid YAML: found unexpected end of stream (a quote not closed?)"},
		{"a: 1\n---", "f.yaml:2: the file holds one YAML document; found another (remove the extra ---)"},
		{"- &a x\n- *a\n", "f.yaml:1: YAML anchors and aliases are not allowed; write the value out where it is used"},
		{"&k a: 1\n", "f.yaml:1: YAML anchors and aliases are not allowed; write the value out where it is used"},
		{"a:\n  ? [x]\n  : 1\n", "f.yaml:2: a: a key must be a string, got a list (quote it)"},
		{"a: {b: !!binary aGk=}\n", `f.yaml:1: a.b: the YAML tag "!!binary" is not allowed; write the value without it (quote it if you mean text)`},
	}
	for _, c := range cases {
		_, err := Decode("f.yaml", []byte(c.doc))
		var fe *filepos.Error
		if !errors.As(err, &fe) || err.Error() != c.want {
			t.Errorf("Decode(%q) = %v, want %s", c.doc, err, c.want)
		}
	}
}

func TestDescribe(t *testing.T) {
	cases := map[string]string{
		"a: 1":            "a mapping",
		"[1]":             "a list",
		"~":               "nothing (null)",
		"true":            "the boolean true",
		"12":              "the integer 12",
		"1.5":             "the number 1.5",
		"'no'":            `the string "no"`,
		"2001-12-14":      `a !!timestamp value "2001-12-14"`,
		"\"a\\u202eb\"":   `the string "a\u202eb"`,
		"\"\\x1b[2J\"":    `the string "\x1b[2J"`,
		"\"\\U000e0041\"": `the string "\U000e0041"`,
	}
	for doc, want := range cases {
		top, err := Decode("f.yaml", []byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		if got := Describe(top); got != want {
			t.Errorf("Describe(%s) = %s, want %s", doc, got, want)
		}
	}
}

// The writers' output for values a policy holds: plain where YAML reads
// the text back as the same string, else quoted with visible escapes.
func TestScalarAndQuote(t *testing.T) {
	cases := []struct{ in, scalar, quote string }{
		{"/home/me/out", "/home/me/out", `"/home/me/out"`},
		{"send_email", "send_email", `"send_email"`},
		{"true", `"true"`, `"true"`},
		{"null", `"null"`, `"null"`},
		{"1.5", `"1.5"`, `"1.5"`},
		{"0x1F", `"0x1F"`, `"0x1F"`},
		{"2001-12-14", `"2001-12-14"`, `"2001-12-14"`},
		{"...", `"..."`, `"..."`},
		{".inf", `".inf"`, `".inf"`},
		{"", `""`, `""`},
		{"a b", `"a b"`, `"a b"`},
		{"-x", `"-x"`, `"-x"`},
		{"a: b", `"a: b"`, `"a: b"`},
		{"evil\u202e.com", `"evil\u202e.com"`, `"evil\u202e.com"`},
		{"line\nbreak", `"line\nbreak"`, `"line\nbreak"`},
		{"<tag>", `"<tag>"`, `"<tag>"`},
	}
	for _, c := range cases {
		if got, err := Scalar(c.in); err != nil || got != c.scalar {
			t.Errorf("Scalar(%q) = %s, %v; want %s", c.in, got, err, c.scalar)
		}
		if got, err := Quote(c.in); err != nil || got != c.quote {
			t.Errorf("Quote(%q) = %s, %v; want %s", c.in, got, err, c.quote)
		}
	}
	if got, err := Flow([]string{"to", "a b", "true"}, Scalar); err != nil || got != `[to, "a b", "true"]` {
		t.Errorf("Flow = %s, %v", got, err)
	}
	for _, write := range []func(string) (string, error){Quote, Scalar} {
		if got, err := write("caf\xe9"); !errors.Is(err, ErrNotUTF8) {
			t.Errorf("invalid UTF-8 written as %s, %v; want ErrNotUTF8", got, err)
		}
	}
	// YAML reads a key of at most 1024 characters, quotes included.
	for n, ok := range map[int]bool{1022: true, 1023: false} {
		k := strings.Repeat("k", n)
		if got, err := Key(k, Quote); (err == nil) != ok || (!ok && !errors.Is(err, ErrLongKey)) || (ok && got != `"`+k+`"`) {
			t.Errorf("Key of %d characters, quoted: %.20s…, %v", n, got, err)
		}
	}
	if _, err := Key("caf\xe9", Scalar); !errors.Is(err, ErrNotUTF8) {
		t.Errorf("Key with invalid UTF-8: %v, want ErrNotUTF8", err)
	}
	if _, err := Flow([]string{"ok", "\xff"}, Quote); !errors.Is(err, ErrNotUTF8) {
		t.Errorf("Flow with invalid UTF-8: %v, want ErrNotUTF8", err)
	}
}

// What Quote and Scalar write, Decode reads back as the same string, in
// each place a writer puts a scalar: a mapping value, a block list item,
// a flow list item and a mapping key. A string they can't write is one
// that is not UTF-8, and only that.
func FuzzWriteReadBack(f *testing.F) {
	for _, s := range []string{
		"", "x", "true", "False", "null", "~", "1", "-1", "1.5", ".inf", ".NaN", "0x1F", "0o17", "1_000",
		"2001-12-14", "2001-12-14T21:59:43.10-05:00", "y", "NO", "on", "<<", "=", "...", "---", "- x",
		"a: b", "a:b", "#x", "a #b", "@x", "`x`", "%x", "!x", "&x", "*x", "|", ">", "'", "\"", "\\",
		"[a]", "{a: b}", "a, b", "?", "? x", " lead", "trail ", "tab\there", "\t", "\r\n", "\n",
		"\x00", "\x1b[2J", "\x7f", "\u0085", "\u00a0", "\u2028", "\u2029", "\u202e", "\ufeff", "\ufffd",
		"\ue000", "\U0001f600", "\U000e0041", "\U0010ffff", "é", "e\u0301", "caf\xe9", "\xff", "a\xc3",
		strings.Repeat("k", 1022), strings.Repeat("k", 1024), strings.Repeat("k", 1025), strings.Repeat("é", 1100),
		"/home/me/out", "./proj", "../x", "C:\\x", "https://x.example/a?b=c#d", "mallory@evil.example",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, w := range []struct {
			name  string
			write func(string) (string, error)
		}{{"Quote", Quote}, {"Scalar", Scalar}} {
			q, err := w.write(s)
			if !utf8.ValidString(s) {
				if !errors.Is(err, ErrNotUTF8) {
					t.Fatalf("%s(%q) = %s, %v; want ErrNotUTF8", w.name, s, q, err)
				}
				continue
			}
			if err != nil {
				t.Fatalf("%s(%q): %v", w.name, s, err)
			}
			if strings.ContainsAny(q, "\n\r") {
				t.Fatalf("%s(%q) = %q spans lines", w.name, s, q)
			}
			docs := map[string]func(*yaml.Node) *yaml.Node{
				"k: " + q + "\n":            func(n *yaml.Node) *yaml.Node { return n.Content[1] },
				"k:\n  - " + q + "\n":       func(n *yaml.Node) *yaml.Node { return n.Content[1].Content[0] },
				"k: [" + q + ", " + q + "]": func(n *yaml.Node) *yaml.Node { return n.Content[1].Content[1] },
			}
			key, err := Key(s, w.write)
			switch {
			case err == nil:
				docs[key+": v\n"] = func(n *yaml.Node) *yaml.Node { return n.Content[0] }
			case !errors.Is(err, ErrLongKey) || utf8.RuneCountInString(q) <= 1024:
				t.Fatalf("Key(%q, %s): %v", s, w.name, err)
			}
			for doc, pick := range docs {
				top, err := Decode("f.yaml", []byte(doc))
				if err != nil {
					t.Fatalf("%s(%q) = %s, and %q does not read back: %v", w.name, s, q, doc, err)
				}
				if top == nil || top.Kind != yaml.MappingNode || len(top.Content) != 2 {
					t.Fatalf("%s(%q): %q reads as %+v", w.name, s, doc, top)
				}
				got := pick(top)
				if got.Kind != yaml.ScalarNode || got.ShortTag() != "!!str" || got.Value != s {
					t.Fatalf("%s(%q) = %s; %q reads back as %s", w.name, s, q, doc, Describe(got))
				}
			}
		}
	})
}
