package engine

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bouncer-mcp/bouncer/internal/fsresolve"
	"github.com/bouncer-mcp/bouncer/internal/testsupport/need"
)

// pathTree is a real directory tree for the path rules:
//
//	ROOT/proj/out         the allowed prefix
//	ROOT/proj/out/sub/a   a directory inside it
//	ROOT/proj/out/file    a regular file
//	ROOT/proj/out/link    -> ROOT/secrets (absolute)
//	ROOT/proj/out/rel     -> ../../secrets (relative)
//	ROOT/proj/out/inlink  -> sub (inside, one level down)
//	ROOT/proj/out/deep    -> sub/a (inside, two levels down)
//	ROOT/proj/out/café    -> ROOT/secrets (NFC name)
//	ROOT/secrets, ROOT/docs
func pathTree(t testing.TB) string {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(root, "proj", "out")
	must(os.MkdirAll(filepath.Join(out, "sub", "a"), 0o700))
	must(os.MkdirAll(filepath.Join(root, "secrets"), 0o700))
	must(os.MkdirAll(filepath.Join(root, "docs"), 0o700))
	must(os.WriteFile(filepath.Join(out, "file"), nil, 0o600))
	must(os.Symlink(filepath.Join(root, "secrets"), filepath.Join(out, "link")))
	must(os.Symlink("../../secrets", filepath.Join(out, "rel")))
	must(os.Symlink("sub", filepath.Join(out, "inlink")))
	must(os.Symlink("sub/a", filepath.Join(out, "deep")))
	must(os.Symlink(filepath.Join(root, "secrets"), filepath.Join(out, "caf\u00e9")))
	return root
}

// forwarded returns the arguments Decide forwards, or nil.
func forwarded(t *testing.T, d Decision) map[string]any {
	t.Helper()
	if d.Forward == nil {
		return nil
	}
	var p struct {
		Arguments map[string]any `json:"arguments"`
	}
	if err := json.Unmarshal(d.Forward, &p); err != nil {
		t.Fatalf("forwarded params %s: %v", d.Forward, err)
	}
	return p.Arguments
}

// TestPathRules pins each path rule on a real tree with real symlinks: what
// is refused and why, and that what passes is forwarded as the clean
// absolute path that was judged.
func TestPathRules(t *testing.T) {
	root := pathTree(t)
	out := filepath.Join(root, "proj", "out")
	policyFor := func(relative string) string {
		y := fmt.Sprintf("write_file:\n  write_params: [path]\n  allowed_path_prefixes: [%q]\n", out)
		y += fmt.Sprintf("push:\n  write_params: [files]\n  allowed_path_prefixes: [%q]\n", out)
		if relative != "" {
			y = strings.ReplaceAll(y, "allowed_path_prefixes", "relative_paths: "+relative+"\n  allowed_path_prefixes")
		}
		return y
	}
	R := func(s string) string { return strings.ReplaceAll(s, "OUT", out) }
	tests := []struct {
		name     string
		relative string // relative_paths
		workDir  string
		tool     string // default write_file
		args     string // OUT is the prefix
		want     want
		fwd      string // the path forwarded (arguments.path, or files[0].path for push); "" = as sent
	}{
		// Canonical spellings are forwarded clean.
		{name: "plain", args: `{"path":"OUT/new.txt"}`, want: want{Allow, RuleDefault, ""}},
		{name: "double slash, dot, trailing slash", args: `{"path":"OUT//sub/./x/"}`, want: want{Allow, RuleDefault, ""}, fwd: "OUT/sub/x"},
		{name: "dot dot inside, no link", args: `{"path":"OUT/sub/../x"}`, want: want{Allow, RuleDefault, ""}, fwd: "OUT/x"},
		{name: "dot dot after a link, both readings agree", args: `{"path":"OUT/inlink/../x"}`, want: want{Allow, RuleDefault, ""}, fwd: "OUT/x"},
		{name: "ellipsis is a character, not a dot component", args: `{"path":"OUT/Notes\u2026.md"}`, want: want{Allow, RuleDefault, ""}},
		{name: "the prefix itself", args: `{"path":"OUT/"}`, want: want{Allow, RuleDefault, ""}, fwd: "OUT"},

		// ".." after a symlink: kernel and lexical readings differ.
		{name: "link/../ escapes for the kernel", args: `{"path":"OUT/link/../.ssh/x"}`, want: want{Deny, RulePath, "is ambiguous: the kernel applies \"..\" after following a symlink"}},
		{name: "relative link/../", args: `{"path":"OUT/rel/../x"}`, want: want{Deny, RulePath, "ambiguous"}},
		{name: "link/../: kernel inside, cleaned through a link out", args: `{"path":"OUT/deep/../link/x"}`, want: want{Deny, RulePath, "ambiguous"}},
		{name: "link/../ lands elsewhere inside", args: `{"path":"OUT/deep/../x"}`, want: want{Deny, RulePath, "give the path without \"..\""}},
		{name: "dot dot after a missing dir (mkdir -p would make it)", args: `{"path":"OUT/missing/../x"}`, want: want{Deny, RulePath, "\"..\" follows \"missing\", which is not an existing directory; give the path without \"..\""}},
		{name: "dot dot after a file", args: `{"path":"OUT/file/../x"}`, want: want{Deny, RulePath, "not an existing directory"}},
		{name: "symlink out", args: `{"path":"OUT/link/x"}`, want: want{Deny, RulePath, "resolves through a symlink"}},
		{name: "lexically out", args: `{"path":"OUT/../../etc/x"}`, want: want{Deny, RulePath, "outside allowed prefixes"}},

		// Unicode look-alikes of entries on disk.
		{name: "NFD spelling of an NFC link", args: `{"path":"OUT/cafe\u0301/x"}`, want: want{Deny, RulePath, "the same name under Unicode normalization"}},
		{name: "NFD spelling: what to do", args: `{"path":"OUT/cafe\u0301"}`, want: want{Deny, RulePath, "give the name exactly as it is on disk (\"caf\\u00e9\")"}},
		{name: "NFC spelling follows the link", args: `{"path":"OUT/caf\u00e9/x"}`, want: want{Deny, RulePath, "symlink"}},
		{name: "two dot leader is .. under NFKC", args: `{"path":"OUT/\u2025/\u2025/x"}`, want: want{Deny, RulePath, "Unicode normalization (NFKC)"}},
		{name: "full-width solidus", args: `{"path":"OUT/a\uff0fb"}`, want: want{Deny, RulePath, "NFKC"}},

		// Spellings a server may rewrite.
		{name: "backslash", args: `{"path":"OUT\\..\\..\\secrets\\x"}`, want: want{Deny, RulePath, "backslash"}},
		{name: "percent-escape", args: `{"path":"OUT/%2e%2e/%2e%2e/secrets/x"}`, want: want{Deny, RulePath, "percent-escape"}},
		{name: "trailing space", args: `{"path":"OUT/link "}`, want: want{Deny, RulePath, "whitespace or a quote"}},
		{name: "trailing newline", args: `{"path":"OUT/link\n"}`, want: want{Deny, RulePath, "control character"}},
		{name: "trailing no-break space", args: `{"path":"OUT/link\u00a0"}`, want: want{Deny, RulePath, "whitespace"}},
		{name: "trailing quote", args: `{"path":"OUT/link'"}`, want: want{Deny, RulePath, "quote"}},
		{name: "control character", args: `{"path":"OUT/a\u0007b"}`, want: want{Deny, RulePath, "control character"}},
		{name: "NUL", args: `{"path":"OUT/a\u0000b"}`, want: want{Deny, RulePath, "NUL"}},
		{name: "too long", args: `{"path":"OUT/` + strings.Repeat("a", 4096) + `"}`, want: want{Deny, RulePath, "longer than"}},
		{name: "home", args: `{"path":"~/.ssh/authorized_keys"}`, want: want{Deny, RulePath, "home-relative"}},
		{name: "file URI", args: `{"path":"file://OUT/x"}`, want: want{Deny, RulePath, "URI"}},
		{name: "drive", args: `{"path":"C:/x"}`, want: want{Deny, RulePath, "drive"}},

		// Relative paths: denied unless the policy says against what.
		{name: "relative by default", workDir: out, args: `{"path":"victim.txt"}`, want: want{Deny, RulePath, "is a relative path, which servers resolve against different directories; give an absolute path under"}},
		{name: "relative, explicit deny", relative: "deny", workDir: out, args: `{"path":"victim.txt"}`, want: want{Deny, RulePath, "give an absolute path"}},
		{name: "dot-relative", args: `{"path":"./victim.txt"}`, want: want{Deny, RulePath, "relative"}},
		{name: "workdir", relative: "workdir", workDir: out, args: `{"path":"sub/x.txt"}`, want: want{Allow, RuleDefault, ""}, fwd: "OUT/sub/x.txt"},
		{name: "workdir, escaping", relative: "workdir", workDir: out, args: `{"path":"../x"}`, want: want{Deny, RulePath, "outside"}},
		{name: "workdir, link/..", relative: "workdir", workDir: out, args: `{"path":"link/../x"}`, want: want{Deny, RulePath, "ambiguous"}},
		{name: "workdir unknown", relative: "workdir", args: `{"path":"x"}`, want: want{Deny, RulePath, "working directory is unknown; give an absolute path"}},
		{name: "directory", relative: "OUT/sub", args: `{"path":"../y"}`, want: want{Allow, RuleDefault, ""}, fwd: "OUT/y"},
		{name: "directory, NFD", relative: "OUT", args: `{"path":"cafe\u0301/y"}`, want: want{Deny, RulePath, "Unicode"}},
		{name: "absolute still fine with a base", relative: "workdir", workDir: out, args: `{"path":"OUT/z"}`, want: want{Allow, RuleDefault, ""}},

		// Objects in a write argument: path keys exactly as declared.
		{name: "object path forwarded clean", tool: "push", args: `{"files":[{"path":"OUT//a","content":"x"}]}`, want: want{Allow, RuleDefault, ""}, fwd: "OUT/a"},
		{name: "Path folds to path", tool: "push", args: `{"files":[{"path":"OUT/a"},{"Path":"/etc/x"}]}`, want: want{Deny, RulePath, "the key 'Path', which a Go server may read as 'path'"}},
		{name: "pAth", tool: "push", args: `{"files":[{"pAth":"/etc/x","content":"x"}]}`, want: want{Deny, RulePath, "'pAth'"}},
		{name: "fiLe", tool: "push", args: `{"files":{"fiLe":"/etc/x"}}`, want: want{Deny, RulePath, "'fiLe'"}},
		{name: "file-path aliases file_path", tool: "push", args: `{"files":[{"file-path":"/etc/x"}]}`, want: want{Deny, RulePath, "'file-path'"}},
		{name: "long s folds to s", tool: "push", args: `{"files":[{"\u017fource":"/etc/x"}]}`, want: want{Deny, RulePath, "'source'"}},
		{name: "second element out", tool: "push", args: `{"files":[{"path":"OUT/a"},{"path":"OUT/link/b"}]}`, want: want{Deny, RulePath, "files[1].path="}},
	}
	// A file system that normalizes names (macOS) finds the NFC link
	// under its NFD spelling itself: those cases are then plain links.
	_, err := os.Lstat(filepath.Join(out, "cafe\u0301"))
	normalizing := err == nil
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if normalizing && strings.Contains(tc.name, "NFD") {
				need.Skip(t, "the file system normalizes names")
			}
			e, _ := newEngine(t, policyFor(R(tc.relative)), Options{Resolve: fsresolve.Existing, WorkDir: tc.workDir})
			tool := tc.tool
			if tool == "" {
				tool = "write_file"
			}
			sent := R(tc.args)
			d := e.Decide(call(tool, sent))
			check(t, d, tc.want)
			if d.Verdict == Deny {
				if d.Forward != nil {
					t.Errorf("a denied call has Forward %s", d.Forward)
				}
				var a, b any
				if json.Unmarshal(d.Args, &a) != nil || json.Unmarshal([]byte(sent), &b) != nil || fmt.Sprint(a) != fmt.Sprint(b) {
					t.Errorf("a denied call is audited as %s, not as sent %s", d.Args, sent)
				}
				return
			}
			args := forwarded(t, d)
			var got any = args["path"]
			if tool == "push" {
				got = args["files"].([]any)[0].(map[string]any)["path"]
			}
			var sentArgs map[string]any
			_ = json.Unmarshal([]byte(sent), &sentArgs)
			wantFwd := sentArgs["path"]
			if tc.fwd != "" {
				wantFwd = R(tc.fwd)
			} else if tool == "push" {
				wantFwd = sentArgs["files"].([]any)[0].(map[string]any)["path"]
			}
			if got != wantFwd {
				t.Errorf("forwarded path %q, want %q", got, wantFwd)
			}
			if string(d.Args) != string(forwardedArgs(t, d)) {
				t.Errorf("audited %s, forwarded %s", d.Args, d.Forward)
			}
		})
	}
}

func forwardedArgs(t *testing.T, d Decision) json.RawMessage {
	t.Helper()
	var p struct {
		Arguments json.RawMessage `json:"arguments"`
	}
	if err := json.Unmarshal(d.Forward, &p); err != nil {
		t.Fatal(err)
	}
	return p.Arguments
}

// A relative path judged against one directory and forwarded as written
// would be resolved by the reference filesystem server against its own
// allowed directories; forwarded absolute, it lands where it was judged.
func TestRelativePathForwardedAbsolute(t *testing.T) {
	root := pathTree(t)
	out := filepath.Join(root, "proj", "out")
	y := fmt.Sprintf("write_file:\n  write_params: [path]\n  allowed_path_prefixes: [%q]\n  relative_paths: %q\n", out, out)
	e, _ := newEngine(t, y, Options{Resolve: fsresolve.Existing, WorkDir: filepath.Join(root, "docs")})
	d := e.Decide(call("write_file", `{"path":"victim.txt","content":"x"}`))
	if d.Verdict != Allow {
		t.Fatalf("got %+v", d)
	}
	if got := forwarded(t, d)["path"]; got != filepath.Join(out, "victim.txt") {
		t.Fatalf("forwarded %q", got)
	}
	// Rechecking what was forwarded gives the same verdict and path.
	d2 := e.Recheck(call("write_file", string(d.Args)))
	if d2.Verdict != Allow || string(d2.Forward) != string(d.Forward) {
		t.Fatalf("recheck %+v", d2)
	}
}
