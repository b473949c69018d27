// Command efficacy replays the AgentDojo sessions of testdata/agentdojo
// through `bouncer check` and prints the Markdown tables of docs/efficacy.md.
//
//	go run ./internal/testsupport/efficacy/cmd/efficacy                 # what this binary supports
//	go run ./internal/testsupport/efficacy/cmd/efficacy -mode compat -policy base   # today's baseline
//
// It builds ./cmd/bouncer first unless -bouncer names a binary.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/bouncer-mcp/bouncer/internal/testsupport/efficacy"
)

func main() {
	dir := flag.String("dir", "", "the generated data (default: testdata/agentdojo of this module)")
	bin := flag.String("bouncer", "", "a bouncer binary (default: build ./cmd/bouncer)")
	mode := flag.String("mode", "auto", "native (prompt lines and server fields, one client session), compat (today: prompt lines dropped, one proxy per server), or auto")
	policy := flag.String("policy", "all", "base, vouching, anchoring, or all (vouching and anchoring only where the binary loads them)")
	workers := flag.Int("workers", 2, "bouncer check runs at a time")
	flag.Parse()
	if err := run(*dir, *bin, *mode, *policy, *workers); err != nil {
		fmt.Fprintln(os.Stderr, "efficacy:", err)
		os.Exit(1)
	}
}

func run(dir, bin, mode, policy string, workers int) error {
	ctx := context.Background()
	root, err := efficacy.ModuleRoot()
	if err != nil {
		return err
	}
	if dir == "" {
		dir = filepath.Join(root, "testdata", "agentdojo")
	}
	m, err := efficacy.LoadManifest(dir)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "bouncer-efficacy")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if bin == "" {
		if bin, err = efficacy.Build(root, tmp); err != nil {
			return err
		}
	}
	r := &efficacy.Runner{Bouncer: bin, Home: filepath.Join(tmp, "home"), Dir: dir}
	var md efficacy.Mode
	switch mode {
	case "native":
		md = efficacy.ModeNative
	case "compat":
		md = efficacy.ModeCompat
	case "auto":
		md = efficacy.ModeCompat
		if r.Supports(ctx, efficacy.ModeNative, efficacy.PolicyBase) {
			md = efficacy.ModeNative
		}
	default:
		return fmt.Errorf("-mode %q: want native, compat or auto", mode)
	}
	var sets []efficacy.PolicySet
	switch policy {
	case "base":
		sets = []efficacy.PolicySet{efficacy.PolicyBase}
	case "vouching":
		sets = []efficacy.PolicySet{efficacy.PolicyVouching}
	case "anchoring":
		sets = []efficacy.PolicySet{efficacy.PolicyAnchoring}
	case "all":
		sets = []efficacy.PolicySet{efficacy.PolicyBase}
		if r.Supports(ctx, md, efficacy.PolicyVouching) {
			sets = append(sets, efficacy.PolicyVouching)
			if r.Supports(ctx, md, efficacy.PolicyAnchoring) {
				sets = append(sets, efficacy.PolicyAnchoring)
			}
		} else {
			fmt.Fprintln(os.Stderr, "efficacy: this binary does not load the *-vouching.yaml policies; replaying the base set only")
		}
	default:
		return fmt.Errorf("-policy %q: want base, vouching, anchoring or all", policy)
	}
	for _, set := range sets {
		res, err := r.Run(ctx, m, md, set, workers)
		if err != nil {
			return err
		}
		fmt.Print(res.Markdown())
		fmt.Println()
	}
	return nil
}
