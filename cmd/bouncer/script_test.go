package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// TestMain lets the test binary act as the bouncer command inside scripts,
// so the CLI cases run the real dispatch, flags and exit codes.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"bouncer": func() { os.Exit(dispatch(os.Args[1:])) },
		// run's sandbox launcher re-executes this very binary as
		// /proc/self/exe, its hidden command first.
		"exe": func() { os.Exit(dispatch(os.Args[1:])) },
	})
}

// TestScripts runs testdata/script/*.txtar at the repository root. Each case
// gets its own BOUNCER_HOME inside its work directory.
func TestScripts(t *testing.T) {
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir: filepath.Join(repo, "testdata", "script"),
		Setup: func(env *testscript.Env) error {
			env.Setenv("BOUNCER_HOME", filepath.Join(env.WorkDir, ".bouncer"))
			env.Setenv("REPO", repo)
			return nil
		},
		RequireExplicitExec: true,
	})
}
