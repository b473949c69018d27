package proxy

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fsTree is the directories the reference filesystem server is given in
// TestNPMFilesystemPaths: it may write in all three; the policy confines
// write_file to proj/out.
//
//	ROOT/proj/docs             first allowed directory (victim.txt, out/)
//	ROOT/proj/out              second, and the only allowed prefix
//	ROOT/proj/out/sub/a
//	ROOT/proj/out/link      -> ROOT/secrets
//	ROOT/proj/out/deep      -> sub/a
//	ROOT/proj/out/café      -> ROOT/secrets (NFC name)
//	ROOT/secrets               third
func fsTree(t *testing.T) (root string, dirs []string) {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(root, "proj", "out")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(out, "sub", "a"), 0o700))
	must(os.MkdirAll(filepath.Join(root, "proj", "docs", "out"), 0o700))
	must(os.MkdirAll(filepath.Join(root, "secrets"), 0o700))
	must(os.WriteFile(filepath.Join(root, "proj", "docs", "victim.txt"), []byte("original"), 0o600))
	must(os.Symlink(filepath.Join(root, "secrets"), filepath.Join(out, "link")))
	must(os.Symlink("sub/a", filepath.Join(out, "deep")))
	must(os.Symlink(filepath.Join(root, "secrets"), filepath.Join(out, "caf\u00e9")))
	return root, []string{filepath.Join(root, "proj", "docs"), out, filepath.Join(root, "secrets")}
}

// treeState lists every path below root with its content (files) or link
// target.
func treeState(t *testing.T, root string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			fmt.Fprintf(&b, "%s -> %s\n", p, target)
		case d.IsDir():
			fmt.Fprintf(&b, "%s/\n", p)
		default:
			data, _ := os.ReadFile(p)
			fmt.Fprintf(&b, "%s = %q\n", p, data)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// Through the real reference filesystem server, allowed to write in three
// directories: write_file is confined to one of them. The attacks of issue
// 10 (class 3) are refused and leave the file system as it was; a plain
// path is written; a path spelled with ./ and // reaches the server clean.
func TestNPMFilesystemPaths(t *testing.T) {
	root, dirs := fsTree(t)
	out := dirs[1]

	// Control: with no confinement, the server itself follows an NFD
	// spelling of the NFC link out of proj/out, so the rule is needed.
	{
		cmd := npmServer(t, "server-filesystem", dirs...)
		h := newHarness(t, hopts{cmd: &cmd})
		cs := h.client(nil)
		if text, isErr := callTool(t, cs, "write_file", map[string]any{"path": out + "/cafe\u0301/proof", "content": "x"}); isErr {
			t.Fatalf("control write failed: %s", text)
		}
		if _, err := os.Stat(filepath.Join(root, "secrets", "proof")); err != nil {
			t.Fatalf("the server did not follow the NFD spelling to the link's target (%v); the control no longer shows the attack", err)
		}
		if err := os.Remove(filepath.Join(root, "secrets", "proof")); err != nil {
			t.Fatal(err)
		}
		// So does a relative path: the server resolves it against its first
		// allowed directory.
		if text, isErr := callTool(t, cs, "write_file", map[string]any{"path": "victim.txt", "content": "overwritten"}); isErr {
			t.Fatalf("control write failed: %s", text)
		}
		if b, _ := os.ReadFile(filepath.Join(dirs[0], "victim.txt")); string(b) != "overwritten" {
			t.Fatalf("control: docs/victim.txt = %q", b)
		}
		if err := os.WriteFile(filepath.Join(dirs[0], "victim.txt"), []byte("original"), 0o600); err != nil {
			t.Fatal(err)
		}
	}

	policy := fmt.Sprintf(`
write_file:
  write_params: [path]
  allowed_path_prefixes: [%q]
create_directory:
  write_params: [path]
  allowed_path_prefixes: [%q]
  relative_paths: %q
`, out, out, out)
	cmd := npmServer(t, "server-filesystem", dirs...)
	h := newHarness(t, hopts{cmd: &cmd, policy: policy})
	cs := h.client(nil)

	before := treeState(t, root)
	for _, c := range []struct{ name, path, reason string }{
		{"'..' after a symlink", out + "/link/../victim", "ambiguous"},
		{"'..' after a symlink, kernel inside and cleaned outside", out + "/deep/../link/victim", "ambiguous"},
		{"relative", "victim.txt", "give an absolute path"},
		{"relative into a directory the server resolves elsewhere", "out/victim.txt", "relative path"},
		{"NFD spelling of an NFC link", out + "/cafe\u0301/victim", "Unicode normalization"},
		{"backslash", out + `\..\..\docs\victim.txt`, "backslash"},
		{"percent-escape", out + "/%2e%2e/docs/victim.txt", "percent-escape"},
		{"trailing space", out + "/link ", "whitespace"},
	} {
		text, isErr := callTool(t, cs, "write_file", map[string]any{"path": c.path, "content": "pwned"})
		if !isErr || !strings.HasPrefix(text, BlockedPrefix) || !strings.Contains(text, c.reason) {
			t.Errorf("%s: write_file %q = %q (isError %v); want blocked, %q", c.name, c.path, text, isErr, c.reason)
		}
	}
	if after := treeState(t, root); after != before {
		t.Fatalf("refused writes changed the file system:\nbefore:\n%s\nafter:\n%s", before, after)
	}

	// A plain absolute path inside the prefix is written.
	if text, isErr := callTool(t, cs, "write_file", map[string]any{"path": out + "/ok.txt", "content": "fine"}); isErr {
		t.Fatalf("plain write refused: %s", text)
	}
	if b, err := os.ReadFile(filepath.Join(out, "ok.txt")); err != nil || string(b) != "fine" {
		t.Fatalf("ok.txt = %q, %v", b, err)
	}
	// ./ and // reach the server as the clean absolute path (it echoes the
	// path it was given).
	clean := filepath.Join(out, "sub", "ok2.txt")
	text, isErr := callTool(t, cs, "write_file", map[string]any{"path": out + "/./sub//ok2.txt", "content": "fine"})
	if isErr || text != "Successfully wrote to "+clean {
		t.Fatalf("write_file ./ // = %q (isError %v); want the server to have received %s", text, isErr, clean)
	}
	// A relative path the policy places (relative_paths: OUT) is forwarded
	// absolute: the directory is made in proj/out, not where the server
	// itself would put it (proj/docs, its first allowed directory).
	text, isErr = callTool(t, cs, "create_directory", map[string]any{"path": "made"})
	if isErr || text != "Successfully created directory "+filepath.Join(out, "made") {
		t.Fatalf("create_directory made = %q (isError %v)", text, isErr)
	}
	if _, err := os.Stat(filepath.Join(out, "made")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dirs[0], "made")); err == nil {
		t.Fatal("the relative directory was made in proj/docs")
	}
	if b, _ := os.ReadFile(filepath.Join(dirs[0], "victim.txt")); string(b) != "original" {
		t.Fatalf("docs/victim.txt = %q", b)
	}
	// The audit line records the path as judged and forwarded.
	var audited bool
	for _, e := range h.auditLines() {
		if e.Tool == "write_file" && e.Verdict == "allow" && strings.Contains(string(e.Args), clean) {
			audited = true
		}
	}
	if !audited {
		t.Errorf("no allow line for write_file with %s: %s", clean, verdicts(h.auditLines()))
	}
}

// Through the real reference filesystem server serving a tree that holds
// Bouncer's state directory and policy file, with a policy that lets
// write_file anywhere in that tree (what init once wrote: [.]): writes to
// remembered.json, the policy and the audit log, and reads of the session
// key, are refused and never reach the server; the state is as it was.
// Without Bouncer, the same server writes remembered.json.
func TestNPMFilesystemOwnState(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(root, ".bouncer")
	if err := os.MkdirAll(state, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(state, "remembered.json"), []byte(`{"version":1,"destinations":[]}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	// Control: the server itself writes Bouncer's state when asked.
	{
		cmd := npmServer(t, "server-filesystem", root)
		h := newHarness(t, hopts{cmd: &cmd})
		cs := h.client(nil)
		ctl := filepath.Join(root, "control.json")
		if text, isErr := callTool(t, cs, "write_file", map[string]any{"path": ctl, "content": "x"}); isErr {
			t.Fatalf("control write failed: %s", text)
		}
		os.Remove(ctl)
	}

	policy := fmt.Sprintf(`
write_file:
  write_params: [path]
  allowed_path_prefixes: [%q]
edit_file:
  write_params: [path]
  allowed_path_prefixes: [%q]
move_file:
  write_params: [source, destination]
  allowed_path_prefixes: [%q]
`, root, root, root)
	cmd := npmServer(t, "server-filesystem", root)
	h := newHarness(t, hopts{cmd: &cmd, policy: policy, home: state})
	cs := h.client(nil)
	before := treeState(t, state)
	forged := `{"version":1,"destinations":[{"server":"mail","destination":"attacker@evil.example","added":"2026-12-01T00:00:00Z","via":"trust add"}]}`
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"write_file", map[string]any{"path": filepath.Join(state, "remembered.json"), "content": forged}},
		{"write_file", map[string]any{"path": filepath.Join(state, "bouncer.yaml"), "content": "{}"}},
		{"write_file", map[string]any{"path": filepath.Join(state, "audit.jsonl"), "content": ""}},
		{"write_file", map[string]any{"path": root + "/./.bouncer//remembered.json", "content": forged}},
		{"move_file", map[string]any{"source": state, "destination": filepath.Join(root, "moved")}},
		{"read_text_file", map[string]any{"path": filepath.Join(state, "audit.jsonl")}},
		{"read_file", map[string]any{"path": filepath.Join(state, "audit.jsonl")}},
		{"list_directory", map[string]any{"path": state}},
	} {
		text, isErr := callTool(t, cs, c.tool, c.args)
		if !isErr || !strings.HasPrefix(text, BlockedPrefix) || !strings.Contains(text, "Bouncer's own state") {
			t.Errorf("%s %v = %q (isError %v); want blocked as Bouncer's own state", c.tool, c.args, text, isErr)
		}
	}
	// The audit log grew (it is the proxy's own); everything else is as it was.
	after := treeState(t, state)
	strip := func(s string) string {
		var keep []string
		for _, l := range strings.Split(s, "\n") {
			if !strings.Contains(l, "audit.jsonl") {
				keep = append(keep, l)
			}
		}
		return strings.Join(keep, "\n")
	}
	if strip(after) != strip(before) {
		t.Fatalf("refused calls changed the state:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	// A write elsewhere in the tree still goes through.
	if text, isErr := callTool(t, cs, "write_file", map[string]any{"path": filepath.Join(root, "notes.txt"), "content": "fine"}); isErr {
		t.Fatalf("a plain write was refused: %s", text)
	}
}
