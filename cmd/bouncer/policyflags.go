package main

import (
	"errors"
	"flag"
	"fmt"
	"path/filepath"

	"github.com/bouncer-mcp/bouncer/internal/setup"
)

// policyFlags are the flags that say which policy is in force: --policy,
// --policy-dir and --trust. run, check, serve, report and policy
// digest/suggest register them alike and hand them to setup.LoadPolicy,
// so that what one command checks, serves or describes is the policy run
// enforces for the same flags.
type policyFlags struct {
	policies   multiFlag
	dir, trust string
}

// register adds the flags to fs.
func (p *policyFlags) register(fs *flag.FlagSet) {
	fs.Var(&p.policies, "policy", "policy `FILE` layered over the built-in packs and any --policy-dir set (repeatable; later files override earlier ones)")
	fs.StringVar(&p.dir, "policy-dir", "", "load the policy set `DIR` holds (bouncer policy pull --dir DIR; default pull location $BOUNCER_HOME/policy) before any --policy file; the set must verify under the trust configuration")
	fs.StringVar(&p.trust, "trust", "", "trust configuration `FILE` for signed policy (default $BOUNCER_HOME/trust.yaml; /etc/bouncer/trust.yaml always applies)")
}

// given reports whether the flags name any policy file; without one the
// built-in packs alone are in force.
func (p *policyFlags) given() bool { return len(p.policies) > 0 || p.dir != "" }

// sources are the flags as setup.LoadPolicy takes them, for the state
// directory stateDir. A relative --policy is resolved against base when
// base is not "" (run --config: where a relative --config was found, so a
// wrapped entry a team commits names both without an absolute path), else
// against the working directory; --policy-dir and --trust always against
// the working directory.
func (p *policyFlags) sources(stateDir, base string) setup.Sources {
	files := make([]string, len(p.policies))
	for i, f := range p.policies {
		if base != "" && !filepath.IsAbs(f) {
			f = filepath.Join(base, f)
		}
		files[i] = f
	}
	return setup.Sources{Policies: files, PolicyDir: p.dir, Trust: p.trust, StateDir: stateDir}
}

// runArgsPolicy is the policy that `bouncer ARGS` puts in force, loaded
// as that run will load it. args are a wrapped entry's arguments as the
// client passes them ("run" first, the client's variables expanded); base
// is the directory run resolves a relative --policy against when args
// have --config (mcpconfig.Resolved's Base: where a relative --config is
// found, else the client's working directory), unused without --config.
// init's summary calls it, so the summary describes the policy run
// enforces: the installed set, the --policy files and every signature
// check, or the error that will stop run.
func runArgsPolicy(args []string, base string) (*setup.InForce, error) {
	src, err := runArgsSources(args, base)
	if err != nil {
		return nil, err
	}
	return setup.LoadPolicy(src)
}

// runArgsSources reads `bouncer ARGS` with run's own flags and returns the
// policy sources that run would load, as runArgsPolicy describes (and
// setup.Launch.Sources takes them).
func runArgsSources(args []string, base string) (setup.Sources, error) {
	if len(args) == 0 || args[0] != "run" {
		return setup.Sources{}, errors.New("not a bouncer run command")
	}
	// run's own flag set, silent: a summary prints no usage text.
	fs, f, home := runFlagSet()
	fs.Usage = func() {}
	if err := fs.Parse(args[1:]); err != nil {
		return setup.Sources{}, fmt.Errorf("bouncer run would not start: %v", err)
	}
	dir, err := stateDir(*home)
	if err != nil {
		return setup.Sources{}, err
	}
	if f.configFile == "" {
		base = ""
	}
	return f.sources(dir, base), nil
}
