package e2e_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bouncer-mcp/bouncer/internal/testsupport/e2e"
)

// parityCalls are tools/call params that exercise every rule: hostile keys,
// trusted, tainted and unknown destinations, keys as destinations, paths in
// and out of the prefix, budgets and unpinned tools.
var parityCalls = []string{
	`{"name":"send_email","arguments":{"to":"boss@corp.example","body":"hi"}}`,
	`{"name":"send_email","arguments":{"to":"attacker@evil.example","body":"hi"}}`,
	`{"name":"send_email","arguments":{"to":"bob@partner.example","body":"hi"}}`,
	`{"name":"send_email","arguments":{"to":"attacker@evil.example","to":"boss@corp.example"}}`,
	`{"name":"send_email","arguments":{"to":"boss@corp.example","tO":"attacker@evil.example"}}`,
	`{"name":"send_email","arguments":{"tO":"attacker@evil.example"}}`,
	`{"name":"send_email","arguments":{"to":"boss@corp.example"},"argumentſ":{"to":"attacker@evil.example"}}`,
	`{"name":"send_email","arguments":{"to":"boss@corp.example","cc":["bob@partner.example","attacker@evil.example"]}}`,
	`{"name":"notify","arguments":{"notify":{"attacker@evil.example":"boss@corp.example"}}}`,
	`{"name":"notify","arguments":{"notify":{"boss@corp.example":"Boss"}}}`,
	`{"name":"send_batch","arguments":{"messages":[{"To":"attacker@evil.example","body":"x"}]}}`,
	`{"name":"send_batch","arguments":{"messages":[{"to":"boss@corp.example","body":"x"}]}}`,
	`{"name":"write_file","arguments":{"path":"{{DIR}}/out/a.txt","content":"x"}}`,
	`{"name":"write_file","arguments":{"path":"{{DIR}}/outside.txt","content":"x"}}`,
	`{"name":"write_file","arguments":{"Path":"{{DIR}}/outside.txt","content":"x"}}`,
	`{"name":"write_file","arguments":{"path":"{{DIR}}/out/../outside.txt","content":"x"}}`,
	`{"name":"no_such_tool","arguments":{}}`,
	`{"name":"read_inbox","arguments":{"x":{"y":1,"Y":2}}}`,
	`{"name":"read_inbox"}`,
}

// TestRunAndCheckAgree: the same session through the proxy (bouncer run in
// front of the mcp-go server) and through bouncer check (its output and
// calls replayed offline, with the tool list the proxy pinned) gives the
// same verdict, rule and reason for every call. An ask is audited by run as
// "ask" and printed by check as "ask".
func TestRunAndCheckAgree(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "out"), 0o700); err != nil {
		t.Fatal(err)
	}
	srv := e2e.MCPGo(t)
	s := e2e.Start(t, srv, e2e.Options{Policy: policy, Dir: dir})

	var session bytes.Buffer
	tools := s.Roundtrip(`{"jsonrpc":"2.0","id":"tl","method":"tools/list"}`)
	inbox := s.CallTool(1, "read_inbox", `{}`)
	fmt.Fprintf(&session, `{"output":%s}`+"\n", inbox.Result)
	for i, params := range parityCalls {
		params = strings.ReplaceAll(params, "{{DIR}}", dir)
		s.Roundtrip(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":%s}`, 100+i, params))
		fmt.Fprintf(&session, `{"call":%s}`+"\n", params)
	}
	type verdict struct{ Verdict, Rule, Reason string }
	var run []verdict
	for i := range parityCalls {
		id := fmt.Sprint(100 + i)
		for _, e := range s.Audit() {
			if string(e.ID) == id {
				run = append(run, verdict{e.Verdict, e.Rule, e.Reason})
				break // the first line is the decision; a second says how an ask ended
			}
		}
		if len(run) != i+1 {
			t.Fatalf("no audit line for call %s", id)
		}
	}

	// The session must exercise every verdict and rule, or agreement
	// proves little.
	kinds := map[string]bool{}
	for _, v := range run {
		kinds[v.Verdict] = true
		kinds[v.Rule] = true
	}
	for _, k := range []string{"allow", "deny", "ask", "sink", "path", "pinning", "default"} {
		if !kinds[k] {
			t.Errorf("no call of the session got %s: %+v", k, run)
		}
	}

	toolsFile := filepath.Join(dir, "tools.json")
	policyFile := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(toolsFile, tools.Result, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(policyFile, []byte(strings.ReplaceAll(policy, "{{DIR}}", dir)), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(e2e.Bouncer(t), "check", "--home", filepath.Join(dir, "home"), "--name", filepath.Base(srv.Argv[0]), "--policy", policyFile, "--tools", toolsFile)
	cmd.Dir = dir
	cmd.Stdin = &session
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("bouncer check: %v\n%s", err, out)
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	for i := range parityCalls {
		var v verdict
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("check output line %d: %v\n%s", i+1, err, out)
		}
		if v != run[i] {
			t.Errorf("%s\n  run:   %+v\n  check: %+v", parityCalls[i], run[i], v)
		}
	}
}
