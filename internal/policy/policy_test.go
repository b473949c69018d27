package policy

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func loadYAML(t *testing.T, doc string) (*Policy, error) {
	t.Helper()
	return LoadSources(Source{Name: "p.yaml", Dir: "/base", Data: []byte(doc)})
}

func intp(n int) *int { return &n }

// Every refusal names the file, the line and the key, in the exact form the
// CLI prints.
func TestParseErrors(t *testing.T) {
	const keys = "exfiltrating, sink_params, trusted_destinations, implicit_destination, sink_kinds, write_params, allowed_path_prefixes, relative_paths, arg_patterns, max_calls, counts_as, trusted_output, directory, anchor_records, approval"
	tests := []struct {
		name, doc, want string
	}{
		{"approval true", "unlock_door:\n  approval: true\n",
			`p.yaml:2: unlock_door.approval: must be always (every call asks a human, bound to its exact arguments), got the boolean true`},
		{"approval other word", "unlock_door:\n  max_calls: 3\n  approval: sometimes\n",
			`p.yaml:3: unlock_door.approval: must be always (every call asks a human, bound to its exact arguments), got the string "sometimes"`},
		{"approval list", "unlock_door:\n  approval: [always]\n",
			`p.yaml:2: unlock_door.approval: must be always (every call asks a human, bound to its exact arguments), got a list`},
		{"top-level list", "- a\n- b\n",
			"p.yaml:1: the top level must be a mapping of tool name to entry, got a list"},
		{"top-level scalar", "just text\n",
			`p.yaml:1: the top level must be a mapping of tool name to entry, got the string "just text"`},
		{"quoted false", "send_email:\n  exfiltrating: \"false\"\n",
			`p.yaml:2: send_email.exfiltrating: must be true or false, got the string "false"`},
		{"yes is a string", "send_email:\n  exfiltrating: yes\n",
			`p.yaml:2: send_email.exfiltrating: must be true or false, got the string "yes"`},
		{"exfiltrating number", "send_email:\n  exfiltrating: 1\n",
			`p.yaml:2: send_email.exfiltrating: must be true or false, got the integer 1`},
		{"scalar sink_params", "send_email:\n  exfiltrating: true\n  sink_params: to\n",
			`p.yaml:3: send_email.sink_params: must be a list, got the string "to" (write [to])`},
		{"null sink_params", "send_email:\n  exfiltrating: true\n  sink_params:\n",
			`p.yaml:3: send_email.sink_params: must be a list, got nothing (null)`},
		{"mapping write_params", "w:\n  write_params: {path: 1}\n",
			`p.yaml:2: w.write_params: must be a list, got a mapping`},
		{"number in trusted", "send_email:\n  exfiltrating: true\n  trusted_destinations: [ok@x.example, 1]\n",
			`p.yaml:3: send_email.trusted_destinations: item 2 must be a destination (a string), got the integer 1; quote it if you mean the text`},
		{"bool in sink_params", "s:\n  exfiltrating: true\n  sink_params:\n    - to\n    - true\n",
			`p.yaml:5: s.sink_params: item 2 must be an argument name (a string), got the boolean true; quote it if you mean the text`},
		{"list in list", "s:\n  exfiltrating: true\n  sink_params: [[to]]\n",
			`p.yaml:3: s.sink_params: item 1 must be an argument name (a string), got a list; quote it if you mean the text`},
		{"empty item", "s:\n  exfiltrating: true\n  sink_params: [to, \" \"]\n",
			`p.yaml:3: s.sink_params: item 2 is empty`},
		{"spaced sink", "s:\n  exfiltrating: true\n  sink_params: [\"to \"]\n",
			`p.yaml:3: s.sink_params: item 1: "to " has leading or trailing spaces`},
		{"spaced prefix", "w:\n  write_params: [path]\n  allowed_path_prefixes: [\" /srv\"]\n",
			`p.yaml:3: w.allowed_path_prefixes: item 1: " /srv" has leading or trailing spaces`},
		{"spaced tool name", "\"send_email \":\n  max_calls: 1\n",
			`p.yaml:1: tool name "send_email " has leading or trailing spaces, so it would never match`},
		{"spaced pattern arg", "s:\n  arg_patterns:\n    \" mode\": x\n",
			`p.yaml:3: s.arg_patterns: argument name " mode" has leading or trailing spaces, so it would never match`},
		{"unknown key suggests", "send_email:\n  exfiltrating: true\n  sink_param: [to]\n",
			"p.yaml:3: send_email.sink_param: unknown key (did you mean sink_params?); the keys are " + keys},
		{"unknown key case", "send_email:\n  Exfiltrating: true\n",
			"p.yaml:2: send_email.Exfiltrating: unknown key (did you mean exfiltrating?); the keys are " + keys},
		{"unknown key far", "send_email:\n  colour: red\n",
			"p.yaml:2: send_email.colour: unknown key; the keys are " + keys},
		{"max_call typo", "d:\n  max_call: 2\n",
			"p.yaml:2: d.max_call: unknown key (did you mean max_calls?); the keys are " + keys},
		{"sink kinds without exfiltrating", "post:\n  sink_kinds: {channel: channel}\n",
			"p.yaml:2: post.sink_kinds: set without exfiltrating: true, so nothing would check it; add exfiltrating: true"},
		{"sink kind of an argument that is no sink", "post:\n  exfiltrating: true\n  sink_params: [channel]\n  sink_kinds: {body: channel}\n",
			"p.yaml:4: post.sink_kinds.body: \"body\" is not one of sink_params (channel), so no destination is ever read from it; add it there"},
		{"directory kind not a word", "get_channels:\n  directory: Channels!\n",
			"p.yaml:2: get_channels.directory: must be a kind of entry, a lowercase word such as channel, got the string \"Channels!\""},
		{"implicit without exfiltrating", "reply:\n  implicit_destination: true\n",
			"p.yaml:2: reply.implicit_destination: set without exfiltrating: true, so nothing would check it; add exfiltrating: true"},
		{"implicit as a string", "reply:\n  exfiltrating: true\n  implicit_destination: \"yes\"\n",
			"p.yaml:3: reply.implicit_destination: must be true or false, got the string \"yes\""},
		{"trusted destination with no canonical form", "send_email:\n  exfiltrating: true\n  trusted_destinations:\n    - ok@example.com\n    - \"bob@example.com\\r\\nBcc: eve@evil.example\"\n",
			"p.yaml:5: send_email.trusted_destinations: item 2: \"bob@example.com\\r\\nBcc: eve@evil.example\" is not a destination Bouncer can compare exactly: it holds the control character U+000D"},
		{"sinks without exfiltrating", "send_email:\n  sink_params: [to]\n",
			"p.yaml:2: send_email.sink_params: set without exfiltrating: true, so nothing would check it; add exfiltrating: true"},
		{"sinks with exfiltrating false", "send_email:\n  exfiltrating: false\n  sink_params: [to]\n",
			"p.yaml:3: send_email.sink_params: set without exfiltrating: true, so nothing would check it; add exfiltrating: true"},
		{"trusted without exfiltrating", "send_email:\n  max_calls: 3\n  trusted_destinations: [a@b.example]\n",
			"p.yaml:3: send_email.trusted_destinations: set without exfiltrating: true, so nothing would check it; add exfiltrating: true"},
		{"null entry", "read_ticket:\n  max_calls: 1\nsend_email:\n",
			"p.yaml:3: send_email: entry is empty; give it at least one key (" + keys + "), or remove it"},
		{"empty mapping entry", "send_email: {}\n",
			"p.yaml:1: send_email: entry is empty; give it at least one key (" + keys + "), or remove it"},
		{"scalar entry", "send_email: true\n",
			"p.yaml:1: send_email: entry must be a mapping of keys (" + keys + "), got the boolean true"},
		{"list entry", "send_email:\n  - exfiltrating\n",
			"p.yaml:2: send_email: entry must be a mapping of keys (" + keys + "), got a list"},
		{"duplicate tool", "send_email:\n  exfiltrating: true\nother:\n  max_calls: 1\nsend_email:\n  max_calls: 1\n",
			"p.yaml:5: send_email: set twice (first at line 1); keep one (merge the two if both hold what you need)"},
		{"duplicate key", "d:\n  max_calls: 1\n  max_calls: 2\n",
			"p.yaml:3: d.max_calls: set twice (first at line 2); keep one (merge the two if both hold what you need)"},
		{"negative max_calls", "d:\n  max_calls: -1\n",
			"p.yaml:2: d.max_calls: must not be negative (0 forbids the tool), got -1"},
		{"float max_calls", "d:\n  max_calls: 2.0\n",
			"p.yaml:2: d.max_calls: must be a whole number of calls (0 forbids the tool), got the number 2.0"},
		{"string max_calls", "d:\n  max_calls: \"2\"\n",
			`p.yaml:2: d.max_calls: must be a whole number of calls (0 forbids the tool), got the string "2"`},
		{"bool max_calls", "d:\n  max_calls: true\n",
			"p.yaml:2: d.max_calls: must be a whole number of calls (0 forbids the tool), got the boolean true"},
		{"huge max_calls", "d:\n  max_calls: 3000000000\n",
			`p.yaml:2: d.max_calls: must be a whole number of calls up to 2147483647, got "3000000000"`},
		{"huger max_calls", "d:\n  max_calls: 99999999999999999999\n",
			`p.yaml:2: d.max_calls: must be a whole number of calls (0 forbids the tool), got the number 99999999999999999999`},
		{"bad pattern", "set_mode:\n  arg_patterns:\n    mode: \"[\"\n",
			"p.yaml:3: set_mode.arg_patterns.mode: pattern \"[\" does not compile: missing closing ]: `[`"},
		{"lookahead", "set_mode:\n  arg_patterns:\n    mode: '(?=x)x'\n",
			"p.yaml:3: set_mode.arg_patterns.mode: pattern \"(?=x)x\" does not compile: invalid or unsupported Perl syntax: `(?=` (patterns are RE2: no lookarounds or backreferences)"},
		{"backreference", "set_mode:\n  arg_patterns:\n    mode: '(a)\\1'\n",
			"p.yaml:3: set_mode.arg_patterns.mode: pattern \"(a)\\\\1\" does not compile: invalid escape sequence: `\\1` (patterns are RE2: no lookarounds or backreferences)"},
		{"pattern escaping the anchors", "set_mode:\n  arg_patterns:\n    mode: 'a)|(.*'\n",
			"p.yaml:3: set_mode.arg_patterns.mode: pattern \"a)|(.*\" does not compile: unexpected ): `a)|(.*`"},
		{"number pattern", "set_mode:\n  arg_patterns:\n    count: 5\n",
			"p.yaml:3: set_mode.arg_patterns.count: pattern must be a string, got the integer 5; quote it"},
		{"list arg_patterns", "set_mode:\n  arg_patterns: [mode]\n",
			"p.yaml:2: set_mode.arg_patterns: must be a mapping of argument name to pattern, got a list"},
		{"duplicate pattern arg", "set_mode:\n  arg_patterns:\n    mode: a\n    mode: b\n",
			"p.yaml:4: set_mode.arg_patterns.mode: set twice (first at line 3); keep one (merge the two if both hold what you need)"},
		{"tilde prefix", "w:\n  write_params: [path]\n  allowed_path_prefixes: [~/out]\n",
			`p.yaml:3: w.allowed_path_prefixes: item 1: "~/out": ~ is not expanded; write the absolute path`},
		{"uri prefix", "w:\n  write_params: [path]\n  allowed_path_prefixes: [\"file:///srv\"]\n",
			`p.yaml:3: w.allowed_path_prefixes: item 1: "file:///srv" is a URI, not a path; write the absolute path`},
		{"prefixes without write_params", "w:\n  allowed_path_prefixes: [/srv/out]\n",
			"p.yaml:2: w.allowed_path_prefixes: set without write_params, so no argument would be confined; name the path arguments in write_params"},
		{"relative_paths without prefixes", "w:\n  write_params: [path]\n  relative_paths: workdir\n",
			"p.yaml:3: w.relative_paths: set without allowed_path_prefixes, so no path is checked; add allowed_path_prefixes"},
		{"relative_paths typo", "w:\n  write_params: [path]\n  allowed_path_prefixes: [/o]\n  relative_paths: workdri\n",
			`p.yaml:4: w.relative_paths: must be deny, workdir, or a directory (an absolute path, or ./DIR relative to this file), got the string "workdri" (did you mean workdir?)`},
		{"relative_paths bare directory name", "w:\n  write_params: [path]\n  allowed_path_prefixes: [/o]\n  relative_paths: proj\n",
			`p.yaml:4: w.relative_paths: must be deny, workdir, or a directory (an absolute path, or ./DIR relative to this file), got the string "proj"`},
		{"relative_paths list", "w:\n  write_params: [path]\n  allowed_path_prefixes: [/o]\n  relative_paths: [/o]\n",
			"p.yaml:4: w.relative_paths: must be deny, workdir, or a directory (an absolute path, or ./DIR relative to this file), got a list"},
		{"relative_paths boolean", "w:\n  write_params: [path]\n  allowed_path_prefixes: [/o]\n  relative_paths: false\n",
			"p.yaml:4: w.relative_paths: must be deny, workdir, or a directory (an absolute path, or ./DIR relative to this file), got the boolean false"},
		{"relative_paths tilde", "w:\n  write_params: [path]\n  allowed_path_prefixes: [/o]\n  relative_paths: ~/proj\n",
			`p.yaml:4: w.relative_paths: must be deny, workdir, or a directory (an absolute path, or ./DIR relative to this file), got the string "~/proj"`},
		{"non-string tool name", "123:\n  max_calls: 1\n",
			"p.yaml:1: a key must be a string, got the integer 123 (quote it)"},
		{"null tool name", "~:\n  max_calls: 1\n",
			"p.yaml:1: a key must be a string, got nothing (null) (quote it)"},
		{"non-string argument name", "s:\n  arg_patterns:\n    1: x\n",
			"p.yaml:3: s.arg_patterns: a key must be a string, got the integer 1 (quote it)"},
		{"merge key", "d:\n  <<: {max_calls: 1}\n",
			"p.yaml:2: d: YAML merge keys (<<) are not supported; repeat the keys"},
		{"anchor", "base: &b\n  max_calls: 1\n",
			"p.yaml:1: base: YAML anchors and aliases are not allowed; write the value out where it is used"},
		{"explicit tag", "s:\n  exfiltrating: true\n  sink_params: [!!str 1]\n",
			`p.yaml:3: s.sink_params: the YAML tag "!!str" is not allowed; write the value without it (quote it if you mean text)`},
		{"syntax error", "send_email:\n  sink_params: [to\n",
			"p.yaml:2: invalid YAML: did not find expected ',' or ']' (a [list] not closed with ]?)"},
		{"syntax error on the first line", "a: b: c\n",
			"p.yaml:1: invalid YAML: mapping values are not allowed in this context (a second ': ' on one line (quote a value that holds ': '), or a key indented under a value?)"},
		{"unknown anchor", "a:\n  max_calls: 1\nc: *y\n",
			"p.yaml: invalid YAML: unknown anchor 'y' referenced"},
		{"tab indentation", "send_email:\n\texfiltrating: true\n",
			"p.yaml:2: invalid YAML: found character that cannot start any token (a tab? YAML indents with spaces)"},
		{"second document", "a:\n  max_calls: 1\n---\nb:\n  max_calls: 2\n",
			"p.yaml:3: the file holds one YAML document; found another (remove the extra ---)"},
		{"sandbox unknown key", "sandbox:\n  read_writ: [/tmp]\n",
			"p.yaml:2: sandbox.read_writ: unknown key (did you mean read_write?); the keys are read_write, read_only, connect_tcp"},
		{"sandbox null", "sandbox:\n",
			"p.yaml:1: sandbox: must be a mapping with read_write, read_only, connect_tcp, got nothing (null)"},
		{"sandbox scalar paths", "sandbox:\n  read_only: /usr\n",
			`p.yaml:2: sandbox.read_only: must be a list, got the string "/usr" (write [/usr])`},
		{"sandbox port zero", "sandbox:\n  connect_tcp: [443, 0]\n",
			"p.yaml:2: sandbox.connect_tcp: item 2 must be a TCP port from 1 to 65535, got the integer 0"},
		{"sandbox port string", "sandbox:\n  connect_tcp: [\"443\"]\n",
			`p.yaml:2: sandbox.connect_tcp: item 1 must be a TCP port from 1 to 65535, got the string "443"`},
		{"sandbox port scalar", "sandbox:\n  connect_tcp: 443\n",
			"p.yaml:2: sandbox.connect_tcp: must be a list of TCP ports, got the integer 443"},
		{"sandbox tilde", "sandbox:\n  read_write: [~/x]\n",
			`p.yaml:2: sandbox.read_write: item 1: "~/x": ~ is not expanded; write the absolute path`},
		{"sandbox twice", "sandbox:\n  read_only: [/a]\nsandbox:\n  read_only: [/b]\n",
			"p.yaml:3: sandbox: set twice (first at line 1); keep one (merge the two if both hold what you need)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pol, err := loadYAML(t, tt.doc)
			if err == nil {
				t.Fatalf("loaded %v; want error %q", pol.Names(), tt.want)
			}
			var pe *Error
			if !errors.As(err, &pe) {
				t.Fatalf("error %T %v is not a *Error", err, err)
			}
			if err.Error() != tt.want {
				t.Errorf("error:\n got %s\nwant %s", err, tt.want)
			}
			// Line 0 only where yaml.v3 said no line: naming one would be a guess.
			unplaced := pe.Line == 0 && strings.HasPrefix(pe.Msg, "invalid YAML: ")
			if pe.File != "p.yaml" || (pe.Line < 1 && !unplaced) || pe.Line > strings.Count(tt.doc, "\n")+1 {
				t.Errorf("File %q Line %d outside the document", pe.File, pe.Line)
			}
			if pol != nil {
				t.Errorf("a policy came back with the error")
			}
		})
	}
}

func TestRelativePrefixNeedsDirectory(t *testing.T) {
	_, err := LoadSources(Source{Name: "inline", Data: []byte("w:\n  write_params: [path]\n  allowed_path_prefixes: [out]\n")})
	want := `inline:3: w.allowed_path_prefixes: item 1: "out" is relative and this policy has no directory to resolve it against; write an absolute path`
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v\nwant %s", err, want)
	}
}

func TestLoadMissingFile(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope.yaml")
	_, err := Load(missing)
	var pe *Error
	if !errors.As(err, &pe) || pe.File != missing || pe.Line != 0 || !strings.Contains(err.Error(), "no such file") {
		t.Fatalf("err = %#v", err)
	}
	if !strings.HasPrefix(err.Error(), missing+": ") {
		t.Errorf("error %q does not start with the file", err)
	}
}

func TestLoadTooLarge(t *testing.T) {
	f := filepath.Join(t.TempDir(), "big.yaml")
	if err := os.WriteFile(f, make([]byte, maxPolicyBytes+1), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(f); err == nil || !strings.Contains(err.Error(), "not a policy file") {
		t.Fatalf("err = %v", err)
	}
}

// An error in the second file stops the load even though the first is fine:
// a policy is all of its files or nothing.
func TestErrorInLaterFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(good, []byte("d:\n  max_calls: 1\n"), 0o600)
	os.WriteFile(bad, []byte("# comment\nd:\n  max_calls: many\n"), 0o600)
	pol, err := Load(good, bad)
	want := bad + `:3: d.max_calls: must be a whole number of calls (0 forbids the tool), got the string "many"`
	if pol != nil || err == nil || err.Error() != want {
		t.Fatalf("pol %v err %v\nwant %s", pol, err, want)
	}
}

func TestEmptyDocuments(t *testing.T) {
	for _, doc := range []string{"", "\n", "# only a comment\n", "~\n", "null\n", "---\n", "{}\n"} {
		pol, err := loadYAML(t, doc)
		if err != nil {
			t.Errorf("%q: %v", doc, err)
			continue
		}
		if pol.Sandbox != nil || len(pol.Files) != 1 {
			t.Errorf("%q: sandbox %v files %v", doc, pol.Sandbox, pol.Files)
		}
		// The gmail server's pack still applies to it under an empty
		// user file.
		gmail, err := pol.ForServer("gmail")
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := gmail.Lookup("send_email"); !ok {
			t.Errorf("%q: the gmail pack's send_email is missing", doc)
		}
	}
}

func TestParseEntry(t *testing.T) {
	pol, err := loadYAML(t, `# a comment first
notify_customer:
  exfiltrating: true
  sink_params: [to, cc]
  trusted_destinations: [" Boss@Corp.example "]
  write_params: [path, out_file]
  allowed_path_prefixes: [/srv/out/../out/, out, ./tmp/x/..]
  arg_patterns:
    mode: read|write
    count: "[0-9]+"
  max_calls: 0
`)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := pol.Lookup("notify_customer")
	if !ok {
		t.Fatal("no entry")
	}
	want := &Tool{
		Name:                "notify_customer",
		Exfiltrating:        true,
		SinkParams:          []string{"to", "cc"},
		TrustedDestinations: []string{" Boss@Corp.example "},
		trusted:             map[string]bool{"address\x00boss@corp.example": true},
		WriteParams:         []string{"path", "out_file"},
		AllowedPathPrefixes: []string{"/srv/out", "/base/out", "/base/tmp"},
		MaxCalls:            intp(0),
		Source:              "p.yaml:2",
	}
	pats := got.ArgPatterns
	got2 := *got
	got2.ArgPatterns = nil
	if !reflect.DeepEqual(&got2, want) {
		t.Errorf("entry\n got %+v\nwant %+v", got2, *want)
	}
	if len(pats) != 2 || pats[0].Arg != "mode" || pats[0].Pattern != "read|write" || pats[1].Arg != "count" {
		t.Fatalf("patterns = %+v", pats)
	}
	if !got.Trusts("Boss@CORP.example") || !got.Trusts("boss@corp.example") || got.Trusts("Boss@corp.ex\u0430mple") || got.Trusts("Boß@corp.example") {
		t.Error("Trusts does not compare canonical forms exactly")
	}
	// Patterns match whole values only.
	for v, ok := range map[string]bool{"read": true, "write": true, "readx": false, "xwrite": false, "read\n": false, "": false} {
		if pats[0].Re.MatchString(v) != ok {
			t.Errorf("mode %q: match %v, want %v", v, !ok, ok)
		}
	}
	if !pats[1].Re.MatchString("42") || pats[1].Re.MatchString("4a2") {
		t.Error("count pattern is not anchored")
	}
	if got.Fallback {
		t.Error("a file entry is marked as fallback")
	}
}

// relative_paths: deny by default, workdir, or a directory resolved like a
// prefix.
func TestRelativePaths(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		value string
		want  RelativePaths
	}{
		{"", RelativePaths{}},
		{"deny", RelativePaths{Mode: RelativeDeny}},
		{"workdir", RelativePaths{Mode: RelativeWorkDir}},
		{"/srv/proj/", RelativePaths{Mode: RelativeDir, Dir: "/srv/proj"}},
		{"./proj", RelativePaths{Mode: RelativeDir, Dir: filepath.Join(dir, "proj")}},
		{"..", RelativePaths{Mode: RelativeDir, Dir: filepath.Dir(dir)}},
	}
	for _, c := range cases {
		doc := "w:\n  write_params: [path]\n  allowed_path_prefixes: [/srv]\n"
		if c.value != "" {
			doc += "  relative_paths: " + strconv.Quote(c.value) + "\n"
		}
		pol, err := LoadSources(Source{Name: "p.yaml", Dir: dir, Data: []byte(doc)})
		if err != nil {
			t.Fatalf("%q: %v", c.value, err)
		}
		w, _ := pol.Lookup("w")
		if w.RelativePaths != c.want {
			t.Errorf("relative_paths %q = %+v, want %+v", c.value, w.RelativePaths, c.want)
		}
		if want := c.value; want != "" && want != w.RelativePaths.String() && c.want.Mode != RelativeDir {
			t.Errorf("String() = %q, want %q", w.RelativePaths.String(), want)
		}
	}
	// Without a file there is no directory to resolve ./DIR against.
	_, err := LoadSources(Source{Name: "p.yaml", Data: []byte("w:\n  write_params: [path]\n  allowed_path_prefixes: [/srv]\n  relative_paths: ./proj\n")})
	if err == nil || !strings.Contains(err.Error(), "p.yaml:4: w.relative_paths: \"./proj\" is relative and this policy has no directory") {
		t.Errorf("relative directory without a file: %v", err)
	}
}

// Relative prefixes resolve against the directory of the file that names
// them, not the working directory, and Source gives the absolute file:line.
func TestLoadFilesRelativePrefixes(t *testing.T) {
	root := t.TempDir()
	d1 := filepath.Join(root, "team")
	d2 := filepath.Join(root, "me")
	os.MkdirAll(d1, 0o700)
	os.MkdirAll(d2, 0o700)
	f1 := filepath.Join(d1, "bouncer.yaml")
	f2 := filepath.Join(d2, "bouncer.yaml")
	os.WriteFile(f1, []byte("write_file:\n  write_params: [path]\n  allowed_path_prefixes: [out]\nedit_file:\n  write_params: [path]\n  allowed_path_prefixes: [../shared]\n"), 0o600)
	os.WriteFile(f2, []byte("\nwrite_file:\n  write_params: [path]\n  allowed_path_prefixes: [./scratch, /abs/x/]\nsandbox:\n  read_write: [work]\n"), 0o600)

	// Load through a relative path from another directory.
	t.Chdir(root)
	pol, err := Load(filepath.Join("team", "bouncer.yaml"), f2)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(pol.Files, []string{f1, f2}) {
		t.Errorf("Files = %v", pol.Files)
	}
	w, _ := pol.Lookup("write_file")
	if !reflect.DeepEqual(w.AllowedPathPrefixes, []string{filepath.Join(d2, "scratch"), "/abs/x"}) || w.Source != f2+":2" {
		t.Errorf("write_file = %+v", w)
	}
	e, _ := pol.Lookup("edit_file")
	if !reflect.DeepEqual(e.AllowedPathPrefixes, []string{filepath.Join(root, "shared")}) || e.Source != f1+":4" {
		t.Errorf("edit_file = %+v", e)
	}
	if pol.Sandbox == nil || !reflect.DeepEqual(pol.Sandbox.ReadWrite, []string{filepath.Join(d2, "work")}) || pol.Sandbox.Source != f2+":5" {
		t.Errorf("sandbox = %+v", pol.Sandbox)
	}
}

// The server's pack comes first; each later file replaces an earlier
// entry whole.
func TestLayering(t *testing.T) {
	base, err := LoadSources()
	if err != nil {
		t.Fatal(err)
	}
	packOnly, err := base.ForServer("gmail")
	if err != nil {
		t.Fatal(err)
	}
	send, _ := packOnly.Lookup("send_email")
	if send.Source != "pack gmail" || !send.Exfiltrating || !reflect.DeepEqual(send.SinkParams, []string{"to", "cc", "bcc"}) {
		t.Fatalf("pack send_email = %+v", send)
	}

	files, err := LoadSources(
		Source{Name: "team.yaml", Data: []byte("send_email:\n  exfiltrating: true\n  sink_params: [to]\n  trusted_destinations: [a@corp.example]\nwrite_file:\n  max_calls: 3\n")},
		Source{Name: "me.yaml", Data: []byte("\n\nsend_email:\n  max_calls: 5\n")},
	)
	if err != nil {
		t.Fatal(err)
	}
	pol, err := files.ForServer("gmail")
	if err != nil {
		t.Fatal(err)
	}
	// A bare max_calls override turns the destination check off: that is
	// what replacing the entry whole means, and why overrides restate it.
	s, _ := pol.Lookup("send_email")
	if s.Replaced == nil || s.Replaced.Source != "team.yaml:1" {
		t.Errorf("send_email does not record the entry it replaced: %+v", s.Replaced)
	}
	got := *s
	got.Replaced = nil
	if want := (&Tool{Name: "send_email", MaxCalls: intp(5), Source: "me.yaml:3"}); !reflect.DeepEqual(&got, want) {
		t.Errorf("send_email = %+v, want %+v", &got, want)
	}
	// The filesystem pack's write_params do not survive under the user
	// entry, on the filesystem server.
	fs, err := files.ForServer("filesystem")
	if err != nil {
		t.Fatal(err)
	}
	w, _ := fs.Lookup("write_file")
	if len(w.WriteParams) != 0 || *w.MaxCalls != 3 || w.Source != "team.yaml:5" {
		t.Errorf("write_file = %+v", w)
	}
	// Untouched pack entries stay.
	if d, _ := pol.Lookup("draft_email"); d.Source != "pack gmail" {
		t.Errorf("draft_email = %+v", d)
	}
	// The pack-only policy is not changed by loading another.
	if s2, _ := packOnly.Lookup("send_email"); s2.Source != "pack gmail" {
		t.Errorf("pack entry mutated: %+v", s2)
	}
	names := pol.Names()
	for i := 1; i < len(names); i++ {
		if names[i-1] >= names[i] {
			t.Fatalf("Names not sorted: %v", names)
		}
	}
	if !contains(names, "send_email") || !contains(names, "write_file") || !contains(names, "draft_email") || contains(names, "push_files") {
		t.Errorf("Names = %v; want the user's and the gmail pack's, not the github pack's", names)
	}
	// On a server no pack was written for, a tool named like a pack's
	// gets the user's entry or the fallback, never the pack's.
	none, err := files.ForServer("")
	if err != nil {
		t.Fatal(err)
	}
	if d := none.For("draft_email", []string{"recipients", "body"}); d.Source != "fallback" || !reflect.DeepEqual(d.SinkParams, []string{"recipients"}) {
		t.Errorf("another server's draft_email = %+v, want the fallback, which gates its recipients", d)
	}
	if _, err := files.ForServer("gmial"); err == nil {
		t.Error("ForServer of an unknown pack: no error")
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestSandboxConfinement(t *testing.T) {
	pol, err := LoadSources(
		Source{Name: "a.yaml", Dir: "/etc/team", Data: []byte("sandbox:\n  read_write: [/srv/data]\n")},
		Source{Name: "b.yaml", Dir: "/home/me/proj", Data: []byte("send_email:\n  max_calls: 1\nsandbox:\n  read_write: [out, /tmp/x/]\n  read_only: [../ref]\n  connect_tcp: [443, 5432]\n")},
		Source{Name: "c.yaml", Data: []byte("d:\n  max_calls: 1\n")},
	)
	if err != nil {
		t.Fatal(err)
	}
	want := &Confinement{
		ReadWrite:  []string{"/home/me/proj/out", "/tmp/x"},
		ReadOnly:   []string{"/home/me/ref"},
		ConnectTCP: []int{443, 5432},
		Source:     "b.yaml:3",
	}
	if !reflect.DeepEqual(pol.Sandbox, want) {
		t.Errorf("sandbox = %+v, want %+v", pol.Sandbox, want)
	}
	if _, ok := pol.Lookup(SandboxKey); ok {
		t.Error("the sandbox key became a tool entry")
	}
	// An empty confinement is allowed: it means nothing writable, no network.
	pol, err = loadYAML(t, "sandbox: {}\n")
	if err != nil || pol.Sandbox == nil || len(pol.Sandbox.ReadWrite)+len(pol.Sandbox.ConnectTCP) != 0 {
		t.Fatalf("sandbox {} = %+v, %v", pol.Sandbox, err)
	}
}

func TestWords(t *testing.T) {
	tests := map[string][]string{
		"send_email":         {"send", "email"},
		"deleteCustomer":     {"delete", "customer"},
		"emailAddress":       {"email", "address"},
		"HTMLBody":           {"html", "body"},
		"getURLForUser":      {"get", "url", "for", "user"},
		"webhook-url":        {"webhook", "url"},
		"files.upload":       {"files", "upload"},
		"RM":                 {"rm"},
		"s3_put2":            {"s3", "put2"},
		"__x__":              {"x"},
		"":                   nil,
		"channel_ID":         {"channel", "id"},
		"slack_post_message": {"slack", "post", "message"},
	}
	for in, want := range tests {
		if got := Words(in); !reflect.DeepEqual(got, want) {
			t.Errorf("Words(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestIsDestinationName(t *testing.T) {
	yes := []string{"to", "TO", "Cc", "bcc", "recipient", "recipients", "email", "emails", "address",
		"url", "URL", "uri", "webhook", "webhook_url", "webhookUrl", "channel", "channel_id", "channelId",
		"CHANNEL_ID", "channel-name", "share_with", "emailAddress", "email_address", "recipient_email",
		"recipientEmails", "callback_uri", "endpoint", "notify_channel", "chat_id", "room_id",
		"reply_to", "replyTo", "forward_to", "destination", "dest", "phone_number", "attendees",
		"to_email", "recipient_ids", "target_url", "ip_address"}
	no := []string{"confirm", "confirm_order", "channel_topic", "owner", "repo", "subject", "body",
		"inReplyTo", "in_reply_to", "reply_to_id", "path", "user_id", "thread_ts", "toggle", "total",
		"tokens", "mailto_count", "emailed", "urlencoded", "channels_count", "description",
		"format", "", "_", "tó", "email_body", "address_line_count"}
	for _, n := range yes {
		if !IsDestinationName(n) {
			t.Errorf("IsDestinationName(%q) = false, want true", n)
		}
	}
	for _, n := range no {
		if IsDestinationName(n) {
			t.Errorf("IsDestinationName(%q) = true, want false", n)
		}
	}
}

// The fallback for tools no pack or file names, by whole words only.
func TestFallback(t *testing.T) {
	pol, err := LoadSources()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		tool   string
		params []string
		want   Tool
	}{
		{"notify", []string{"webhook_url", "text"},
			Tool{Exfiltrating: true, SinkParams: []string{"webhook_url"}}},
		{"send_invite", []string{"emailAddress", "message", "emailAddress"},
			Tool{Exfiltrating: true, SinkParams: []string{"emailAddress"}}},
		{"post_to_channel", []string{"channel_id", "text", "channel_topic"},
			Tool{Exfiltrating: true, SinkParams: []string{"channel_id"}}},
		{"lookup", []string{"query", "confirm"}, Tool{}},
		// Substring matches of the original: none of these are budgets.
		{"confirm_order", []string{"order_id"}, Tool{}},
		{"format_disk", []string{"disk"}, Tool{}},
		{"list_permissions", nil, Tool{}},
		{"get_output", []string{"path"}, Tool{}},
		{"informant", nil, Tool{}},
		{"delete_customer", []string{"id"}, Tool{MaxCalls: intp(2)}},
		{"deleteCustomer", nil, Tool{MaxCalls: intp(2)}},
		{"rm", []string{"path"}, Tool{MaxCalls: intp(2)}},
		{"drop-table", nil, Tool{MaxCalls: intp(2)}},
		{"purge_cache", nil, Tool{MaxCalls: intp(2)}},
		{"trash_email", []string{"id"}, Tool{MaxCalls: intp(2)}},
		// Write verbs make path-shaped arguments write params.
		{"write_note", []string{"path", "content"}, Tool{WriteParams: []string{"path"}}},
		{"saveFile", []string{"file_path", "filename", "data"}, Tool{WriteParams: []string{"file_path", "filename"}}},
		{"copy_file", []string{"source", "destination"}, Tool{WriteParams: []string{"source", "destination"}}},
		{"upload_report", []string{"target_dir", "url"},
			Tool{Exfiltrating: true, SinkParams: []string{"url"}, WriteParams: []string{"target_dir"}}},
		// Without a write verb a path is just an argument, and a
		// destination-shaped one is a sink.
		{"read_file", []string{"path"}, Tool{}},
		{"transfer_funds", []string{"destination", "amount"},
			Tool{Exfiltrating: true, SinkParams: []string{"destination"}}},
		// A delete verb first names no send: the engine judges its
		// values (a tainted address is asked about).
		{"remove_member", []string{"email"}, Tool{MaxCalls: intp(2)}},
		// Verbs of money, access and data-to-website send, read in the
		// whole name, toolkit prefix and camel case included.
		{"BankManagerPayBill", []string{"from_account_number", "payee_id", "amount"},
			Tool{Exfiltrating: true, SinkParams: []string{"from_account_number", "payee_id"}}},
		{"BankManagerTransferFunds", []string{"to_account_number", "amount"},
			Tool{Exfiltrating: true, SinkParams: []string{"to_account_number"}}},
		{"VenmoWithdrawMoney", []string{"amount", "account_id"}, Tool{Exfiltrating: true, SinkParams: []string{"account_id"}}},
		{"AugustSmartLockGrantGuestAccess", []string{"guest_ids", "permanent"}, Tool{Exfiltrating: true, SinkParams: []string{"guest_ids"}}},
		{"NortonIdentitySafeAutoFillPersonalInfo", []string{"website", "info_type"}, Tool{Exfiltrating: true, SinkParams: []string{"website"}}},
		{"email_contact", []string{"contact", "body"}, Tool{Exfiltrating: true, Implicit: ImplicitYes}},
		{"message_user", []string{"user", "text"}, Tool{Exfiltrating: true, Implicit: ImplicitYes}},
		{"schedule_meeting", []string{"participants", "title"}, Tool{}},
		{"TwitterManagerReadTweet", []string{"tweet_id"}, Tool{}},
		{"GmailSearchEmails", []string{"keywords", "to", "from"}, Tool{}},
		{"FedExShipManagerSearchShipment", []string{"search_term"}, Tool{}},
		{"create_relations", []string{"relations"}, Tool{}},
		// A name that says it sends, with no destination argument, sends
		// to one its arguments don't name (a reply, a forward): every
		// call asks. A read or delete verb first names no send.
		{"reply_to_ticket", []string{"ticket_id", "body"}, Tool{Exfiltrating: true, Implicit: ImplicitYes}},
		{"forwardMessage", []string{"message_id"}, Tool{Exfiltrating: true, Implicit: ImplicitYes}},
		{"share", nil, Tool{Exfiltrating: true, Implicit: ImplicitYes}},
		{"answer_email", []string{"id", "text"}, Tool{Exfiltrating: true, Implicit: ImplicitYes}},
		{"replyall", []string{"id", "text"}, Tool{Exfiltrating: true, Implicit: ImplicitYes}},
		// A reply's cc does not name its main recipient.
		{"reply_email", []string{"messageId", "body", "cc"}, Tool{Exfiltrating: true, SinkParams: []string{"cc"}, Implicit: ImplicitYes}},
		{"forward_email", []string{"messageId", "to"}, Tool{Exfiltrating: true, SinkParams: []string{"to"}}},
		{"SENDMESSAGE", []string{"text"}, Tool{Exfiltrating: true, Implicit: ImplicitYes}},
		{"delete_post", []string{"post_id"}, Tool{MaxCalls: intp(2)}},
		{"get_invites", []string{"page"}, Tool{}},
	}
	for _, tt := range tests {
		got := pol.For(tt.tool, tt.params)
		want := tt.want
		want.Name, want.Source, want.Fallback = tt.tool, "fallback", true
		if !reflect.DeepEqual(got, &want) {
			t.Errorf("For(%q, %q)\n got %+v\nwant %+v", tt.tool, tt.params, *got, want)
		}
	}
	// A named tool is never the fallback, whatever its arguments.
	gmail, err := pol.ForServer("gmail")
	if err != nil {
		t.Fatal(err)
	}
	if got := gmail.For("send_email", []string{"webhook_url"}); got.Fallback || got.Source != "pack gmail" {
		t.Errorf("For(send_email) = %+v", got)
	}
}

func TestSuggest(t *testing.T) {
	tests := map[string]string{
		"sink_param":             " (did you mean sink_params?)",
		"sinkparams":             " (did you mean sink_params?)",
		"trusted_destination":    " (did you mean trusted_destinations?)",
		"allowed_path_prefix":    " (did you mean allowed_path_prefixes?)",
		"arg_pattern":            " (did you mean arg_patterns?)",
		"exfiltrate":             " (did you mean exfiltrating?)",
		"zzz":                    "",
		strings.Repeat("a", 500): "",
	}
	for in, want := range tests {
		if got := suggest(in, toolKeys); got != want {
			t.Errorf("suggest(%q) = %q, want %q", in, got, want)
		}
	}
}

// The shipped example loads, and its relative prefixes land beside it.
func TestExampleLoads(t *testing.T) {
	path, err := filepath.Abs(filepath.Join("..", "..", "examples", "bouncer.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	pol, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	w, ok := pol.Lookup("write_file")
	want := []string{filepath.Join(filepath.Dir(path), "out"), filepath.Join(filepath.Dir(path), "tmp")}
	if !ok || !reflect.DeepEqual(w.AllowedPathPrefixes, want) {
		t.Fatalf("write_file = %+v", w)
	}
	if s, _ := pol.Lookup("send_email"); !s.Exfiltrating || len(s.TrustedDestinations) != 1 {
		t.Fatalf("send_email = %+v", s)
	}
}

func TestCountsAsErrors(t *testing.T) {
	cases := []struct{ yaml, want string }{
		{"x:\n  counts_as: [a]\n", "p.yaml:2: x.counts_as: must be a mapping of tool name to {argument: pattern}, got a list"},
		{"x:\n  counts_as:\n    x: {a: b}\n", "p.yaml:3: x.counts_as.x: a tool already counts against its own max_calls"},
		{"x:\n  counts_as:\n    y: a\n", "p.yaml:3: x.counts_as.y: must be a mapping of argument name to pattern saying when the call counts, got the string \"a\""},
		{"x:\n  counts_as:\n    y: {a: \"(\"}\n", "p.yaml:3: x.counts_as.y.a: pattern \"(\" does not compile"},
	}
	for _, c := range cases {
		_, err := LoadSources(Source{Name: "p.yaml", Dir: t.TempDir(), Data: []byte(c.yaml)})
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%q: got %v, want prefix %q", c.yaml, err, c.want)
		}
	}
}

func TestLint(t *testing.T) {
	dir := t.TempDir()
	pol, err := LoadSources(Source{Name: "p.yaml", Dir: dir, Data: []byte(`
send_mail:
  exfiltrating: true
  sink_params: [to]
write_file:
  max_calls: 5
delete_email:
  exfiltrating: false
create_directory:
  write_params: [path]
  allowed_path_prefixes: [/srv]
`)})
	if err != nil {
		t.Fatal(err)
	}
	// Each server is warned about the pack entries of its own pack that
	// the file replaces, and no other's.
	gmail, _ := pol.ForServer("gmail")
	fs, _ := pol.ForServer("filesystem")
	got := strings.Join(Lint(gmail, []string{"send_email", "delete_email"}), "\n")
	for _, want := range []string{
		"p.yaml:2: send_mail: the server has no tool send_mail (did you mean send_email?), so this entry guards nothing",
		"p.yaml:7: delete_email replaces the entry of pack gmail whole, and its budget of 2 calls is gone",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("Lint lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "write_file replaces") {
		t.Errorf("the gmail server is warned about the filesystem pack:\n%s", got)
	}
	got = strings.Join(Lint(fs, []string{"write_file", "create_directory", "read_file"}), "\n")
	if want := "p.yaml:5: write_file replaces the entry of pack filesystem whole, and its write paths [path] are no longer named"; !strings.Contains(got, want) {
		t.Errorf("Lint lacks %q:\n%s", want, got)
	}
	if strings.Contains(got, "create_directory") || strings.Contains(got, "delete_email replaces") {
		t.Errorf("an entry that keeps its gates, or another pack's, is warned about:\n%s", got)
	}
	// Without the server's tools, only the replaced gates are checked.
	if got := Lint(fs, nil); len(got) != 1 {
		t.Errorf("Lint(nil tools) = %q", got)
	}
}

// TestLintSharedPolicy: a policy file several servers load (bouncer init
// writes the filesystem server's entries into the one file every server of
// a config loads) warns a server only about its own mistakes: not about
// tools of a pack whose server it isn't, and still about a pack tool its
// pack's server lacks, and a name no pack has.
func TestLintSharedPolicy(t *testing.T) {
	pol, err := LoadSources(Source{Name: "bouncer.yaml", Dir: t.TempDir(), Data: []byte(`
create_directory:
  write_params: [path]
  allowed_path_prefixes: [/srv]
write_file:
  write_params: [path]
  allowed_path_prefixes: [/srv]
deploy_site:
  max_calls: 1
`)})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		tools []string
		want  []string // the tools warned about
	}{
		{"another server", []string{"get_ticket", "send_email"}, []string{"deploy_site"}},
		{"the filesystem server", []string{"read_file", "write_file", "create_directory"}, []string{"deploy_site"}},
		{"a filesystem server without create_directory", []string{"read_file", "write_file"}, []string{"create_directory", "deploy_site"}},
	} {
		var got []string
		for _, w := range Lint(pol, c.tools) {
			if !strings.Contains(w, "guards nothing") {
				t.Errorf("%s: %s", c.name, w)
			}
			for _, name := range []string{"create_directory", "write_file", "deploy_site"} {
				if strings.Contains(w, ": "+name+": ") {
					got = append(got, name)
				}
			}
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: warned about %v, want %v", c.name, got, c.want)
		}
	}
}

// The digest changes when any file of the set, their order, or the version
// changes, and stays the same when none does.
func TestDigest(t *testing.T) {
	a := Source{Name: "a.yaml", Data: []byte("send_email:\n  max_calls: 1\n")}
	b := Source{Name: "b.yaml", Data: []byte("write_file:\n  max_calls: 2\n")}
	load := func(srcs ...Source) *Policy {
		p, err := LoadSources(srcs...)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	d := load(a, b).Digest("1.0")
	if !strings.HasPrefix(d, "sha256:") || len(d) != 71 {
		t.Fatalf("digest %q", d)
	}
	if load(a, b).Digest("1.0") != d {
		t.Fatal("the same set gave another digest")
	}
	b2 := b
	b2.Data = []byte("write_file:\n  max_calls: 3\n")
	for name, other := range map[string]string{
		"a file changed": load(a, b2).Digest("1.0"),
		"order":          load(b, a).Digest("1.0"),
		"version":        load(a, b).Digest("1.1"),
		"a file less":    load(a).Digest("1.0"),
		"no files":       load().Digest("1.0"),
	} {
		if other == d {
			t.Errorf("%s: same digest", name)
		}
	}
}

// anchor_records takes true, false or text_json; anything else names the
// key and what it takes.
func TestAnchorRecordsValues(t *testing.T) {
	for _, tc := range []struct {
		val        string
		on, text   bool
		wantErrSub string
	}{
		{"true", true, false, ""},
		{"false", false, false, ""},
		{"text_json", true, true, ""},
		{"yes_please", false, false, "anchor_records: must be true, false or text_json"},
		{"1", false, false, "anchor_records: must be true, false or text_json"},
		{"[text_json]", false, false, "anchor_records: must be true or false"},
	} {
		pol, err := LoadSources(Source{Name: "p.yaml", Dir: "/d", Data: []byte("get_events:\n  anchor_records: " + tc.val + "\n")})
		if tc.wantErrSub != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErrSub) || !strings.Contains(err.Error(), "p.yaml:2") {
				t.Errorf("%s: err = %v, want one at p.yaml:2 with %q", tc.val, err, tc.wantErrSub)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.val, err)
		}
		tl, _ := pol.Lookup("get_events")
		if tl.AnchorRecords != tc.on || tl.AnchorText != tc.text {
			t.Errorf("%s: AnchorRecords, AnchorText = %v, %v; want %v, %v", tc.val, tl.AnchorRecords, tl.AnchorText, tc.on, tc.text)
		}
	}
}

// IsCommandName finds the arguments whose value a shell or an interpreter
// reads, by whole words.
func TestIsCommandName(t *testing.T) {
	for _, n := range []string{"command", "cmd", "shell_command", "script", "code", "pythonCode", "args", "argv", "command_line"} {
		if !IsCommandName(n) {
			t.Errorf("IsCommandName(%q) = false", n)
		}
	}
	// zip_code counts too: the over-match only judges its words as paths.
	for _, n := range []string{"commander", "codec", "text", "body", "path", "content", "", "country_code_name"} {
		if IsCommandName(n) {
			t.Errorf("IsCommandName(%q) = true", n)
		}
	}
}

// ForCall: for a tool no entry names, an argument whose value holds a
// destination-shaped key at any depth is a sink.
func TestForCallNested(t *testing.T) {
	pol, err := LoadSources()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		tool  string
		args  map[string]any
		sinks []string
	}{
		{"create_webhook", map[string]any{"hook": map[string]any{"url": "https://x.example/"}, "active": true}, []string{"hook"}},
		{"configure", map[string]any{"settings": []any{map[string]any{"forward_to": "a@x.example"}}}, []string{"settings"}},
		{"update_settings", map[string]any{"theme": map[string]any{"color": "red"}}, nil},
	} {
		got := pol.ForCall(tc.tool, "", nil, tc.args)
		if !reflect.DeepEqual(got.SinkParams, tc.sinks) || got.Exfiltrating != (tc.sinks != nil) {
			t.Errorf("ForCall(%q, %v) = sinks %q exfiltrating %v, want %q", tc.tool, tc.args, got.SinkParams, got.Exfiltrating, tc.sinks)
		}
	}
}

func TestOwnFilesKey(t *testing.T) {
	pol, err := LoadSources(
		Source{Name: "a.yaml", Data: []byte("own_files: landlock\n")},
		Source{Name: "b.yaml", Data: []byte("send_email:\n  max_calls: 1\nown_files: arguments\n")},
	)
	if err != nil {
		t.Fatal(err)
	}
	if want := (&OwnFiles{Form: "arguments", Source: "b.yaml:3"}); !reflect.DeepEqual(pol.OwnFiles, want) {
		t.Errorf("own_files = %+v, want %+v (the last file wins)", pol.OwnFiles, want)
	}
	if _, ok := pol.Lookup(OwnFilesKey); ok {
		t.Error("the own_files key became a tool entry")
	}
	pol, err = loadYAML(t, "send_email:\n  max_calls: 1\n")
	if err != nil || pol.OwnFiles != nil {
		t.Fatalf("no key: %+v, %v", pol.OwnFiles, err)
	}
	for doc, want := range map[string]string{
		"own_files: mount\n":      `p.yaml:1: own_files: must be one of namespace, landlock, arguments, got the string "mount"`,
		"own_files: [landlock]\n": `p.yaml:1: own_files: must be one of namespace, landlock, arguments, got a list`,
		"own_files:\n":            `p.yaml:1: own_files: must be one of namespace, landlock, arguments, got nothing (null)`,
		"own_files: Namespace\n":  `p.yaml:1: own_files: must be one of namespace, landlock, arguments, got the string "Namespace"`,
		"own_files: !!str true\n": "",
	} {
		_, err := loadYAML(t, doc)
		if want == "" {
			if err == nil {
				t.Errorf("%q accepted", doc)
			}
			continue
		}
		if err == nil || err.Error() != want {
			t.Errorf("%q: got %v, want %s", doc, err, want)
		}
	}
	if _, err := parse(Source{Name: "p", Data: []byte("own_files: arguments\n")}, true); err == nil {
		t.Error("a pack set own_files")
	}
}

// Sends reads a tool's whole name, toolkit prefix and camel case, and
// its description where the name says nothing.
func TestSends(t *testing.T) {
	for _, tc := range []struct {
		name, desc string
		want       bool
	}{
		{"FedExShipManagerManageShipment", "Manages shipments, including redirecting, rescheduling pickup, returning to sender, and cancelling.", true},
		{"FedExShipManagerSearchShipment", "Searches for shipments, to redirect later.", false},
		{"TwitterManagerReadTweet", "", false},
		{"TwitterManagerPostTweet", "", true},
		{"GmailSearchEmails", "Search for emails sent to a recipient.", false},
		{"EmergencyDispatchSystemCreateDispatchRequest", "", true},
		{"SlackLeaveChannel", "Leave a channel.", false},
		{"frobnicate", "Sends the report to a webhook.", true},
		{"frobnicate", "Retrieves messages posted and shared by a user.", false},
		{"text_customer", "", true},
		{"extract_text", "", false},
		{"get_transfer_status", "", false},
		{"AugustSmartLockUnlockDoor", "Unlocks the door.", false},
	} {
		if got := Sends(tc.name, tc.desc); got != tc.want {
			t.Errorf("Sends(%q, %q) = %v, want %v", tc.name, tc.desc, got, tc.want)
		}
	}
}
