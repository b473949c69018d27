package yamlstrict

import (
	"errors"
	"testing"

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
		{"a:\n\tb: 1\n", "f.yaml:2: invalid YAML: found character that cannot start any token"},
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
