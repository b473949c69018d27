package main

import (
	"fmt"
	"os"

	"github.com/bouncer-mcp/bouncer/internal/bundle"
)

const verifySynopsis = `bouncer verify [--trust FILE] [--bundle BUNDLE] FILE...

Checks each policy or pack FILE against its Sigstore bundle under the trust configuration,
prints one line per file, and exits 1 if any fails.`

// cmdVerify checks each file against its Sigstore bundle and prints one line
// per file: "OK FILE (SIGNER)" or "FAIL FILE: why".
func cmdVerify(args []string) error {
	fs, home := newFlags("verify", verifySynopsis)
	trust := fs.String("trust", "", "trust configuration `FILE` (default $BOUNCER_HOME/trust.yaml, with /etc/bouncer/trust.yaml always applied when present)")
	bundleFlag := fs.String("bundle", "", "the Sigstore `BUNDLE` to check (default FILE.sigstore.json beside each file; only with one FILE)")
	if done, err := parseFlags(fs, args); done {
		return err
	}
	files := fs.Args()
	if len(files) == 0 {
		return usageErr("%s", "verify: give at least one FILE")
	}
	if *bundleFlag != "" && len(files) != 1 {
		return usageErr("%s", "verify: --bundle goes with exactly one FILE")
	}
	dir, err := stateDir(*home)
	if err != nil {
		return badInput(fmt.Errorf("%v", err))
	}
	t, err := bundle.LoadTrust(*trust, dir)
	if err != nil {
		return badInput(fmt.Errorf("%v", err))
	}
	if !t.HasSigners() {
		return badInput(fmt.Errorf("%s names no keys or identities, so nothing can verify", joinFiles(t.Files())))
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
	if status != exitOK {
		return silently(status) // each file's problem was said
	}
	return nil
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
