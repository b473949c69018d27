// Command gotest runs go test -json with the arguments it is given, prints
// what plain go test prints (each package's result, a failed test's
// output), then every test that skipped, with its reason, and fails when
// go test failed or when a test skipped that .ci/allowed-skips (at the
// module root) does not list. .ci/test, the README's test command, runs the
// tests through it, so that no test skips without a word: a skip names what
// is missing (package need), and only the skips that are right wherever
// the tests run are allowed.
//
//	go run ./internal/testsupport/gotest -race -count=1 ./...
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// AllowedFile is where the allowed skips are listed, from the module root.
const AllowedFile = ".ci/allowed-skips"

func main() {
	os.Exit(run("", os.Args[1:], os.Stdout, os.Stderr))
}

// run runs go test -json args in dir (the working directory when empty)
// and returns the exit code.
func run(dir string, args []string, stdout, stderr io.Writer) int {
	mod, err := module(dir)
	if err != nil {
		fmt.Fprintf(stderr, "gotest: %v\n", err)
		return 2
	}
	listFile := filepath.Join(mod.Dir, filepath.FromSlash(AllowedFile))
	f, err := os.Open(listFile)
	if err != nil {
		fmt.Fprintf(stderr, "gotest: %v; it lists the tests that may skip (one a line: PACKAGE TEST REASON)\n", err)
		return 2
	}
	allowed, err := parseAllowed(AllowedFile, f)
	f.Close()
	if err != nil {
		fmt.Fprintf(stderr, "gotest: %v\n", err)
		return 2
	}

	cmd := exec.Command("go", append([]string{"test", "-json"}, args...)...)
	cmd.Dir = dir
	cmd.Stderr = stderr
	events, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintf(stderr, "gotest: %v\n", err)
		return 2
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(stderr, "gotest: starting go test: %v\n", err)
		return 2
	}
	res, ferr := follow(events, stdout, mod.Path)
	werr := cmd.Wait()
	if ferr != nil {
		fmt.Fprintf(stderr, "gotest: reading go test -json: %v\n", ferr)
		return 2
	}
	if filtered(args) {
		res.Packages = nil // a -run or -skip leaves listed tests out: no notes
	}
	unlisted := summarize(stdout, res, allowed)
	var exit *exec.ExitError
	switch {
	case errors.As(werr, &exit):
		return exit.ExitCode()
	case werr != nil:
		fmt.Fprintf(stderr, "gotest: go test: %v\n", werr)
		return 2
	case unlisted > 0:
		fmt.Fprintf(stderr, "gotest: %d test(s) skipped that %s does not list. Each skip above says what is missing and how to get it;\n"+
			"get it, or list the test in %s with the reason it cannot run wherever the tests run. (Plain go test skips without this check.)\n",
			unlisted, AllowedFile, AllowedFile)
		return 1
	}
	return 0
}

// filtered reports whether args pick tests by name (-run, -skip).
func filtered(args []string) bool {
	for _, a := range args {
		for _, f := range []string{"-run", "-skip", "-test.run", "-test.skip"} {
			if a == f || strings.HasPrefix(a, f+"=") || a == "-"+f || strings.HasPrefix(a, "-"+f+"=") {
				return true
			}
		}
	}
	return false
}

// modInfo is the main module: its path and its directory.
type modInfo struct{ Path, Dir string }

func module(dir string) (modInfo, error) {
	cmd := exec.Command("go", "list", "-m", "-json")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return modInfo{}, fmt.Errorf("go list -m: %v\n%s", err, ee.Stderr)
		}
		return modInfo{}, fmt.Errorf("go list -m: %v", err)
	}
	var m modInfo
	if err := json.Unmarshal(out, &m); err != nil || m.Dir == "" {
		return modInfo{}, fmt.Errorf("go list -m: no main module here (run in the repository): %s", out)
	}
	return m, nil
}

// allowedSkip is one line of the allowed list: tests of package Pkg (a
// directory from the module root, "." for the root) whose full names match
// Test (path.Match: * stops at a subtest's /) may skip, for Reason.
type allowedSkip struct {
	Pkg, Test, Reason string
	Line              int
}

// parseAllowed reads the allowed list: one "PACKAGE TEST REASON" a line;
// blank lines and lines starting with # are comments. A line without a
// reason, or with a pattern path.Match can't read, is an error naming the
// file and line.
func parseAllowed(name string, r io.Reader) ([]allowedSkip, error) {
	var list []allowedSkip
	sc := bufio.NewScanner(r)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) < 3 {
			return nil, fmt.Errorf("%s:%d: want PACKAGE TEST REASON, got %q: every allowed skip says why", name, n, line)
		}
		if _, err := path.Match(fields[1], ""); err != nil {
			return nil, fmt.Errorf("%s:%d: test pattern %q: %v", name, n, fields[1], err)
		}
		list = append(list, allowedSkip{Pkg: fields[0], Test: fields[1], Reason: strings.Join(fields[2:], " "), Line: n})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	return list, nil
}

// event is a line of go test -json (cmd/test2json).
type event struct {
	Action     string
	Package    string
	Test       string
	Output     string
	ImportPath string // build-output
}

// skipped is a test that skipped: its package (relative, as in the allowed
// list), its full name and what it printed.
type skipped struct {
	Pkg, Test, Reason string
}

// result is what a run of go test showed: the skipped tests in order and
// the packages that ran tests.
type result struct {
	Skips    []skipped
	Packages map[string]bool
}

// follow reads go test -json events and prints what plain go test prints:
// package lines (ok, FAIL, build errors) and the output of each failed
// test. It returns the skips.
func follow(r io.Reader, out io.Writer, modPath string) (result, error) {
	res := result{Packages: map[string]bool{}}
	buf := map[[2]string]*bytes.Buffer{}
	// A test binary that died mid-test (os.Exit, a timeout) leaves its
	// running tests with no event of their own: flush shows what they
	// said, before the package's FAIL.
	flush := func(pkg string) {
		var keys [][2]string
		for k := range buf {
			if k[0] == pkg {
				keys = append(keys, k)
			}
		}
		slices.SortFunc(keys, func(a, b [2]string) int { return strings.Compare(a[1], b[1]) })
		for _, k := range keys {
			out.Write(buf[k].Bytes())
			delete(buf, k)
		}
	}
	dec := json.NewDecoder(r)
	for {
		var e event
		if err := dec.Decode(&e); err == io.EOF {
			break
		} else if err != nil {
			return res, err
		}
		key := [2]string{e.Package, e.Test}
		switch {
		case e.Action == "build-output":
			io.WriteString(out, e.Output)
		case e.Test == "" && e.Action == "output":
			if strings.HasPrefix(e.Output, "FAIL") {
				flush(e.Package)
			}
			if e.Output != "PASS\n" {
				io.WriteString(out, e.Output)
			}
		case e.Test == "" && (e.Action == "pass" || e.Action == "fail"):
			res.Packages[relPkg(modPath, e.Package)] = true
			flush(e.Package)
		case e.Test == "":
		case e.Action == "output":
			if strings.HasPrefix(e.Output, "=== ") {
				break // -v framing (RUN, PAUSE, CONT, NAME): plain go test does not print it
			}
			b := buf[key]
			if b == nil {
				b = new(bytes.Buffer)
				buf[key] = b
			}
			b.WriteString(e.Output)
		case e.Action == "fail":
			if b := buf[key]; b != nil {
				out.Write(b.Bytes())
			}
			delete(buf, key)
		case e.Action == "skip":
			var said string
			if b := buf[key]; b != nil {
				said = reason(b.String())
			}
			res.Skips = append(res.Skips, skipped{Pkg: relPkg(modPath, e.Package), Test: e.Test, Reason: said})
			delete(buf, key)
		case e.Action == "pass":
			delete(buf, key)
		}
	}
	return res, nil
}

// reason is what a skipped test printed, without its --- SKIP line, on
// one line.
func reason(out string) string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "--- SKIP") {
			continue
		}
		lines = append(lines, t)
	}
	return strings.Join(lines, " | ")
}

// relPkg is an import path as the allowed list names it: its directory
// from the module root.
func relPkg(modPath, pkg string) string {
	if pkg == modPath {
		return "."
	}
	return strings.TrimPrefix(pkg, modPath+"/")
}

// match returns the allowed-list entry that covers s, or nil.
func match(list []allowedSkip, s skipped) *allowedSkip {
	for i, a := range list {
		if a.Pkg != s.Pkg {
			continue
		}
		if ok, _ := path.Match(a.Test, s.Test); ok {
			return &list[i]
		}
	}
	return nil
}

// summarize prints every skip, allowed or not, and each allowed entry of a
// package that ran whose test did not skip (a stale line, or a run
// without the condition, such as no -race); it returns how many skips the
// list does not allow.
func summarize(out io.Writer, res result, list []allowedSkip) int {
	used := map[int]bool{}
	unlisted := 0
	if len(res.Skips) > 0 {
		fmt.Fprintf(out, "\nskipped: %d\n", len(res.Skips))
	}
	for _, s := range res.Skips {
		if a := match(list, s); a != nil {
			used[a.Line] = true
			fmt.Fprintf(out, "  allowed by %s:%d  %s %s: %s\n", AllowedFile, a.Line, s.Pkg, s.Test, s.Reason)
		} else {
			unlisted++
			fmt.Fprintf(out, "  NOT ALLOWED  %s %s: %s\n", s.Pkg, s.Test, s.Reason)
		}
	}
	for _, a := range list {
		if res.Packages[a.Pkg] && !used[a.Line] {
			fmt.Fprintf(out, "note: %s:%d (%s %s) did not skip in this run\n", AllowedFile, a.Line, a.Pkg, a.Test)
		}
	}
	return unlisted
}
