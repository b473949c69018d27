package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/bouncer-mcp/bouncer/internal/bundle"
)

const verifySynopsis = `bouncer verify [--trust FILE] [--bundle BUNDLE] FILE...`

func init() {
	// bouncer run checks its policy files through this hook before the
	// upstream starts (see run.go). The hook is not given run's --home, so
	// the state directory here is $BOUNCER_HOME, else ~/.bouncer.
	verifyPolicies = func(trustFile string, files []string) error {
		dir, _ := stateDir("") // no home directory: only --trust and /etc apply
		return checkPolicies(trustFile, dir, files)
	}
}

// checkPolicies loads the trust configuration (--trust FILE, else
// stateDir/trust.yaml, with /etc/bouncer/trust.yaml always applied when it
// exists) and checks files under it. No trust file anywhere means signing is
// not in use and nothing is checked; a --trust FILE that is missing, or any
// malformed trust file, is an error.
func checkPolicies(trustFile, stateDir string, files []string) error {
	t, err := bundle.LoadTrust(trustFile, stateDir)
	if errors.Is(err, bundle.ErrNoTrust) {
		return nil
	}
	if err != nil {
		return err
	}
	return t.CheckPolicies(files)
}

// cmdVerify checks each file against its Sigstore bundle and prints one line
// per file: "OK FILE (SIGNER)" or "FAIL FILE: why".
func cmdVerify(args []string) int {
	fs, home := newFlags("verify", verifySynopsis)
	trust := fs.String("trust", "", "trust configuration `FILE` (default $BOUNCER_HOME/trust.yaml, with /etc/bouncer/trust.yaml always applied when present)")
	bundleFlag := fs.String("bundle", "", "the Sigstore `BUNDLE` to check (default FILE.sigstore.json beside each file; only with one FILE)")
	if done, status := parseFlags(fs, args); done {
		return status
	}
	files := fs.Args()
	if len(files) == 0 {
		return usageError("verify: give at least one FILE")
	}
	if *bundleFlag != "" && len(files) != 1 {
		return usageError("verify: --bundle goes with exactly one FILE")
	}
	dir, err := stateDir(*home)
	if err != nil {
		errorf("%v", err)
		return exitUsage
	}
	t, err := bundle.LoadTrust(*trust, dir)
	if err != nil {
		errorf("%v", err)
		return exitUsage
	}
	if !t.HasSigners() {
		errorf("%s names no keys or identities, so nothing can verify", joinFiles(t.Files()))
		return exitUsage
	}
	status := exitOK
	for _, f := range files {
		var res bundle.Result
		if *bundleFlag != "" {
			res, err = t.VerifyFileWithBundle(f, *bundleFlag)
		} else {
			res, err = t.VerifyFile(f)
		}
		if err != nil {
			fmt.Fprintf(os.Stdout, "FAIL %s: %v\n", f, err)
			status = exitFail
			continue
		}
		fmt.Fprintf(os.Stdout, "OK %s (%s)\n", f, res.Signer())
	}
	return status
}

func joinFiles(fs []string) string {
	switch len(fs) {
	case 0:
		return "the trust configuration"
	case 1:
		return fs[0]
	}
	return fs[0] + " and " + fs[1]
}
