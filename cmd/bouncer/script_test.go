package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/bouncer-mcp/bouncer/internal/testsupport/need"
	"github.com/bouncer-mcp/bouncer/internal/testsupport/testserver"
)

// serveHelpdesk is the script command `serve-helpdesk [OPTION]...
// [token=TOKEN]`: it serves the helpdesk over HTTP on a loopback port for
// the rest of the script (its side effects in $WORK), with the options of
// testserver.HelpdeskHandler, and sets $URL to its endpoint.
func serveHelpdesk(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("serve-helpdesk does not fail")
	}
	var opts []string
	token := ""
	for _, a := range args {
		if t, ok := strings.CutPrefix(a, "token="); ok {
			token = t
		} else {
			opts = append(opts, a)
		}
	}
	h, path := testserver.HelpdeskHandler(ts.Getenv("WORK"), opts, token)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	ts.Check(err)
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	ts.Defer(func() { srv.Close() })
	ts.Setenv("URL", "http://"+ln.Addr().String()+path)
}

// TestMain lets the test binary act as the bouncer command inside scripts,
// so the CLI cases run the real dispatch, flags and exit codes.
func TestMain(m *testing.M) {
	testserver.Main() // listen_test.go's servers: this binary, re-executed
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
		Cmds:                scriptCmds, // script_registry_test.go
		// [missing:PROGRAM] is true when PROGRAM is not on PATH, and
		// [missing-npm:FILE] when FILE is not among the pinned npm
		// reference servers (testdata/npm/node_modules), for a script to
		// skip; under CI either fails the script (package need).
		Condition: func(cond string) (bool, error) {
			if prog, ok := strings.CutPrefix(cond, "missing:"); ok {
				return need.Absent(prog, "the script's skip line says how to get it")
			}
			if rel, ok := strings.CutPrefix(cond, "missing-npm:"); ok {
				return need.FileAbsent(filepath.Join(repo, "testdata", "npm", "node_modules", filepath.FromSlash(rel)),
					"the npm reference servers", "run npm ci in testdata/npm")
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
	})
}
