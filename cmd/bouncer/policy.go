package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/bouncer-mcp/bouncer/internal/audit"
	"github.com/bouncer-mcp/bouncer/internal/fsresolve"
	"github.com/bouncer-mcp/bouncer/internal/policy"
	"github.com/bouncer-mcp/bouncer/internal/setup"
	"github.com/bouncer-mcp/bouncer/internal/suggest"
)

const policySynopsis = `bouncer policy push (--key PRIVATE.pem | --set-bundle BUNDLE | --print-statement) [--version TIME] [--expires DURATION|TIME] [--trust FILE] [--plain-http] FILE... REF
       bouncer policy pull [--trust FILE] [--dir DIR] [--allow-downgrade] [--plain-http] [REF]
       bouncer policy digest [--policy FILE]... [--policy-dir DIR] [--trust FILE]
       bouncer policy suggest [--audit FILE] [--since DURATION|DATE] [--policy FILE]... [--policy-dir DIR] [--trust FILE] [--json]

push stores the policy files and one signature over the set (the files, their order and
digests, REF's repository and a version, by default the time of the push) as one OCI artifact
at REF (REGISTRY/REPOSITORY:TAG). pull resolves REF (default: policy_artifact in the trust
file) to a digest, fetches the artifact by it, verifies the set's signature under the trust
configuration and that the files are exactly the set it names, refuses a set older than the
one installed (unless --allow-downgrade) and an expired one (--expires, or the trust file's
max_age past its version), and only then installs the set atomically into DIR
(default $BOUNCER_HOME/policy). A failed pull changes nothing and exits 1. bouncer run
--policy-dir DIR loads the installed set, checked again.
digest prints the digest of the effective policy set, the value every audit line carries as
"policy" (the built-in packs, each file's bytes in load order, and this binary's version):
the policy bouncer run loads for the same --policy, --policy-dir and --trust, verified as
run verifies it.
suggest reads the audit log (bouncer run --observe writes the evidence) and prints a policy
file to load after the --policy files, that lets the observed legitimate work through; see
docs/rollout.md.`

func cmdPolicy(args []string) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		if len(args) > 0 && (args[0] == "--help" || args[0] == "-h" || args[0] == "-help") {
			fmt.Fprintf(os.Stdout, "Usage: %s\n", policySynopsis)
			return nil
		}
		return usageErr("%s", "policy: give push, pull, digest or suggest; see bouncer policy --help")
	}
	switch args[0] {
	case "push":
		return policyPush(args[1:])
	case "pull":
		return policyPull(args[1:])
	case "digest":
		return cmdPolicyDigest(args[1:])
	case "suggest":
		return cmdPolicySuggest(args[1:])
	}
	return usageErr("%s", fmt.Sprintf("policy: unknown %q; give push, pull, digest or suggest", args[0]))
}

func cmdPolicyDigest(args []string) error {
	fs, home := newFlags("policy digest", policySynopsis)
	var pf policyFlags
	pf.register(fs)
	if done, err := parseFlags(fs, args); done {
		return err
	}
	if fs.NArg() > 0 {
		return usageErr("%s", fmt.Sprintf("policy digest: unexpected argument %q", fs.Arg(0)))
	}
	pol, err := loadInForce(&pf, *home, "policy digest")
	if err != nil {
		return err
	}
	fmt.Println(pol.Digest(version))
	return nil
}

// loadInForce loads the policy run puts in force for the flags
// (setup.LoadPolicy), for a command that describes it.
func loadInForce(pf *policyFlags, home, cmd string) (*policy.Policy, error) {
	dir, err := stateDir(home)
	if err != nil {
		return nil, badInput(fmt.Errorf("%s: %v", cmd, err))
	}
	in, err := setup.LoadPolicy(pf.sources(dir, ""))
	if err != nil {
		return nil, badInput(fmt.Errorf("%v", err))
	}
	return in.Policy, nil
}

func cmdPolicySuggest(args []string) error {
	fs, home := newFlags("policy suggest", policySynopsis)
	var pf policyFlags
	pf.register(fs)
	auditFile := fs.String("audit", "", "the audit log `FILE` (default STATE_DIR/audit.jsonl)")
	since := fs.String("since", "", "only lines from `DURATION` ago (7d, 48h) or a DATE (2026-12-01) on")
	asJSON := fs.Bool("json", false, "print the evidence as JSON, for a dashboard, instead of the policy file")
	if done, err := parseFlags(fs, args); done {
		return err
	}
	if fs.NArg() > 0 {
		return usageErr("%s", fmt.Sprintf("policy suggest: unexpected argument %q", fs.Arg(0)))
	}
	var from time.Time
	if *since != "" {
		t, err := parseSince(*since, time.Now())
		if err != nil {
			return usageErr("%s", "policy suggest: --since: "+err.Error())
		}
		from = t
	}
	// The policy in effect, as run loads it: the suggestion restates its
	// entries.
	pol, err := loadInForce(&pf, *home, "policy suggest")
	if err != nil {
		return err
	}
	path := *auditFile
	if path == "" {
		dir, err := stateDir(*home)
		if err != nil {
			return badInput(fmt.Errorf("policy suggest: %v", err))
		}
		path = filepath.Join(dir, "audit.jsonl")
	}
	entries, err := readAuditLenient(path)
	if errors.Is(err, os.ErrNotExist) {
		return failed(fmt.Errorf("policy suggest: %s does not exist: no audit log to read (run with --observe first, or give --audit FILE)", path))
	}
	if err != nil {
		return failed(fmt.Errorf("policy suggest: %v", err))
	}
	var in []audit.Entry
	for _, e := range entries {
		if from.IsZero() || !e.TS.Before(from) {
			in = append(in, e)
		}
	}
	// The user's own home is never suggested as a prefix, wherever it lies.
	var homes []string
	if h, err := os.UserHomeDir(); err == nil {
		homes = append(homes, h)
	}
	res := suggest.Suggest(pol, in, suggest.Options{Resolve: fsresolve.Existing, Homes: homes})
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		if err := enc.Encode(res); err != nil {
			return failed(fmt.Errorf("policy suggest: %v", err))
		}
		return nil
	}
	period := path
	if len(in) > 0 {
		period = fmt.Sprintf("%s, %s to %s", path, in[0].TS.UTC().Format(time.DateOnly), in[len(in)-1].TS.UTC().Format(time.DateOnly))
	}
	if err := res.WriteYAML(os.Stdout, period); err != nil {
		return failed(fmt.Errorf("policy suggest: %v", err))
	}
	return nil
}
