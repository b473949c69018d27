package e2e_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bouncer-mcp/bouncer/internal/session"
	"github.com/bouncer-mcp/bouncer/internal/testsupport/e2e"
	"github.com/bouncer-mcp/bouncer/internal/testsupport/need"
)

// Live attacks on Bouncer's own files, through the real bouncer run, with
// no sandbox key and the policy bouncer init writes, against the reference
// filesystem server, the Go toolbox server (a Gmail-style download that
// joins savePath and filename) and the node builder server (the same
// download, a shell tool, a Python tool). Each attack
// tries to read the state directory (remembered.json, audit.jsonl) or to
// write remembered.json, this proxy's policy, another proxy's policy named
// in the same client config, that config, another client's config that
// init wrapped, or the originals init kept in the state directory for it
// (upstreams.json), spelled so that a reader of the arguments alone can
// miss it. The same attacks run in each form
// own_files allows: namespace (the default) and landlock must hold them
// all; the argument checks alone hold only some, which the test states.

// ownLayout is one client session's files: a project with a client config
// that init wrapped, its policy, a second proxy's policy, a second client's
// config that init wrapped too (Gemini CLI's, whose originals init keeps in
// the state directory), and the state directory.
type ownLayout struct {
	home, proj, state string
	remembered, audit string
	policy, mail      string
	config, hooks     string
	gemini, kept      string
	// before holds each target's bytes before the attacks.
	before map[string][]byte
}

// secret is in remembered.json (as a remembered destination) and so in
// nothing an attack may read back.
const secret = "boss-7f3a9@corp.example"

func newOwnLayout(t *testing.T, form string, fsServer e2e.Server) *ownLayout {
	t.Helper()
	root := t.TempDir()
	l := &ownLayout{home: filepath.Join(root, "home")}
	l.proj = filepath.Join(l.home, "proj")
	l.state = filepath.Join(l.home, ".bouncer")
	l.remembered = filepath.Join(l.state, "remembered.json")
	l.audit = filepath.Join(l.state, "audit.jsonl")
	l.policy = filepath.Join(l.proj, "bouncer.yaml")
	l.mail = filepath.Join(l.proj, "mail.yaml")
	l.config = filepath.Join(l.proj, ".mcp.json")
	l.hooks = filepath.Join(l.proj, ".claude", "settings.json") // init writes the prompt hook there
	l.gemini = filepath.Join(l.proj, ".gemini", "settings.json")
	l.kept = filepath.Join(l.state, "upstreams.json")
	for _, d := range []string{filepath.Join(l.proj, "src"), filepath.Dir(l.gemini), l.state} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	write(t, filepath.Join(l.proj, "README.md"), "a project\n")
	if err := session.OpenRemembered(l.state).Add("mail", secret, "client", time.Now()); err != nil {
		t.Fatal(err)
	}
	write(t, l.audit, `{"verdict":"allow","note":"`+secret+`"}`+"\n")
	box, builder := e2e.Toolbox(t), e2e.Builder(t)
	cfg := map[string]any{"mcpServers": map[string]any{
		"fs":   map[string]any{"command": fsServer.Argv[0], "args": append(fsServer.Argv[1:], l.home)},
		"box":  map[string]any{"command": box.Argv[0]},
		"mail": map[string]any{"command": builder.Argv[0], "args": builder.Argv[1:]},
	}}
	b, _ := json.MarshalIndent(cfg, "", "  ")
	write(t, l.config, string(b))
	write(t, l.gemini, `{"mcpServers": {"other": {"command": "`+box.Argv[0]+`"}}}`)
	// bouncer init wraps the servers and writes the policy; its record
	// names both configs, and it keeps Gemini CLI's originals in
	// upstreams.json.
	for _, config := range []string{".gemini/settings.json", ".mcp.json"} {
		ini := e2e.Start(t, e2e.Server{Name: "init", Argv: []string{e2e.Bouncer(t), "init", "--yes", "--config", config}},
			e2e.Options{Direct: true, NoHandshake: true, Dir: l.proj, Env: l.env()})
		if err := ini.Close(); err != nil {
			t.Fatalf("bouncer init --config %s: %v\n%s", config, err, ini.Stderr())
		}
	}
	// The mail server's proxy has a policy of its own, named in the config.
	var wrapped map[string]map[string]map[string]any
	b, err := os.ReadFile(l.config)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &wrapped); err != nil {
		t.Fatal(err)
	}
	args := wrapped["mcpServers"]["mail"]["args"].([]any)
	args[len(args)-1] = "mail.yaml"
	b, _ = json.MarshalIndent(wrapped, "", "  ")
	write(t, l.config, string(b))
	write(t, l.mail, "send_email:\n  exfiltrating: true\n  sink_params: [to]\n")
	if form != "" {
		for _, p := range []string{l.policy, l.mail} {
			old, _ := os.ReadFile(p)
			write(t, p, string(old)+"\nown_files: "+form+"\n")
		}
	}
	l.before = map[string][]byte{}
	for _, p := range []string{l.remembered, l.audit, l.policy, l.mail, l.config, l.hooks, l.gemini, l.kept} {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		l.before[p] = b
	}
	return l
}

func (l *ownLayout) env() []string {
	return []string{"HOME=" + l.home, "BOUNCER_HOME=" + l.state}
}

func write(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}

// start runs the proxy of server as its wrapped config entry says.
func (l *ownLayout) start(t *testing.T, server string) *e2e.Session {
	t.Helper()
	var cfg map[string]map[string]struct {
		Args []string `json:"args"`
	}
	b, _ := os.ReadFile(l.config)
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	argv := append([]string{e2e.Bouncer(t)}, cfg["mcpServers"][server].Args...)
	return e2e.Start(t, e2e.Server{Name: server, Argv: argv}, e2e.Options{Direct: true, Dir: l.proj, Home: l.state, Env: l.env()})
}

// guarded lists the own files the launcher keeps the server off, from its
// plan on its command line: the own-state list bouncer run passed it. Only
// the namespace form's launcher stays to be read (it is the server's init);
// the other forms' list is the same, relative to the layout.
func guarded(t *testing.T, s *e2e.Session, l *ownLayout, server string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	defer func() {
		if len(out) == 0 {
			for rel := range ownLists[server] {
				out[filepath.Join(l.home, rel)] = true
			}
			return
		}
		rels := map[string]bool{}
		for p := range out {
			if rel, err := filepath.Rel(l.home, p); err == nil {
				rels[rel] = true
			}
		}
		ownLists[server] = rels
	}()
	kids, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", s.Pid()))
	for _, k := range kids {
		b, _ := os.ReadFile(k)
		for _, f := range strings.Fields(string(b)) {
			cmd, _ := os.ReadFile("/proc/" + f + "/cmdline")
			args := strings.Split(string(cmd), "\x00")
			if len(args) < 3 || args[1] != "__sandbox-exec" {
				continue
			}
			raw, err := base64.RawURLEncoding.DecodeString(args[2])
			if err != nil {
				t.Fatal(err)
			}
			var plan struct {
				Own struct {
					Hidden   []string `json:"hidden"`
					ReadOnly []string `json:"read_only"`
				} `json:"own"`
			}
			if err := json.Unmarshal(raw, &plan); err != nil {
				t.Fatal(err)
			}
			for _, p := range append(plan.Own.Hidden, plan.Own.ReadOnly...) {
				out[p] = true
			}
		}
	}
	return out
}

// ownLists is what guarded found for each server, relative to the home
// directory. It starts with what the own-state list must hold (setup's
// OwnPaths): the state directory, both policies the launching config
// names, that config and its client's hook file, and the other config
// init's record names; a run in the namespace form puts what the launcher
// was given in its place.
var ownLists = map[string]map[string]bool{}

func init() {
	for _, server := range []string{"box", "fs", "mail"} {
		ownLists[server] = map[string]bool{".bouncer": true, "proj/bouncer.yaml": true, "proj/mail.yaml": true,
			"proj/.mcp.json": true, "proj/.claude/settings.json": true, "proj/.gemini/settings.json": true}
	}
}

// attack is one try at an own file.
type attack struct {
	name   string
	tool   string
	args   map[string]any
	target string // the file it reads or writes
	read   bool   // it tries to read target (and must not see the secret)
	// argsHold is true when the argument checks alone refuse it today,
	// for a file on the own-state list.
	argsHold bool
}

// split spells s as two Python string literals joined with +.
func split(s string) string {
	i := len(s) / 2
	return strconv.Quote(s[:i]) + "+" + strconv.Quote(s[i:])
}

// quoted breaks every name of p in two with an empty pair of single
// quotes, which the shell removes.
func quoted(p string) string {
	parts := strings.Split(p, "/")
	for i, c := range parts {
		if len(c) > 2 {
			parts[i] = c[:2] + "''" + c[2:]
		}
	}
	return strings.Join(parts, "/")
}

// globbed replaces the second letter of every name of p with ?.
func globbed(p string) string {
	parts := strings.Split(p, "/")
	for i, c := range parts {
		if len(c) > 2 {
			parts[i] = c[:1] + "?" + c[2:]
		}
	}
	return strings.Join(parts, "/")
}

// toolAttacks are the attacks through download_attachment, and with code
// (the builder server's run_command and run_python) through a shell and
// Python too.
func (l *ownLayout) toolAttacks(code bool) []attack {
	sh := func(name, cmd, target string, read, argsHold bool) attack {
		return attack{name, "run_command", map[string]any{"command": cmd}, target, read, argsHold}
	}
	py := func(name, code, target string, read, argsHold bool) attack {
		return attack{name, "run_python", map[string]any{"code": code}, target, read, argsHold}
	}
	forge := `{"version":1,"destinations":[{"server":"mail","destination":"attacker@evil.example","via":"client"}]}`
	var out []attack
	for _, w := range []struct{ name, path string }{
		{"remembered.json", l.remembered}, {"this proxy's policy", l.policy}, {"another proxy's policy", l.mail}, {"the client config", l.config},
		{"the hook file", l.hooks}, {"another client's config", l.gemini}, {"the kept originals", l.kept},
	} {
		rel, _ := filepath.Rel("/var/tmp", w.path)
		download := func(filename string) map[string]any {
			if code { // the builder server's download
				return map[string]any{"savePath": "/var/tmp", "filename": filename, "data": forge}
			}
			return map[string]any{"messageId": "m1", "attachmentId": "a1", "savePath": "/var/tmp", "filename": filename}
		}
		out = append(out,
			attack{"download, savePath and filename joined, to " + w.name, "download_attachment", download(rel), w.path, false, true},
			attack{"download through ../../proc/self/root to " + w.name, "download_attachment", download("../../proc/self/root" + w.path), w.path, false, false},
		)
		if !code {
			continue
		}
		out = append(out,
			sh("shell, quoted, to "+w.name, "echo '"+forge+"' > "+quoted(w.path), w.path, false, false),
			sh("shell, globbed, to "+w.name, "for f in "+globbed(w.path)+"; do echo forged > \"$f\"; done", w.path, false, false),
			py("python, strings joined, to "+w.name, "open("+split(w.path)+",'w').write('forged')", w.path, false, false),
		)
	}
	if !code {
		return out
	}
	for _, r := range []struct{ name, path string }{{"remembered.json", l.remembered}, {"audit.jsonl", l.audit}} {
		out = append(out,
			sh("shell, quoted, read "+r.name, "cat "+quoted(r.path), r.path, true, false),
			sh("shell, globbed, read "+r.name, "cat "+globbed(r.path), r.path, true, false),
			py("python, strings joined, read "+r.name, "print(open("+split(r.path)+").read())", r.path, true, false),
			sh("every /proc/PID/root, read "+r.name, "for p in /proc/[0-9]*; do cat $p/root"+quoted(r.path)+" 2>/dev/null && exit 0; done; exit 1", r.path, true, false),
		)
	}
	// A nested user namespace has every capability in it: can it
	// unmount, or bind the home directory again without what is
	// mounted below it, or make the policy writable?
	out = append(out, py("unshare, then unmount, bind and remount", `
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
libc.unshare(0x10000000 | 0x00020000)
state = `+split(l.state)+`
home = `+split(l.home)+`
pol = `+split(l.policy)+`
libc.umount2(state.encode(), 2)
libc.umount2(pol.encode(), 2)
libc.mount(None, pol.encode(), None, 4096 | 32, None)
os.makedirs('/tmp/x', exist_ok=True)
if libc.mount(home.encode(), b'/tmp/x', None, 4096, None) == 0:
    print(open('/tmp/x/.bouncer/remembered.json').read())
open(pol, 'w').write('forged')
`, l.policy, false, false))
	// Last: moving the project aside and making a new one with a new
	// policy in it, which a bind mount of the file alone would not stop.
	out = append(out, sh("rename an ancestor of the policy", "cd "+quoted(l.home)+" && mv pr''oj old && mkdir pr''oj && echo forged > pr''oj/boun''cer.yaml", l.policy, false, false))
	return out
}

func (l *ownLayout) filesystemAttacks() []attack {
	fs := func(name, tool string, args map[string]any, target string, read bool) attack {
		return attack{name, tool, args, target, read, true}
	}
	return []attack{
		fs("read remembered.json", "read_text_file", map[string]any{"path": l.remembered}, l.remembered, true),
		fs("read audit.jsonl through ..", "read_text_file", map[string]any{"path": l.proj + "/../.bouncer/audit.jsonl"}, l.audit, true),
		fs("read remembered.json through /proc/self/root", "read_text_file", map[string]any{"path": "/proc/self/root" + l.remembered}, l.remembered, true),
		fs("write this proxy's policy", "write_file", map[string]any{"path": l.policy, "content": "forged"}, l.policy, false),
		fs("write another proxy's policy", "write_file", map[string]any{"path": l.mail, "content": "forged"}, l.mail, false),
		fs("write the client config", "write_file", map[string]any{"path": l.config, "content": "{}"}, l.config, false),
		fs("write the hook file", "write_file", map[string]any{"path": l.hooks, "content": "{}"}, l.hooks, false),
		fs("write another client's config", "write_file", map[string]any{"path": l.gemini, "content": "{}"}, l.gemini, false),
		fs("write the kept originals", "write_file", map[string]any{"path": l.kept, "content": "{}"}, l.kept, false),
		fs("edit another proxy's policy", "edit_file", map[string]any{"path": l.mail, "edits": []any{map[string]any{"oldText": "send_email", "newText": "x"}}}, l.mail, false),
		fs("move the project aside", "move_file", map[string]any{"source": l.proj, "destination": l.home + "/old"}, l.policy, false),
	}
}

// run makes each attack through server's proxy and checks what it got.
// In a kernel form every attack must fail on every file the launcher
// guards; with the argument checks alone, those marked argsHold must.
func (l *ownLayout) run(t *testing.T, server string, attacks []attack, form, want string) {
	s := l.start(t, server)
	// The line is written before the handshake is answered; its copy from
	// the pipe may lag behind.
	line := firstLine(s.Stderr(), "bouncer: sandbox:")
	for i := 0; line == "" && i < 100; i++ {
		time.Sleep(20 * time.Millisecond)
		line = firstLine(s.Stderr(), "bouncer: sandbox:")
	}
	if !strings.Contains(line, want) {
		t.Errorf("%s: the start line does not say %q:\n%s", server, want, s.Stderr())
	}
	g := guarded(t, s, l, server)
	t.Logf("%s: guarded by the launcher: %v", server, g)
	for i, a := range attacks {
		args, _ := json.Marshal(a.args)
		r := s.CallTool(100+i, a.tool, string(args))
		changed := false
		if !a.read { // the proxy itself appends to the audit log
			after, err := os.ReadFile(a.target)
			changed = err != nil || !bytes.Equal(after, l.before[a.target])
		}
		leaked := a.read && strings.Contains(r.Text, secret)
		held := !changed && !leaked && (r.IsError || r.Error != nil)
		onList := g[a.target] || g[filepath.Dir(a.target)] // the state directory is guarded whole
		switch {
		case !onList:
			// Every target is Bouncer's own: a list without it is a
			// gap in the own-state list, whatever the form.
			t.Errorf("%s: %s: %s is not on the launcher's list", server, a.name, a.target)
		case form == "arguments" && a.argsHold && !held:
			t.Errorf("%s: %s: the argument checks should refuse it: changed %v, leaked %v: %s", server, a.name, changed, leaked, r.Raw)
		case form == "arguments":
			t.Logf("%s: %s: held %v (%s)", server, a.name, held, short(r.Text))
		case !held:
			t.Errorf("%s: %s: not held: changed %v, leaked %v: %s", server, a.name, changed, leaked, r.Raw)
		}
		if changed {
			// Put it back for the next attack.
			_ = os.MkdirAll(filepath.Dir(a.target), 0o700)
			write(t, a.target, string(l.before[a.target]))
		}
	}
	if err := s.Close(); err != nil {
		t.Errorf("%s: bouncer run: %v", server, err)
	}
	t.Logf("%s: %s", server, line)
}

func firstLine(s, prefix string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}

func TestOwnFilesOutOfReach(t *testing.T) {
	need.Long(t, "starts nine proxies and runs a hundred attacks")
	need.Program(t, "python3", "install Python 3")
	fs := e2e.Filesystem(t)
	for _, tc := range []struct {
		form, line string
	}{
		{"", "own files: mount namespace (state directory hidden, "},
		{"landlock", "own files: landlock around "},
		{"arguments", "own files: argument checks only: own_files: arguments at "},
	} {
		name := tc.form
		if name == "" {
			name = "default"
		}
		t.Run(name, func(t *testing.T) {
			for _, server := range []string{"box", "mail", "fs"} {
				l := newOwnLayout(t, tc.form, fs)
				attacks := l.toolAttacks(server == "mail")
				if server == "fs" {
					attacks = l.filesystemAttacks()
				}
				l.run(t, server, attacks, tc.form, tc.line)
			}
		})
	}
}
