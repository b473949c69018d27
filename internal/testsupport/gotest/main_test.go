package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// gotest runs the command on the fixture module (testdata/fixture: real
// go test runs of real tests that pass, skip and fail) and returns its exit
// code and what it printed.
func gotest(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("testdata", "fixture"))
	if err != nil {
		t.Fatal(err)
	}
	var out, errOut strings.Builder
	code := run(dir, append([]string{"-count=1"}, args...), &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestRun(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		code     int
		want     []string // in stdout, in order
		wantErr  []string // in stderr
		dontWant []string // in stdout
	}{
		{
			name: "listed skips pass, and each is shown with its reason",
			args: []string{"-run", "^(TestPass|TestSkipListed|TestSubtests|FuzzSeed)$", "./ok"},
			code: 0,
			want: []string{"ok  \texample.com/fixture/ok", "skipped: 3",
				"allowed by .ci/allowed-skips:2  ok TestSkipListed: ok_test.go:8: the widget is missing",
				"allowed by .ci/allowed-skips:3  ok TestSubtests/a: ok_test.go:13: not on this platform",
				"allowed by .ci/allowed-skips:4  ok FuzzSeed/seed#0: ok_test.go:24: outside",
			},
			dontWant: []string{"NOT ALLOWED", "PASS\n", "note:"},
		},
		{
			name: "a skip the list does not name fails the run, named with what it said",
			args: []string{"./ok"},
			code: 1,
			want: []string{"skipped: 4", "NOT ALLOWED  ok TestSkipUnlisted: ok_test.go:10: the gadget is missing: install it",
				"note: .ci/allowed-skips:6 (ok TestNeverSkips) did not skip in this run"},
			wantErr: []string{"1 test(s) skipped that .ci/allowed-skips does not list"},
		},
		{
			name:     "a failed test's output is shown, a passing one's is not, and go test's exit code is kept",
			args:     []string{"./bad"},
			code:     1,
			want:     []string{"said before failing", "boom", "--- FAIL: TestFails", "FAIL\texample.com/fixture/bad"},
			dontWant: []string{"said by a passing test", "skipped:", "=== RUN"},
		},
		{
			name: "what a test said before its binary died is shown",
			args: []string{"./crash"},
			code: 1,
			want: []string{"said before exiting", "FAIL\texample.com/fixture/crash"},
		},
		{
			name:    "a build failure is shown",
			args:    []string{"./nosuchpackage"},
			code:    1,
			wantErr: []string{"nosuchpackage"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := gotest(t, tc.args...)
			if code != tc.code {
				t.Errorf("exit code %d, want %d", code, tc.code)
			}
			rest := out
			for _, w := range tc.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Errorf("stdout lacks %q (in order)", w)
					continue
				}
				rest = rest[i+len(w):]
			}
			for _, w := range tc.dontWant {
				if strings.Contains(out, w) {
					t.Errorf("stdout has %q", w)
				}
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(errOut+out, w) {
					t.Errorf("output lacks %q", w)
				}
			}
			if t.Failed() {
				t.Logf("stdout:\n%s\nstderr:\n%s", out, errOut)
			}
		})
	}
}

func TestParseAllowed(t *testing.T) {
	tests := []struct {
		name, in string
		want     []allowedSkip
		err      string
	}{
		{name: "comments and blank lines", in: "# c\n\n  internal/x  TestA  why it may skip  \n",
			want: []allowedSkip{{Pkg: "internal/x", Test: "TestA", Reason: "why it may skip", Line: 3}}},
		{name: "a line without a reason", in: "# c\ninternal/x TestA\n", err: "list:2: want PACKAGE TEST REASON"},
		{name: "a pattern path.Match can't read", in: "internal/x Test[ why\n", err: "list:1: test pattern \"Test[\""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseAllowed("list", strings.NewReader(tc.in))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) || (len(got) > 0 && got[0] != tc.want[0]) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}
