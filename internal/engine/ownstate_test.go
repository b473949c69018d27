package engine

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bouncer-mcp/bouncer/internal/fsresolve"
)

// TestOwnState: no argument of any tool reaches Bouncer's own state,
// whatever the policy allows, in any spelling a server may read.
func TestOwnState(t *testing.T) {
	root := t.TempDir()
	home := filepath.Join(root, "home")
	state := filepath.Join(home, ".bouncer")
	proj := filepath.Join(home, "proj")
	for _, d := range []string{state, proj, filepath.Join(proj, "docs")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	pol := filepath.Join(proj, "bouncer.yaml")
	os.WriteFile(pol, []byte("x: {}\n"), 0o600)
	os.WriteFile(filepath.Join(state, "remembered.json"), []byte("{}"), 0o600)
	link := filepath.Join(proj, "docs", "state-link")
	if err := os.Symlink(state, link); err != nil {
		t.Fatal(err)
	}
	policyText := "write_file:\n  write_params: [path]\n  allowed_path_prefixes: [" + home + "]\n" +
		"move_file:\n  write_params: [source, destination]\n  allowed_path_prefixes: [" + home + "]\n" +
		"download_attachment:\n  write_params: [savePath, filename]\n" +
		"save_as:\n  write_params: [name]\n"
	// Another proxy's policy and the client's config, beside this one's.
	mail := filepath.Join(proj, "mail.yaml")
	config := filepath.Join(proj, ".mcp.json")
	hook := filepath.Join(proj, ".claude", "settings.json")
	e, _ := newEngine(t, policyText, Options{
		Own:  OwnList{{Path: state, Dir: true}, {Path: pol}, {Path: mail}, {Path: config}, {Path: hook}},
		Home: home, WorkDir: proj, Resolve: fsresolve.Existing,
	})
	deny := []struct{ name, tool, args string }{
		{"the remembered file", "write_file", `{"path":"` + state + `/remembered.json","content":"x"}`},
		{"the state directory itself", "write_file", `{"path":"` + state + `"}`},
		{"the policy file", "write_file", `{"path":"` + pol + `"}`},
		{"the policy file, relative", "write_file", `{"path":"bouncer.yaml"}`},
		{"the policy file, relative with dots", "write_file", `{"path":"./docs/../bouncer.yaml"}`},
		{"the state, relative from a parent", "download_attachment", `{"savePath":"../.bouncer","filename":"remembered.json"}`},
		{"a file name alone", "download_attachment", `{"savePath":"/tmp","filename":"bouncer.yaml"}`},
		{"through a symlink", "write_file", `{"path":"` + link + `/remembered.json"}`},
		{"home-relative", "read_file", `{"path":"~/.bouncer/audit.jsonl"}`},
		{"a file URI", "read_file", `{"uri":"file://` + state + `/key"}`},
		{"percent-encoded", "read_file", `{"path":"` + filepath.Dir(state) + `/%2ebouncer/audit.jsonl"}`},
		{"backslashes", "read_file", `{"path":"` + filepath.Dir(state) + `\\.bouncer\\audit.jsonl"}`},
		{"full-width solidus", "read_file", `{"path":"` + filepath.Dir(state) + `／.bouncer／audit.jsonl"}`},
		{"other case", "read_file", `{"path":"` + filepath.Dir(state) + `/.BOUNCER/audit.jsonl"}`},
		{"nested in a list of objects", "push_files", `{"files":[{"path":"ok.txt"},{"path":"` + pol + `"}]}`},
		{"an argument not named like a path", "send_email", `{"to":"a@b.example","attachments":["` + pol + `"]}`},
		{"a write to an ancestor", "move_file", `{"source":"` + home + `","destination":"/tmp/x"}`},
		// Spellings a shell or a server expands, in a tool with no path
		// confinement and in an argument not named like a path.
		{"$HOME", "open_doc", `{"path":"$HOME/.bouncer/remembered.json"}`},
		{"${HOME}", "run", `{"arg":"${HOME}/.bouncer/remembered.json"}`},
		{"~name", "run", `{"arg":"~alice/.bouncer/key"}`},
		{"another variable", "run", `{"arg":"$BOUNCER_STATE/.bouncer/key"}`},
		{"a space before ~", "run", `{"arg":" ~/.bouncer/key"}`},
		{"cut at a NUL", "open_doc", `{"path":"` + state + `\u0000.txt"}`},
		{"a percent-encoded NUL", "open_doc", `{"path":"` + state + `%00.txt"}`},
		{"percent-encoded twice", "open_doc", `{"path":"` + filepath.Dir(state) + `/%252ebouncer/audit.jsonl"}`},
		// A path inside a command line or code, which a shell or an
		// interpreter reads.
		{"in a shell command", "execute_command", `{"command":"cat ~/.bouncer/remembered.json"}`},
		{"after a redirection", "execute_command", `{"command":"echo x >` + state + `/key"}`},
		{"in code", "run_python", `{"code":"open('` + state + `/remembered.json','w')"}`},
		{"in a flag", "run", `{"args":["-o` + state + `/key"]}`},
		{"in a flag after =", "run", `{"args":["--output=` + pol + `"]}`},
		// Another proxy's policy, the client's config and hook files.
		{"another proxy's policy", "write_file", `{"path":"` + mail + `"}`},
		{"the client's config", "write_file", `{"path":"` + config + `"}`},
		{"the client's hook file", "write_file", `{"path":"` + hook + `"}`},
		// What a server builds from two arguments (path.join).
		{"joined through /proc/self/root", "download_attachment", `{"savePath":"/var/tmp","filename":"../../proc/self/root` + state + `/remembered.json"}`},
		{"joined through a symlink in the base", "download_attachment", `{"savePath":"` + proj + `/docs","filename":"state-link/remembered.json"}`},
		{"joined, an absolute-looking second part", "download_attachment", `{"savePath":"` + root + `","filename":"/home/.bouncer/remembered.json"}`},
		{"joined into an ancestor, for a write", "save_as", `{"dir":"` + root + `","name":"home"}`},
		{"joined, nested below the base", "upload", `{"base":"` + proj + `/docs","files":[{"name":"state-link/key"}]}`},
		{"joined, a list's consecutive parts", "open_parts", `{"parts":["` + proj + `/docs","state-link/key"]}`},
		{"joined, in a nested object", "upload", `{"files":[{"dir":"` + proj + `/docs","name":"state-link/key"}]}`},
		// Magic links: what follows them is judged.
		{"/proc/self/root", "read_file", `{"path":"/proc/self/root` + state + `/key"}`},
		{"/proc/PID/root", "read_file", `{"path":"/proc/4242/root` + pol + `"}`},
		{"/proc/self/cwd", "read_file", `{"path":"/proc/self/cwd/.bouncer/key"}`},
		{"/dev/fd/N", "read_file", `{"path":"/dev/fd/7/.bouncer/key"}`},
		{"/proc/thread-self/root", "read_file", `{"path":"/proc/thread-self/root` + state + `"}`},
		// Shell words after quote removal.
		{"empty quotes in a word", "execute_command", `{"command":"cat ~/.boun''cer/remembered.json"}`},
		{"a quoted $HOME", "execute_command", `{"command":"cat \"$HOME\"/.bouncer/key"}`},
		{"a backslash", "execute_command", `{"command":"cat \\.bouncer/key"}`},
		{"$'...'", "execute_command", `{"command":"cat ~/$'\\x2e'bouncer/key"}`},
		{"a command substitution", "execute_command", `{"command":"echo $(cat ~/.boun\"\"cer/key)"}`},
		{"backticks", "execute_command", "{\"command\":\"echo `cat ~/.b''ouncer/key`\"}"},
		{"sh -c", "execute_command", `{"command":"sh -c 'cat ~/.boun\"\"cer/key'"}`},
		{"an assignment", "execute_command", `{"command":"X=~/.boun''cer/key; cat $X"}`},
		{"a variable in the middle", "execute_command", `{"command":"cat /home/$USER/.bouncer/key"}`},
		{"a substitution inside a name", "execute_command", "{\"command\":\"cat ~/.b$(printf '')ouncer/key ~/.b`true`ouncer\"}"},
		{"a variable inside a name", "execute_command", `{"command":"cat ~/.b${EMPTY}ouncer/key"}`},
		// Globs that could match a protected path.
		{"hom?", "execute_command", `{"command":"cat ` + root + `/hom?/.bouncer/key"}`},
		{"cd hom* and a relative glob", "execute_command", `{"command":"cd ` + root + ` && cd hom* && cat .b*/key"}`},
		{".b*r", "execute_command", `{"command":"cat ~/.b*r/remembered.json"}`},
		{"[.]bouncer", "execute_command", `{"command":"cat ~/[.]bouncer/key"}`},
		{"a negated class", "execute_command", `{"command":"cat ~/[!x]bouncer/key"}`},
		{"brace expansion", "execute_command", `{"command":"cat ~/.{x,bouncer}/key"}`},
		{"brace expansion in a name", "execute_command", `{"command":"cat ~/.bou{n,}cer/key"}`},
		{"a star in the server's directory", "execute_command", `{"command":"sed -i s/a/b/ *"}`},
		{"a star after cd", "execute_command", `{"command":"cd ` + proj + ` && sed -i s/a/b/ *"}`},
		{"a star after a relative cd", "execute_command", `{"command":"cd docs; cd ..; rm *"}`},
		{"a star after cd to somewhere unknown", "execute_command", `{"command":"cd \"$(dirname x)\" && cat */remembered.json"}`},
		{"a star beside a cwd argument", "execute_command", `{"cwd":"` + proj + `","command":"rm -f *"}`},
		{"globstar", "execute_command", `{"command":"cat ` + root + `/**/remembered.json"}`},
		{"a glob in a file name", "execute_command", `{"command":"cp x ` + proj + `/b*.yaml"}`},
		// Code that builds a string from literals.
		{"concatenated literals", "run_python", `{"code":"open('` + root + `/ho'+'me/.boun' 'cer/key','w')"}`},
		{"os.path.join", "run_python", `{"code":"open(os.path.join(os.path.expanduser('~'), '.bo' + 'uncer', 'key'))"}`},
		{"a JavaScript escape", "run_js", `{"code":"fs.writeFileSync('` + root + `/home/\\x2ebouncer/remembered.json', x)"}`},
	}
	for _, tc := range deny {
		d := e.Decide(call(tc.tool, tc.args))
		if d.Verdict != Deny || d.Rule != RulePath {
			t.Errorf("%s: %s %s: got %s/%s %q, want a path deny", tc.name, tc.tool, tc.args, d.Verdict, d.Rule, d.Reason)
		}
	}
	allow := []struct{ name, tool, args string }{
		{"a file in the project", "write_file", `{"path":"` + proj + `/notes.txt","content":"see ~/.bouncer/audit.jsonl"}`},
		{"a read of an ancestor", "list_directory", `{"path":"` + home + `"}`},
		{"a look-alike name", "write_file", `{"path":"` + proj + `/docs/bouncer.yaml.bak"}`},
		{"a sibling named like the state", "write_file", `{"path":"` + state + `x/a.txt"}`},
		{"prose with a slash", "post", `{"text":"and/or"}`},
		{"a command elsewhere", "execute_command", `{"command":"ls -la ` + proj + ` && cat ~/notes.txt"}`},
		{"a command reading an ancestor", "execute_command", `{"command":"ls ` + home + `"}`},
		// Ordinary commands in the project, globs and all.
		{"ls *.txt", "execute_command", `{"command":"ls *.txt"}`},
		{"grep -r", "execute_command", `{"command":"grep -r foo src/"}`},
		{"cat README.md", "execute_command", `{"command":"cat README.md"}`},
		{"a glob below a directory", "execute_command", `{"command":"cat */README.md docs/*.md"}`},
		{"a quoted regular expression", "execute_command", `{"command":"grep -E 'a.*b' notes.txt"}`},
		{"find -name", "execute_command", `{"command":"find . -name '*.py' -newer Makefile"}`},
		{"arithmetic", "execute_command", `{"command":"echo $((2 * 3))"}`},
		{"a quoted glob in a message", "execute_command", `{"command":"git commit -m \"docs: update docs/*.md\""}`},
		{"a glob elsewhere in home", "execute_command", `{"command":"ls ~/Downloads/*.pdf && cp src/*.go /tmp/"}`},
		{"a glob below a cd", "execute_command", `{"command":"cd src && ls *.go && rm -rf build/*"}`},
		{"brace expansion elsewhere", "execute_command", `{"command":"mkdir -p out/{a,b,c} && touch out/{1..3}.txt"}`},
		{"a variable", "execute_command", `{"command":"cd \"$PROJECT\" && make && echo $PATH"}`},
		{"multiplication in code", "run_python", `{"code":"x = a * b\nprint(x ** 2, *args)"}`},
		{"a regular expression in code", "run_python", `{"code":"re.findall(r'[a-z]+\\.txt', s) or glob.glob('*.txt')"}`},
		{"path.join in code", "run_js", `{"code":"fs.readFileSync(path.join(__dirname, 'src', 'index.js'))"}`},
		{"a download beside the project", "download_attachment", `{"savePath":"` + proj + `/downloads","filename":"report.pdf"}`},
		{"many paths in a list", "read_multiple_files", manyPaths(proj, 300)},
	}
	for _, tc := range allow {
		d := e.Decide(call(tc.tool, tc.args))
		if d.Rule == RulePath {
			t.Errorf("%s: %s %s: got %s/%s %q, want no path deny", tc.name, tc.tool, tc.args, d.Verdict, d.Rule, d.Reason)
		}
	}
}

// manyPaths is a read_multiple_files call naming n files of dir.
func manyPaths(dir string, n int) string {
	paths := make([]string, n)
	for i := range paths {
		paths[i] = fmt.Sprintf("%q", filepath.Join(dir, "src", fmt.Sprintf("f%d.go", i)))
	}
	return `{"paths":[` + strings.Join(paths, ",") + `]}`
}

// A glob of wildcards only is judged in the directories a command line
// may read it in: the server's working directory, and where a cd before
// it leads (a directory Bouncer can't know: every directory).
func TestOwnStateCommandDirs(t *testing.T) {
	root := t.TempDir()
	home := filepath.Join(root, "home")
	state := filepath.Join(home, ".bouncer")
	proj := filepath.Join(home, "proj")
	elsewhere := filepath.Join(root, "tmp")
	for _, d := range []string{state, proj, elsewhere} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	pol := filepath.Join(proj, "bouncer.yaml")
	e, _ := newEngine(t, "{}\n", Options{
		Own: OwnList{{Path: state, Dir: true}, {Path: pol}}, Home: home, WorkDir: elsewhere, Resolve: fsresolve.Existing,
	})
	for _, tc := range []struct {
		command string
		deny    bool
	}{
		{"sed -i s/a/b/ *", false},
		{"cd " + proj + " && sed -i s/a/b/ *", true},
		{"cd " + home + "; cd proj; rm *", true},
		{"cd " + home + "; cd proj/; cd ../proj; rm -- *", true},
		{"cd; rm -rf *", true},
		{"cd ~ && ls", false},
		{"cd \"$X\" && rm *", true},
		{"cd \"$(git rev-parse --show-toplevel)\" && cat */key", true},
		{"cd /usr/share && ls *", false},
		{"cd src && ls * && cd .. && ls */*.go", false},
		{"pushd " + proj + " >/dev/null && cat ?ouncer.yaml", true},
		{"cd -P " + proj + " && cat *", true},
	} {
		d := e.Decide(call("execute_command", `{"command":`+jsonString(tc.command)+`}`))
		if got := d.Verdict == Deny && d.Rule == RulePath; got != tc.deny {
			t.Errorf("%q: got %s/%s %q, want deny %v", tc.command, d.Verdict, d.Rule, d.Reason, tc.deny)
		}
	}
}

// A call with more path-shaped values than can be joined onto one another
// is refused, not judged in part.
func TestOwnStateTooMany(t *testing.T) {
	state := filepath.Join(t.TempDir(), ".bouncer")
	e, _ := newEngine(t, "{}\n", Options{Own: OwnList{{Path: state, Dir: true}}})
	var members []string
	for i := 0; i < 100; i++ {
		members = append(members, fmt.Sprintf(`"x%d_path":"/tmp/x%d"`, i, i))
	}
	d := e.Decide(call("copy_many", "{"+strings.Join(members, ",")+"}"))
	if d.Verdict != Deny || d.Rule != RulePath || !strings.Contains(d.Reason, "can't be judged whole") {
		t.Fatalf("got %s/%s %q, want a deny for a call too large to judge", d.Verdict, d.Rule, d.Reason)
	}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// BenchmarkOwnState is the own-state guard on calls a server gets every
// minute: a write, a command line, a push of 20 files.
func BenchmarkOwnState(b *testing.B) {
	root := b.TempDir()
	home := filepath.Join(root, "home")
	state := filepath.Join(home, ".bouncer")
	proj := filepath.Join(home, "proj")
	for _, d := range []string{state, filepath.Join(proj, "src")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			b.Fatal(err)
		}
	}
	pol := filepath.Join(proj, "bouncer.yaml")
	e, _ := newEngine(b, "write_file:\n  write_params: [path]\n  allowed_path_prefixes: ["+proj+"]\n", Options{
		Own: OwnList{{Path: state, Dir: true}, {Path: pol}}, Home: home, WorkDir: proj, Resolve: fsresolve.Existing,
	})
	var files []string
	for i := 0; i < 20; i++ {
		files = append(files, fmt.Sprintf(`{"path":"%s/src/f%d.go","content":"package x // see a/b"}`, proj, i))
	}
	for _, c := range []struct{ name, tool, args string }{
		{"write", "write_file", `{"path":"` + proj + `/notes.txt","content":"hello world"}`},
		{"command", "execute_command", `{"command":"cd ` + proj + ` && grep -r foo src/ | head -n 5 && ls *.txt"}`},
		{"files20", "push_files", `{"owner":"o","repo":"r","branch":"main","message":"m","files":[` + strings.Join(files, ",") + `]}`},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if d := e.Decide(call(c.tool, c.args)); d.Verdict == Deny {
					b.Fatal(d.Reason)
				}
			}
		})
	}
}
