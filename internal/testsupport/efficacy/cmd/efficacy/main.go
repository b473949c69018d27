// Command efficacy replays the AgentDojo sessions of testdata/agentdojo
// through `bouncer check` and prints the Markdown tables of docs/efficacy.md.
//
//	go run ./internal/testsupport/efficacy/cmd/efficacy                 # what this binary supports
//	go run ./internal/testsupport/efficacy/cmd/efficacy -mode compat -policy base   # today's baseline
//	go run ./internal/testsupport/efficacy/cmd/efficacy -injecagent     # InjecAgent with no policy
//
// It builds ./cmd/bouncer first unless -bouncer names a binary.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/bouncer-mcp/bouncer/internal/testsupport/efficacy"
)

func main() {
	dir := flag.String("dir", "", "the generated data (default: testdata/agentdojo of this module)")
	bin := flag.String("bouncer", "", "a bouncer binary (default: build ./cmd/bouncer)")
	mode := flag.String("mode", "auto", "native (prompt lines and server fields, one client session), compat (today: prompt lines dropped, one proxy per server), or auto")
	policy := flag.String("policy", "all", "base, vouching, anchoring, or all (vouching and anchoring only where the binary loads them)")
	workers := flag.Int("workers", 2, "bouncer check runs at a time")
	injec := flag.Bool("injecagent", false, "replay testdata/injecagent instead, with no policy but the packs (and any -policy-file)")
	var files multi
	flag.Var(&files, "policy-file", "with -injecagent: a policy `FILE` to load (repeatable)")
	flag.Parse()
	var err error
	if *injec {
		err = runInjecAgent(*bin, files, *workers)
	} else {
		err = run(*dir, *bin, *mode, *policy, *workers)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "efficacy:", err)
		os.Exit(1)
	}
}

// runner makes a Runner over bin, or over ./cmd/bouncer built into a
// temporary directory, with its home there; done removes it.
func runner(bin string) (r *efficacy.Runner, root string, done func(), err error) {
	root, err = efficacy.ModuleRoot()
	if err != nil {
		return nil, "", nil, err
	}
	tmp, err := os.MkdirTemp("", "bouncer-efficacy")
	if err != nil {
		return nil, "", nil, err
	}
	done = func() { os.RemoveAll(tmp) }
	if bin == "" {
		if bin, err = efficacy.Build(root, tmp); err != nil {
			done()
			return nil, "", nil, err
		}
	}
	return &efficacy.Runner{Bouncer: bin, Home: filepath.Join(tmp, "home")}, root, done, nil
}

func run(dir, bin, mode, policy string, workers int) error {
	ctx := context.Background()
	r, root, done, err := runner(bin)
	if err != nil {
		return err
	}
	defer done()
	if dir == "" {
		dir = filepath.Join(root, "testdata", "agentdojo")
	}
	m, err := efficacy.LoadManifest(dir)
	if err != nil {
		return err
	}
	r.Dir = dir
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

type multi []string

func (m *multi) String() string     { return fmt.Sprint(*m) }
func (m *multi) Set(s string) error { *m = append(*m, s); return nil }

// runInjecAgent replays InjecAgent's cases and prints what became of the
// attack sends and of the direct-harm calls that act in place.
func runInjecAgent(bin string, policies []string, workers int) error {
	r, root, done, err := runner(bin)
	if err != nil {
		return err
	}
	defer done()
	ia, err := efficacy.LoadInjecAgent(filepath.Join(root, "testdata", "injecagent"))
	if err != nil {
		return err
	}
	out, err := r.ReplayInjecAgent(context.Background(), ia, policies, workers)
	if err != nil {
		return err
	}
	t := efficacy.TallyInjecAgent(out)
	total := func(m map[string]int) int { return m["allow"] + m["ask"] + m["deny"] }
	fmt.Printf("| InjecAgent, %d cases | allowed | asked | denied |\n| --- | --- | --- | --- |\n", len(ia.Cases))
	fmt.Printf("| attack sends (%d) | %d | %d | %d |\n", total(t.Sends), t.Sends["allow"], t.Sends["ask"], t.Sends["deny"])
	fmt.Printf("| in-place actions (%d) | %d | %d | %d |\n", total(t.InPlace), t.InPlace["allow"], t.InPlace["ask"], t.InPlace["deny"])
	byTool := map[string]map[string]int{}
	for _, o := range out {
		if o.Case.Kind != "dh" && !o.Send {
			continue
		}
		if byTool[o.Tool] == nil {
			byTool[o.Tool] = map[string]int{}
		}
		byTool[o.Tool][o.Verdict.Verdict]++
	}
	fmt.Println()
	fmt.Println("| tool | allowed | asked | denied |\n| --- | --- | --- | --- |")
	for _, name := range sortedKeys(byTool) {
		m := byTool[name]
		fmt.Printf("| %s | %d | %d | %d |\n", name, m["allow"], m["ask"], m["deny"])
	}
	return nil
}

func sortedKeys(m map[string]map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
