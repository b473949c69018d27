package suggest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bouncer-mcp/bouncer/internal/audit"
	"github.com/bouncer-mcp/bouncer/internal/fsresolve"
	"github.com/bouncer-mcp/bouncer/internal/policy"
)

var t0 = time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)

func line(min int, session, id, server, tool, verdict, rule string, args string, dests ...string) audit.Entry {
	e := audit.Entry{TS: t0.Add(time.Duration(min) * time.Minute), Session: session, ID: json.RawMessage(id), Server: server,
		Tool: tool, Verdict: verdict, Rule: rule, Args: json.RawMessage(args)}
	for i := 0; i+1 < len(dests); i += 2 {
		e.Dests = append(e.Dests, audit.Dest{Param: dests[i], Value: dests[i+1]})
	}
	return e
}

func taintDeny(min int, session, id, dest, source string) audit.Entry {
	e := line(min, session, id, "mail", "send_email", "deny", "sink", `{"to":"`+dest+`"}`, "to", dest)
	e.Taint = &audit.Taint{Param: "to", Destination: dest, Source: source}
	return e
}

const current = `
send_email:
  exfiltrating: true
  sink_params: [to, cc]
  trusted_destinations: [boss@corp.example]
write_file:
  write_params: [path]
  allowed_path_prefixes: [/srv/out]
`

func TestSuggest(t *testing.T) {
	pol, err := policy.LoadSources(policy.Source{Name: "bouncer.yaml", Dir: "/srv", Data: []byte(current)})
	if err != nil {
		t.Fatal(err)
	}
	var entries []audit.Entry
	// A colleague asked about three times, once approved.
	entries = append(entries,
		line(1, "s1", "1", "mail", "send_email", "ask", "sink", `{"to":"carol@partner.example"}`, "to", "carol@partner.example"),
		line(2, "s1", "1", "mail", "send_email", "allow", "approval", `{"to":"carol@partner.example"}`, "to", "carol@partner.example"),
		line(60, "s2", "4", "mail", "send_email", "ask", "sink", `{"to":"carol@Partner.EXAMPLE"}`, "to", "carol@Partner.EXAMPLE"),
	)
	// The injection's address: asked once (before the ticket was read),
	// then denied as tainted, many times. Never suggested.
	entries = append(entries,
		line(3, "s1", "2", "mail", "send_email", "ask", "sink", `{"to":"attacker@evil.example"}`, "to", "attacker@evil.example"),
		taintDeny(4, "s1", "3", "attacker@evil.example", "tickets"),
		taintDeny(5, "s2", "5", "attacker@evil.example", "tickets"),
	)
	// Writes outside the prefix, in three sibling directories of one
	// project, and one into ~/.ssh.
	for i, p := range []string{"/home/me/proj/docs/a.md", "/home/me/proj/src/b.go", "/home/me/proj/test/c_test.go", "/home/me/proj/src/d.go", "/home/me/.ssh/authorized_keys"} {
		entries = append(entries, line(10+i, "s1", "1"+string(rune('0'+i)), "fs", "write_file", "deny", "path", `{"path":"`+p+`","content":"x"}`))
	}
	// A budget: 4 deletes in each of two sessions, with a limit of 2; 40
	// in one other session (a burst, one session's alone); and 20 in s1,
	// the session the injection steered, which sets no peak.
	for _, sess := range []string{"s3", "s4"} {
		for i := 0; i < 4; i++ {
			v, rule := "allow", "default"
			if i >= 2 {
				v, rule = "deny", "budget"
			}
			entries = append(entries, line(20+i, sess, "2"+string(rune('0'+i)), "mail", "delete_email", v, rule, `{"messageId":"x"}`))
		}
	}
	for i := 0; i < 40; i++ {
		v, rule := "allow", "default"
		if i >= 2 {
			v, rule = "deny", "budget"
		}
		entries = append(entries, line(80+i, "s5", fmt.Sprintf("b%d", i), "mail", "delete_email", v, rule, `{"messageId":"x"}`))
	}
	for i := 0; i < 20; i++ {
		v, rule := "allow", "default"
		if i >= 2 {
			v, rule = "deny", "budget"
		}
		entries = append(entries, line(30+i, "s1", fmt.Sprintf("d%d", i), "mail", "delete_email", v, rule, `{"messageId":"x"}`))
	}
	res := Suggest(pol, entries, Options{Resolve: fsresolve.Existing})
	var out strings.Builder
	if err := res.WriteYAML(&out, "2026-11-02"); err != nil {
		t.Fatal(err)
	}
	y := out.String()
	for _, want := range []string{
		`- "boss@corp.example"`,
		`- "carol@partner.example"  # to=carol@partner.example: approved by a human, never in untrusted output; seen 3× on mail`,
		`changes 2 ask`,
		`# NOT suggested: attacker@evil.example appeared in the output of server tickets`,
		`- "/srv/out"`,
		`- "/home/me/proj"  # admits /home/me/proj/docs/a.md, /home/me/proj/src/b.go, /home/me/proj/src/d.go, and 1 more`,
		`# NOT suggested: /home/me/.ssh/authorized_keys: a hidden file or directory`,
		`max_calls: 6  # was 2; at most 4 calls in each of two sessions (20 in a session untrusted output steered, not counted) (40 in one session alone, not counted: one burst is no need)`,
	} {
		if !strings.Contains(y, want) {
			t.Errorf("suggestion lacks %q:\n%s", want, y)
		}
	}
	if strings.Contains(y, `- "attacker@evil.example"`) {
		t.Fatalf("a tainted destination was suggested:\n%s", y)
	}
	// It loads beside the current policy, and changes the verdicts.
	next, err := policy.LoadSources(policy.Source{Name: "bouncer.yaml", Dir: "/srv", Data: []byte(current)},
		policy.Source{Name: "suggested.yaml", Dir: "/srv", Data: []byte(y)})
	if err != nil {
		t.Fatalf("the suggestion does not load: %v\n%s", err, y)
	}
	se, _ := next.Lookup("send_email")
	if len(se.TrustedDestinations) != 2 || !se.Exfiltrating || len(se.SinkParams) != 2 {
		t.Fatalf("send_email restated as %+v", se)
	}
	wf, _ := next.Lookup("write_file")
	if len(wf.AllowedPathPrefixes) != 2 || wf.AllowedPathPrefixes[1] != "/home/me/proj" {
		t.Fatalf("write_file prefixes %v", wf.AllowedPathPrefixes)
	}
	de, _ := next.Lookup("delete_email")
	if de.MaxCalls == nil || *de.MaxCalls != 6 {
		t.Fatalf("delete_email budget %v", de.MaxCalls)
	}
}

// An attacker that re-spells its address so that a call is only asked
// about (punycode, a trailing dot, a quoted local part, another case) is
// still the address the log saw tainted, in any session: never suggested.
func TestSuggestRespelled(t *testing.T) {
	pol, err := policy.LoadSources(policy.Source{Name: "bouncer.yaml", Dir: "/srv", Data: []byte(current)})
	if err != nil {
		t.Fatal(err)
	}
	entries := []audit.Entry{
		taintDeny(1, "s1", "1", "mallory@bücher.example", "tickets"),
		taintDeny(2, "s1", "2", "ops@evil.example", "tickets"),
	}
	for i, d := range []string{"mallory@xn--bcher-kva.example", "ops@evil.example.", `"ops"@evil.example`, "OPS@Evil.Example", "mallory@BÜCHER.example"} {
		for j := 0; j < 3; j++ {
			entries = append(entries,
				line(10+i*3+j, "s2", fmt.Sprintf("%d-%d", i, j), "mail", "send_email", "ask", "sink", `{"to":`+strconv.Quote(d)+`}`, "to", d),
				line(10+i*3+j, "s2", fmt.Sprintf("%d-%d", i, j), "mail", "send_email", "allow", "approval", `{"to":`+strconv.Quote(d)+`}`, "to", d))
		}
	}
	res := Suggest(pol, entries, Options{})
	for _, tool := range res.Tools {
		if len(tool.Destinations) > 0 {
			t.Errorf("%s: suggested %+v", tool.Name, tool.Destinations)
		}
	}
	var out strings.Builder
	if err := res.WriteYAML(&out, "2026-11-02"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "NOT suggested: mallory@") || !strings.Contains(out.String(), "NOT suggested: ops@evil.example.") {
		t.Errorf("the re-spelled address is not listed as refused:\n%s", out.String())
	}
}

// A prefix that is, or passes through, a symlink is never suggested.
func TestSuggestSymlinkPrefix(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	proj := filepath.Join(root, "home", "me", "proj")
	os.MkdirAll(filepath.Join(proj, "real"), 0o700)
	os.MkdirAll(filepath.Join(root, "elsewhere"), 0o700)
	if err := os.Symlink(filepath.Join(root, "elsewhere"), filepath.Join(proj, "out")); err != nil {
		t.Fatal(err)
	}
	pol, err := policy.LoadSources(policy.Source{Name: "bouncer.yaml", Dir: "/srv", Data: []byte(current)})
	if err != nil {
		t.Fatal(err)
	}
	var entries []audit.Entry
	for i, p := range []string{proj + "/out/a.txt", proj + "/out/b.txt", proj + "/real/c.txt"} {
		entries = append(entries, line(i, "s1", fmt.Sprint(i), "fs", "write_file", "deny", "path", `{"path":`+strconv.Quote(p)+`}`))
	}
	res := Suggest(pol, entries, Options{Resolve: fsresolve.Existing})
	var got []string
	var unplaced string
	for _, tool := range res.Tools {
		for _, p := range tool.Prefixes {
			got = append(got, p.Prefix)
		}
		unplaced += strings.Join(tool.Unplaced, "\n")
	}
	if len(got) != 1 || got[0] != proj+"/real" {
		t.Errorf("prefixes %v, want only %s", got, proj+"/real")
	}
	if !strings.Contains(unplaced, proj+"/out: passes through a symlink") {
		t.Errorf("the symlinked prefix is not listed as refused: %q", unplaced)
	}
}

func TestGroupPaths(t *testing.T) {
	uses := func(ps ...string) []pathUse {
		var out []pathUse
		for _, p := range ps {
			out = append(out, pathUse{path: p, entry: audit.Entry{TS: t0, Verdict: "deny"}})
		}
		return out
	}
	for _, c := range []struct {
		in       []string
		prefixes []string
		unplaced int
		homes    []string
	}{
		{[]string{"/home/me/proj/a/x", "/home/me/proj/a/y"}, []string{"/home/me/proj/a"}, 0, nil},
		{[]string{"/home/me/x.txt"}, []string{"/home/me/x.txt"}, 0, nil}, // never a whole home
		{[]string{"/tmp/x"}, []string{"/tmp/x"}, 0, nil},                 // never a top-level directory
		{[]string{"/home/me/a/1", "/home/me/b/2", "/home/me/c/3"}, []string{"/home/me/a", "/home/me/b", "/home/me/c"}, 0, nil},
		{[]string{"/etc/passwd", "rel/x", "/home/me/.bashrc", "/home/me/p/.git/hooks/pre-commit"}, nil, 4, nil},
		{[]string{"/w/p/a/1", "/w/p/a/b/2"}, []string{"/w/p/a"}, 0, nil},
		// A write to the root itself is not suggested: as a prefix "/"
		// admits every path (the engine reads it so), and it must not
		// swallow the other prefixes either.
		{[]string{"/", "/w/p/a/1"}, []string{"/w/p/a"}, 1, nil},
		{[]string{"/etcx/a/1", "/etc/x"}, []string{"/etcx/a"}, 1, nil}, // /etc by component, not /etcx
		// A home that is not /home/USER, as the caller names it: never
		// the whole home, nor a directory that holds it.
		{[]string{"/export/home/me/x.txt"}, []string{"/export/home/me/x.txt"}, 0, []string{"/export/home/me"}},
		{[]string{"/export/home/me/a/1", "/export/home/me/b/2", "/export/home/me/c/3"}, []string{"/export/home/me/a", "/export/home/me/b", "/export/home/me/c"}, 0, []string{"/export/home/me"}},
		{[]string{"/export/home/a/1", "/export/home/b/2", "/export/home/c/3"}, []string{"/export/home/a", "/export/home/b", "/export/home/c"}, 0, []string{"/export/home/me"}},
		{[]string{"/export/home/me/proj/x"}, []string{"/export/home/me/proj"}, 0, []string{"/export/home/me"}},
	} {
		ps, un := groupPaths(uses(c.in...), nil, c.homes, nil)
		var got []string
		for _, p := range ps {
			got = append(got, p.Prefix)
		}
		if strings.Join(got, " ") != strings.Join(c.prefixes, " ") || len(un) != c.unplaced {
			t.Errorf("groupPaths(%v) = %v, unplaced %v; want %v and %d", c.in, got, un, c.prefixes, c.unplaced)
		}
	}
}

// policy suggest proposes a destination only on positive evidence that it
// is the user's, never one a human declined, and compares canonical forms,
// a trailing dot included.
func TestSuggestNeedsPositiveEvidence(t *testing.T) {
	const pol = `
send_email:
  exfiltrating: true
  sink_params: [to]
post_webhook:
  exfiltrating: true
  sink_params: [url]
share_doc:
  exfiltrating: true
  sink_params: [with]
  trusted_destinations: [dana@corp.example]
`
	p, err := policy.LoadSources(policy.Source{Name: "bouncer.yaml", Dir: "/srv", Data: []byte(pol)})
	if err != nil {
		t.Fatal(err)
	}
	vouched := func(e audit.Entry, way string) audit.Entry {
		for i := range e.Dests {
			e.Dests[i].Vouch = way
		}
		return e
	}
	declined := line(9, "s2", "9", "mail", "send_email", "deny", "approval", `{"to":"erin@corp.example"}`)
	declined.Reason = "destination to='erin@corp.example' is not a vouched recipient" + audit.DeclinedSuffix
	entries := []audit.Entry{
		// Asked, never tainted, never vouched: planted in an earlier
		// session, say. No evidence.
		line(1, "s1", "1", "mail", "send_email", "ask", "sink", `{"to":"planted@elsewhere.example"}`, "to", "planted@elsewhere.example"),
		// Asked here; the user typed it in another session.
		line(2, "s1", "2", "mail", "send_email", "ask", "sink", `{"to":"bob@corp.example"}`, "to", "bob@corp.example"),
		vouched(line(3, "s2", "3", "mail", "send_email", "allow", "sink", `{"to":"Bob@corp.example"}`, "to", "Bob@corp.example"), "prompt"),
		// Asked here; the policy allowlists it for share_doc.
		line(4, "s1", "4", "mail", "send_email", "ask", "sink", `{"to":"dana@corp.example"}`, "to", "dana@corp.example"),
		// Approved once, declined once: never.
		line(5, "s1", "5", "mail", "send_email", "ask", "sink", `{"to":"erin@corp.example"}`, "to", "erin@corp.example"),
		line(6, "s1", "5", "mail", "send_email", "allow", "approval", `{"to":"erin@corp.example"}`, "to", "erin@corp.example"),
		line(8, "s2", "9", "mail", "send_email", "ask", "sink", `{"to":"erin@corp.example"}`, "to", "erin@corp.example"),
		declined,
		// A hook approved, and its trailing-dot spelling asked: one is
		// evidence, the other is another canonical form.
		line(10, "s3", "10", "web", "post_webhook", "ask", "sink", `{"url":"https://hooks.example/h"}`, "url", "https://hooks.example/h"),
		line(11, "s3", "10", "web", "post_webhook", "allow", "approval", `{"url":"https://hooks.example/h"}`, "url", "https://hooks.example/h"),
		line(12, "s3", "11", "web", "post_webhook", "ask", "sink", `{"url":"https://hooks.example./h"}`, "url", "https://hooks.example./h"),
		// A tainted hook's trailing-dot spelling, asked and approved:
		// refused.
		{TS: t0.Add(13 * time.Minute), Session: "s3", ID: json.RawMessage("12"), Server: "web", Tool: "post_webhook", Verdict: "deny", Rule: "sink",
			Taint: &audit.Taint{Param: "url", Destination: "https://evil.example/hook", Source: "tickets"}},
		line(14, "s3", "13", "web", "post_webhook", "ask", "sink", `{"url":"https://evil.example./hook"}`, "url", "https://evil.example./hook"),
		line(15, "s3", "13", "web", "post_webhook", "allow", "approval", `{"url":"https://evil.example./hook"}`, "url", "https://evil.example./hook"),
	}
	res := Suggest(p, entries, Options{})
	got := map[string]string{}
	for _, tool := range res.Tools {
		for _, d := range tool.Destinations {
			got[d.Destination] = d.Why
		}
	}
	want := map[string]string{"bob@corp.example": "prompt", "dana@corp.example": "allowlist", "https://hooks.example/h": "approval"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("suggested %v, want %v", got, want)
	}
	var out strings.Builder
	if err := res.WriteYAML(&out, "p"); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{
		"NOT suggested: to=planted@elsewhere.example: asked about, but the log holds no evidence",
		"NOT suggested: to=erin@corp.example: a human declined it",
		"NOT suggested: url=https://hooks.example./h: asked about",
		"NOT suggested: https://evil.example./hook appeared in the output of server tickets",
		`- "bob@corp.example"  # to=bob@corp.example: typed by the user, never in untrusted output`,
	} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("suggestion lacks %q:\n%s", w, out.String())
		}
	}
}

// A suggested prefix never holds Bouncer's own files: writes beside the
// policy file and the client config init carved out are suggested as the
// files themselves.
func TestSuggestKeepsOwnFilesOut(t *testing.T) {
	p, err := policy.LoadSources(policy.Source{Name: "bouncer.yaml", Dir: "/srv", Data: []byte(current)})
	if err != nil {
		t.Fatal(err)
	}
	var entries []audit.Entry
	for i, path := range []string{"/home/me/proj/README.md", "/home/me/proj/notes.md", "/home/me/proj/bouncer.yaml", "/home/me/proj/docs/a.md"} {
		entries = append(entries, line(i, "s1", fmt.Sprint(i), "fs", "write_file", "deny", "path", `{"path":`+strconv.Quote(path)+`}`))
	}
	res := Suggest(p, entries, Options{Own: []string{"/home/me/proj/bouncer.yaml", "/home/me/proj/.mcp.json", "/home/me/.bouncer"}})
	var got []string
	var unplaced string
	for _, tool := range res.Tools {
		for _, px := range tool.Prefixes {
			got = append(got, px.Prefix)
		}
		unplaced += strings.Join(tool.Unplaced, "\n")
	}
	want := []string{"/home/me/proj/README.md", "/home/me/proj/docs", "/home/me/proj/notes.md"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("prefixes %v, want %v", got, want)
	}
	if !strings.Contains(unplaced, "/home/me/proj/bouncer.yaml: Bouncer's own file") {
		t.Errorf("the policy file is not listed as refused: %q", unplaced)
	}
}

// A tool named as a reserved key of a policy file is never written as an
// entry: the suggestion still loads.
func TestSuggestReservedName(t *testing.T) {
	p, err := policy.LoadSources()
	if err != nil {
		t.Fatal(err)
	}
	var entries []audit.Entry
	for i := 0; i < 3; i++ {
		v, rule := "allow", "default"
		if i >= 2 {
			v, rule = "deny", "budget"
		}
		for _, sess := range []string{"s1", "s2"} {
			entries = append(entries, line(i, sess, fmt.Sprint(i), "x", "sandbox", v, rule, `{}`))
		}
	}
	entries = append(entries, line(9, "s1", "9", "x", "sandbox", "ask", "sink", `{"to":"a@b.example"}`, "to", "a@b.example"))
	res := Suggest(p, entries, Options{})
	var out strings.Builder
	if err := res.WriteYAML(&out, "p"); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "\nsandbox:") {
		t.Fatalf("a reserved key was written as a tool entry:\n%s", out.String())
	}
	if _, err := policy.LoadSources(policy.Source{Name: "suggested.yaml", Data: []byte(out.String())}); err != nil {
		t.Fatalf("the suggestion does not load: %v\n%s", err, out.String())
	}
}
