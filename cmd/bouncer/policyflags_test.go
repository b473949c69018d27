package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runArgsPolicy is what init's summary asks: the policy a wrapped entry's
// `bouncer run` arguments put in force, resolved and verified as run
// resolves and verifies them.
func TestRunArgsPolicy(t *testing.T) {
	home, base, wd := t.TempDir(), t.TempDir(), t.TempDir()
	t.Chdir(wd)
	for _, f := range []string{filepath.Join(base, "team.yaml"), filepath.Join(wd, "team.yaml")} {
		if err := os.WriteFile(f, []byte("send_email:\n  exfiltrating: true\n  sink_params: [to]\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name      string
		args      []string
		wantFiles []string
		wantErr   string
	}{
		{"--config: a relative --policy is relative to the config's base", []string{"run", "--home", home, "--config", ".mcp.json", "--server", "mail", "--policy", "team.yaml"},
			[]string{filepath.Join(base, "team.yaml")}, ""},
		{"no --config: relative to the working directory", []string{"run", "--home", home, "--policy", "team.yaml", "--", "mail-server"},
			[]string{"team.yaml"}, ""},
		{"no policy flags: the packs alone", []string{"run", "--home", home, "--config", ".mcp.json", "--server", "mail"}, nil, ""},
		{"a --policy-dir with no set installed stops run", []string{"run", "--home", home, "--config", ".mcp.json", "--server", "mail", "--policy-dir", filepath.Join(home, "policy")},
			nil, "--policy-dir " + filepath.Join(home, "policy") + ": no policy set installed"},
		{"a --trust file that is missing stops run", []string{"run", "--home", home, "--trust", "nope.yaml", "--config", ".mcp.json", "--server", "mail"},
			nil, "nope.yaml: "},
		{"not bouncer run", []string{"serve", "--policy", "team.yaml"}, nil, "not a bouncer run command"},
		{"a flag run does not take", []string{"run", "--polcy", "team.yaml"}, nil, "polcy"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in, err := runArgsPolicy(c.args, base)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(in.Files, " ") != strings.Join(c.wantFiles, " ") {
				t.Fatalf("files %q, want %q", in.Files, c.wantFiles)
			}
		})
	}

	// The user's trust file requires signed policy: the summary says run
	// will refuse the entry, as run would.
	writeKey(t, home, "team")
	writeTestFile(t, filepath.Join(home, "trust.yaml"), "require_signed: true\nkeys: [team.pub]\n")
	_, err := runArgsPolicy([]string{"run", "--home", home, "--config", ".mcp.json", "--server", "mail", "--policy", "team.yaml"}, base)
	if err == nil || !strings.Contains(err.Error(), filepath.Join(base, "team.yaml")+": not signed") {
		t.Fatalf("an unsigned file under require_signed: %v", err)
	}
}
