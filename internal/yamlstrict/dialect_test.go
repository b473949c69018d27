package yamlstrict_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bouncer-mcp/bouncer/internal/bundle"
	"github.com/bouncer-mcp/bouncer/internal/filepos"
	"github.com/bouncer-mcp/bouncer/internal/policy"
)

// The same bytes are refused the same way as a policy file and as a trust
// file, through each one's own loader: one YAML dialect, not two. Before
// yamlstrict, a policy file took aliases (and gave an alias a full copy of
// the entry) where a trust file refused them, and the two worded every
// other refusal differently.
func TestPolicyAndTrustShareTheDialect(t *testing.T) {
	cases := []struct {
		name, body string
		line       int
		key, msg   string
	}{
		{"alias of an entry", "a: &gate\n  max_calls: 1\nb: *gate\n", 1, "a",
			"YAML anchors and aliases are not allowed; write the value out where it is used"},
		{"alias alone", "a:\n  max_calls: 1\nb:\n  max_calls: 2\nc: [*x]\n", 0, "",
			"invalid YAML: unknown anchor 'x' referenced"},
		{"anchor of a list item", "a: [&x b]\n", 1, "a",
			"YAML anchors and aliases are not allowed; write the value out where it is used"},
		{"merge key", "a:\n  <<: {max_calls: 1}\n", 2, "a",
			"YAML merge keys (<<) are not supported; repeat the keys"},
		{"duplicate key", "a: 1\nb: 2\na: 3\n", 3, "a",
			"set twice (first at line 1); keep one (merge the two if both hold what you need)"},
		{"duplicate nested key", "a:\n  b:\n    c: 1\n    c: 2\n", 4, "a.b.c",
			"set twice (first at line 3); keep one (merge the two if both hold what you need)"},
		{"non-string key", "a:\n  1: x\n", 2, "a",
			"a key must be a string, got the integer 1 (quote it)"},
		{"null key", "~: x\n", 1, "",
			"a key must be a string, got nothing (null) (quote it)"},
		{"standard tag", "a: !!str true\n", 1, "a",
			`the YAML tag "!!str" is not allowed; write the value without it (quote it if you mean text)`},
		{"custom tag on a mapping", "a: !custom {b: 1}\n", 1, "a",
			`the YAML tag "!custom" is not allowed; write the value without it (quote it if you mean text)`},
		{"second document", "a: 1\n---\nb: 2\n", 2, "",
			"the file holds one YAML document; found another (remove the extra ---)"},
		{"empty second document", "a: 1\n---\n", 2, "",
			"the file holds one YAML document; found another (remove the extra ---)"},
		{"syntax", "a: [1\n", 1, "",
			"invalid YAML: did not find expected ',' or ']' (a [list] not closed with ]?)"},
	}
	dir := t.TempDir()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			file := filepath.Join(dir, "f.yaml")
			if err := os.WriteFile(file, []byte(c.body), 0o600); err != nil {
				t.Fatal(err)
			}
			_, perr := policy.Load(file)
			_, terr := bundle.LoadTrust(file, "")
			for _, got := range []struct {
				loader string
				err    error
			}{{"policy.Load", perr}, {"bundle.LoadTrust", terr}} {
				var fe *filepos.Error
				if !errors.As(got.err, &fe) {
					t.Fatalf("%s: %v, want a *filepos.Error", got.loader, got.err)
				}
				if fe.File != file || fe.Line != c.line || fe.Key != c.key || fe.Msg != c.msg {
					t.Errorf("%s: %s\nwant line %d key %q: %s", got.loader, strings.TrimPrefix(fe.Error(), dir), c.line, c.key, c.msg)
				}
			}
		})
	}
}
