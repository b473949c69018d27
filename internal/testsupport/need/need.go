// Package need is the one place a test skips. A test says what it needs
// from the machine (a program, an installed file, a kernel feature) and is
// skipped, with a message naming what is missing and how to get it, when
// that is absent; under CI ($CI set), where .ci/test has installed
// everything the tests need, an absence fails the test instead, so nothing
// that CI should run is skipped there without a word.
//
// Skips that are right everywhere, CI included (the race detector changes
// what a test measures, an opt-in re-recording, a part CI cannot reach),
// go through Skip; .ci/test fails on any skip that .ci/allowed-skips does
// not list, so each of those is on that list with its reason.
package need

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Installer is the command that installs or builds everything the tests
// need (the README's test command); messages point to it.
const Installer = ".ci/test"

// CI reports whether the tests run under CI, where whatever a test needs
// must be there.
func CI() bool { return os.Getenv("CI") != "" }

// Missing stops t because what is not here: it skips locally and fails
// under CI. how says how to get it (a command to run, a package to
// install).
func Missing(t testing.TB, what, how string) {
	t.Helper()
	if CI() {
		t.Fatal(underCI(what, how))
	}
	t.Skip(missing(what, how))
}

func missing(what, how string) string {
	return fmt.Sprintf("%s is missing: %s (%s installs or checks everything the tests need)", what, how, Installer)
}

func underCI(what, how string) string {
	return missing(what, how) + "; under CI this is a failure, not a skip"
}

// Absent reports whether the program name is missing from PATH, for a
// check with no test to stop (a testscript condition, whose script then
// skips); under CI a missing program is an error instead, which fails the
// script.
func Absent(name, how string) (bool, error) {
	if _, err := exec.LookPath(name); err == nil {
		return false, nil
	}
	if CI() {
		return true, errors.New(underCI(name, how))
	}
	return true, nil
}

// FileAbsent reports whether path is missing, as Absent does for a
// program: for a testscript condition on what an installer puts in the
// tree (the npm reference servers). what names it and how says how to get
// it; under CI a missing file is an error, which fails the script.
func FileAbsent(path, what, how string) (bool, error) {
	if _, err := os.Stat(path); err == nil {
		return false, nil
	}
	if CI() {
		return true, errors.New(underCI(what+" ("+path+")", how))
	}
	return true, nil
}

// Program returns the path of the program name, found on PATH or else at
// one of the absolute paths in also (for daemons in /usr/sbin, which is not
// on every PATH), or stops t with Missing.
func Program(t testing.TB, name, how string, also ...string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	for _, p := range also {
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	Missing(t, name, how)
	return ""
}

// File returns path, made absolute, when it exists, or stops t with
// Missing(what, how). It is for what an installer puts in the tree, such
// as the npm packages under testdata/npm/node_modules.
func File(t testing.TB, path, what, how string) string {
	t.Helper()
	abs, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(abs); err != nil {
		Missing(t, what+" ("+abs+")", how)
		return ""
	}
	return abs
}

// Node returns the path of node, or stops t with Missing.
func Node(t testing.TB) string {
	t.Helper()
	return Program(t, "node", "install Node.js 20 or newer (Debian: apt-get install nodejs npm)")
}

// NPM returns the absolute path of rel, a file of the pinned npm reference
// servers relative to testdata/npm/node_modules, or stops t with Missing
// when they are not installed.
func NPM(t testing.TB, rel string) string {
	t.Helper()
	return File(t, filepath.Join(moduleRoot(t), "testdata", "npm", "node_modules", rel),
		"the npm reference servers", "run npm ci in testdata/npm")
}

// moduleRoot is the directory of go.mod above the test's working directory
// (go test runs a test in its package's directory).
func moduleRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		up := filepath.Dir(dir)
		if up == dir {
			t.Fatal("no go.mod above the working directory")
		}
		dir = up
	}
}

// Skip skips t everywhere, CI included, for why. It is for what no
// installer fixes: the platform (a file system that normalizes names),
// the race detector, an opt-in run. A Skip that CI reaches fails .ci/test
// unless .ci/allowed-skips lists the test.
func Skip(t testing.TB, why string) {
	t.Helper()
	t.Skip(why)
}

// Long skips t under -short: it builds binaries, starts servers or replays
// much, and what says what.
func Long(t testing.TB, what string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("-short: %s", what)
	}
}
