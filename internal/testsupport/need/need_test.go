package need

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// childEnv names, in a re-executed test binary, the case TestChild runs.
const childEnv = "NEED_TEST_CHILD"

// TestChild is the test a case re-executes this binary to run, so that
// the skip or failure is the testing package's own; it passes when not
// re-executed.
func TestChild(t *testing.T) {
	dir := t.TempDir()
	switch os.Getenv(childEnv) {
	case "program":
		t.Logf("found %s", Program(t, "sh", "install a shell"))
		Program(t, "bouncer-no-such-program", "go install example.com/nope@v1")
	case "program-also":
		exe := filepath.Join(dir, "daemond")
		if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		t.Logf("found %s", Program(t, "daemond", "apt-get install daemon", filepath.Join(dir, "other"), exe))
	case "file":
		File(t, filepath.Join(dir, "node_modules", "x.js"), "the x package", "run npm ci in y")
	case "npm":
		NPM(t, "@scope/no-such-package/index.js")
	case "skip":
		Skip(t, "the file system normalizes names")
	case "long":
		Long(t, "builds two binaries")
	}
}

func TestHelpers(t *testing.T) {
	tests := []struct {
		name, child string
		ci          bool
		short       bool
		want        []string // in the child's -v output
	}{
		{name: "a missing program skips here", child: "program",
			want: []string{"found /", "bouncer-no-such-program is missing: go install example.com/nope@v1 (.ci/test installs or checks everything the tests need)", "--- SKIP: TestChild"}},
		{name: "a missing program fails under CI", child: "program", ci: true,
			want: []string{"bouncer-no-such-program is missing: go install example.com/nope@v1", "under CI this is a failure, not a skip", "--- FAIL: TestChild"}},
		{name: "a program off PATH at a path given", child: "program-also", ci: true,
			want: []string{"found /", "daemond", "--- PASS: TestChild"}},
		{name: "a missing file names itself and how to get it", child: "file",
			want: []string{"the x package (/", "x.js) is missing: run npm ci in y", "--- SKIP: TestChild"}},
		{name: "the npm servers are found from the module root", child: "npm", ci: true,
			want: []string{"the npm reference servers (", filepath.Join("testdata", "npm", "node_modules", "@scope", "no-such-package", "index.js") + ") is missing: run npm ci in testdata/npm", "--- FAIL: TestChild"}},
		{name: "Skip skips under CI too", child: "skip", ci: true,
			want: []string{"the file system normalizes names", "--- SKIP: TestChild"}},
		{name: "Long runs without -short", child: "long", ci: true,
			want: []string{"--- PASS: TestChild"}},
		{name: "Long skips under -short", child: "long", short: true,
			want: []string{"-short: builds two binaries", "--- SKIP: TestChild"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"-test.run=^TestChild$", "-test.v"}
			if tc.short {
				args = append(args, "-test.short")
			}
			cmd := exec.Command(os.Args[0], args...)
			env := []string{childEnv + "=" + tc.child}
			for _, kv := range os.Environ() {
				if !strings.HasPrefix(kv, "CI=") {
					env = append(env, kv)
				}
			}
			if tc.ci {
				env = append(env, "CI=true")
			}
			cmd.Env = env
			out, _ := cmd.CombinedOutput()
			rest := string(out)
			for _, w := range tc.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("output lacks %q (in order):\n%s", w, out)
				}
				rest = rest[i+len(w):]
			}
		})
	}
}

func TestAbsent(t *testing.T) {
	tests := []struct {
		name, prog string
		ci         bool
		absent     bool
		err        string
	}{
		{name: "on PATH", prog: "sh", ci: true},
		{name: "missing here", prog: "bouncer-no-such-program", absent: true},
		{name: "missing under CI", prog: "bouncer-no-such-program", ci: true, absent: true,
			err: "bouncer-no-such-program is missing: go install x (.ci/test installs or checks everything the tests need); under CI this is a failure, not a skip"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ci := ""
			if tc.ci {
				ci = "1"
			}
			t.Setenv("CI", ci)
			absent, err := Absent(tc.prog, "go install x")
			if absent != tc.absent || (err == nil) != (tc.err == "") || (err != nil && err.Error() != tc.err) {
				t.Fatalf("Absent = %v, %v; want %v, %q", absent, err, tc.absent, tc.err)
			}
		})
	}
}

func TestFileAbsent(t *testing.T) {
	dir := t.TempDir()
	here := filepath.Join(dir, "index.js")
	if err := os.WriteFile(here, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	gone := filepath.Join(dir, "node_modules", "x.js")
	tests := []struct {
		name, path string
		ci         bool
		absent     bool
		err        string
	}{
		{name: "there", path: here, ci: true},
		{name: "missing here", path: gone, absent: true},
		{name: "missing under CI", path: gone, ci: true, absent: true,
			err: "the x package (" + gone + ") is missing: run npm ci in y (.ci/test installs or checks everything the tests need); under CI this is a failure, not a skip"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ci := ""
			if tc.ci {
				ci = "1"
			}
			t.Setenv("CI", ci)
			absent, err := FileAbsent(tc.path, "the x package", "run npm ci in y")
			if absent != tc.absent || (err == nil) != (tc.err == "") || (err != nil && err.Error() != tc.err) {
				t.Fatalf("FileAbsent = %v, %v; want %v, %q", absent, err, tc.absent, tc.err)
			}
		})
	}
}
