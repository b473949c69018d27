package oauth

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/bouncer-mcp/bouncer/internal/testsupport/need"
)

// TestConformance runs the official MCP conformance suite
// (@modelcontextprotocol/conformance, pinned in testdata/conformance) in
// client mode, for every auth scenario of a spec version: the suite
// starts its MCP server and authorization server on loopback, then this
// test binary as the client (BOUNCER_OAUTH_ROLE=client: the go-sdk's
// streamable transport over RoundTripper), whose browser is the scripted
// user (BOUNCER_OAUTH_ROLE=browser, through $BROWSER and OpenBrowser).
// Every check the suite records must pass.
//
// The suite's extension scenarios (client credentials, enterprise-managed
// authorization, DPoP, workload identity) are grants a person at a
// browser does not use; they are not run (the go-sdk lists the same
// ones as not implemented in its conformance baseline).
func TestConformance(t *testing.T) {
	need.Long(t, "runs the conformance suite")
	dir, _ := filepath.Abs("testdata/conformance")
	index := need.File(t, filepath.Join(dir, "node_modules/@modelcontextprotocol/conformance/dist/index.js"),
		"the MCP conformance suite", "run npm ci in internal/oauth/testdata/conformance")
	node := need.Node(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	record := filepath.Join(tmp, "opened")
	client := writeScript(t, tmp, "client", "BOUNCER_OAUTH_ROLE=client exec '"+self+"' \"$@\"")
	browser := writeScript(t, tmp, "browser", "BOUNCER_OAUTH_ROLE=browser exec '"+self+"' \"$@\"")

	suite := func(ctx context.Context, args ...string) *exec.Cmd {
		cmd := exec.CommandContext(ctx, node, append([]string{"--import", "./register.mjs", index}, args...)...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "BROWSER="+browser, "BOUNCER_OAUTH_BROWSER_RECORD="+record, "NO_COLOR=1")
		return cmd
	}
	out, err := suite(context.Background(), "list", "--client").CombinedOutput()
	if err != nil {
		t.Fatalf("conformance list: %v\n%s", err, out)
	}
	var scenarios []string
	for _, m := range regexp.MustCompile(`(?m)^\s*- (auth/\S+) \[([^\]]*)\]`).FindAllStringSubmatch(string(out), -1) {
		if m[2] == "extension" {
			continue
		}
		scenarios = append(scenarios, m[1])
	}
	if len(scenarios) < 20 {
		t.Fatalf("only %d auth scenarios listed:\n%s", len(scenarios), out)
	}
	t.Run("auth", func(t *testing.T) {
		for _, sc := range scenarios {
			t.Run(strings.TrimPrefix(sc, "auth/"), func(t *testing.T) {
				t.Parallel()
				results := t.TempDir()
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				defer cancel()
				cmd := suite(ctx, "client", "--command", client, "--scenario", sc, "-o", results, "--timeout", "60000")
				var buf bytes.Buffer
				cmd.Stdout, cmd.Stderr = &buf, &buf
				runErr := cmd.Run()
				files, _ := filepath.Glob(filepath.Join(results, "*", "*", "checks.json"))
				if len(files) != 1 {
					t.Fatalf("no checks.json (%v):\n%s", runErr, buf.String())
				}
				data, err := os.ReadFile(files[0])
				if err != nil {
					t.Fatal(err)
				}
				var checks []struct {
					ID, Status, Description, ErrorMessage string
				}
				if err := json.Unmarshal(data, &checks); err != nil {
					t.Fatal(err)
				}
				passed := 0
				for _, c := range checks {
					switch c.Status {
					case "SUCCESS":
						passed++
					case "FAILURE":
						t.Errorf("%s: %s %s", c.ID, c.Description, c.ErrorMessage)
					case "WARNING":
						t.Logf("warning: %s: %s %s", c.ID, c.Description, c.ErrorMessage)
					}
				}
				if passed == 0 {
					t.Errorf("no check passed")
				}
				if t.Failed() {
					stderr, _ := filepath.Glob(filepath.Join(filepath.Dir(files[0]), "stderr.txt"))
					for _, f := range stderr {
						b, _ := os.ReadFile(f)
						t.Logf("client stderr:\n%s", b)
					}
				}
				// No stderr line of the client holds the tokens the suite's
				// authorization server issues ("test-token-…", "cc-token-…").
				if logs, _ := filepath.Glob(filepath.Join(filepath.Dir(files[0]), "std*.txt")); len(logs) > 0 {
					for _, f := range logs {
						b, _ := os.ReadFile(f)
						if regexp.MustCompile(`test-token|cc-token|test-secret|test-refresh`).Match(b) {
							t.Errorf("%s holds a token or secret:\n%s", filepath.Base(f), b)
						}
					}
				}
			})
		}
	})
	// The browser was opened with the authorization URL each time.
	opened, _ := os.ReadFile(record)
	if n := strings.Count(string(opened), "/authorize?"); n < len(scenarios)/2 {
		t.Errorf("the browser was opened %d times for %d scenarios:\n%s", n, len(scenarios), opened)
	}
}

func writeScript(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	return p
}
