package efficacy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// Mode is how sessions are fed to the binary.
type Mode string

const (
	// ModeNative: the binary reads `prompt` lines and `server` fields, and all
	// servers of one check run share one taint scope (the contract's "One
	// session per client").
	ModeNative Mode = "native"
	// ModeCompat: today's binary. Prompt lines are dropped; in the split
	// layout each server is replayed as its own proxy (its own check run,
	// its own taint), which is how separate `bouncer run` proxies behave
	// without a shared client session.
	ModeCompat Mode = "compat"
)

// PolicySet names the policy files a suite is replayed with.
type PolicySet string

const (
	// PolicyBase is policies/SUITE.yaml.
	PolicyBase PolicySet = "base"
	// PolicyVouching adds policies/SUITE-vouching.yaml (tools whose output
	// vouches, a key today's binary refuses).
	PolicyVouching PolicySet = "vouching"
	// PolicyAnchoring adds policies/SUITE-anchoring.yaml, where there is
	// one, to PolicyVouching: record anchoring, which is opt-in.
	PolicyAnchoring PolicySet = "anchoring"
)

// PolicyFiles returns the policy files of a suite under dir.
func PolicyFiles(dir, suite string, set PolicySet) []string {
	files := []string{filepath.Join(dir, "policies", suite+".yaml")}
	if set == PolicyVouching || set == PolicyAnchoring {
		files = append(files, filepath.Join(dir, "policies", suite+"-vouching.yaml"))
	}
	if set == PolicyAnchoring {
		if f := filepath.Join(dir, "policies", suite+"-anchoring.yaml"); fileExists(f) {
			files = append(files, f)
		}
	}
	return files
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// Build compiles ./cmd/bouncer of the module at root into dir and returns the
// binary's path.
func Build(root, dir string) (string, error) {
	bin := filepath.Join(dir, "bouncer")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/bouncer")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/bouncer: %v\n%s", err, out)
	}
	return bin, nil
}

// ModuleRoot finds the directory holding this module's go.mod, from the
// working directory up.
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.HasPrefix(b, []byte("module github.com/bouncer-mcp/bouncer\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("efficacy: no go.mod of github.com/bouncer-mcp/bouncer above the working directory")
		}
		dir = parent
	}
}

// Verdict is one line `bouncer check` prints for a call.
type Verdict struct {
	Tool    string `json:"tool"`
	Verdict string `json:"verdict"`
	Reason  string `json:"reason"`
	Rule    string `json:"rule"`
}

// Runner replays sessions through one bouncer binary.
type Runner struct {
	Bouncer string // the binary
	Home    string // --home for every check run
	Dir     string // testdata/agentdojo: the manifest, sessions and policies
}

// check runs `bouncer check` on a session given as bytes.
func (r *Runner) check(ctx context.Context, policies []string, session []byte) ([]Verdict, error) {
	return r.checkWith(ctx, policies, nil, session)
}

// checkWith is check with further flags (--tools FILE).
func (r *Runner) checkWith(ctx context.Context, policies, flags []string, session []byte) ([]Verdict, error) {
	args := append([]string{"check", "--home", r.Home}, flags...)
	for _, p := range policies {
		args = append(args, "--policy", p)
	}
	cmd := exec.CommandContext(ctx, r.Bouncer, args...)
	cmd.Stdin = bytes.NewReader(session)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("bouncer %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	var out []Verdict
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for sc.Scan() {
		var v Verdict
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			return nil, fmt.Errorf("bouncer check printed %q: %v", sc.Text(), err)
		}
		out = append(out, v)
	}
	return out, sc.Err()
}

// Supports reports whether the binary accepts what a mode or policy set
// needs: ModeNative needs `prompt` lines and `server` fields, PolicyVouching
// needs every suite's vouching file to load.
func (r *Runner) Supports(ctx context.Context, mode Mode, set PolicySet) bool {
	if mode == ModeNative {
		probe := []byte(`{"prompt":"send it to a@b.example"}` + "\n" +
			`{"output":"x","server":"one"}` + "\n" +
			`{"call":{"name":"t","arguments":{}},"server":"two"}` + "\n")
		if _, err := r.check(ctx, nil, probe); err != nil {
			return false
		}
	}
	if set == PolicyVouching {
		for _, suite := range []string{"workspace", "travel", "banking", "slack"} {
			if _, err := r.check(ctx, PolicyFiles(r.Dir, suite, set), nil); err != nil {
				return false
			}
		}
	}
	return true
}

// line is one session line with its fields kept verbatim.
type line map[string]json.RawMessage

func (l line) server() string {
	var s string
	if raw, ok := l["server"]; ok {
		json.Unmarshal(raw, &s)
	}
	return s
}

// readLines reads a session file.
func readLines(path string) ([]line, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []line
	for n, raw := range bytes.Split(data, []byte("\n")) {
		if len(bytes.TrimSpace(raw)) == 0 {
			continue
		}
		var l line
		if err := json.Unmarshal(raw, &l); err != nil {
			return nil, fmt.Errorf("%s:%d: %v", path, n+1, err)
		}
		out = append(out, l)
	}
	return out, nil
}

// encode writes lines back as JSONL, each without "server" when strip.
func encode(lines []line, strip bool) []byte {
	var b bytes.Buffer
	for _, l := range lines {
		m := l
		if strip {
			m = line{}
			for k, v := range l {
				if k != "server" {
					m[k] = v
				}
			}
		}
		data, err := json.Marshal(m)
		if err != nil {
			panic(err) // a map of RawMessage read from valid JSON
		}
		b.Write(data)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// run is one `bouncer check` of a replay: the session bytes, and for each of
// its call lines, the index of that call in the whole session.
type run struct {
	session []byte
	calls   []int
}

// plan turns a session file into the check runs that replay it in a layout
// and mode.
func plan(lines []line, layout string, mode Mode) []run {
	keep := lines
	if mode == ModeCompat {
		keep = nil
		for _, l := range lines {
			if _, ok := l["prompt"]; !ok {
				keep = append(keep, l)
			}
		}
	}
	if layout == "single" || mode == ModeNative {
		r := run{session: encode(keep, layout == "single")}
		n := 0
		for _, l := range keep {
			if _, ok := l["call"]; ok {
				r.calls = append(r.calls, n)
				n++
			}
		}
		return []run{r}
	}
	// Compat split: one proxy per server, each seeing only its own lines.
	byServer := map[string][]line{}
	callsOf := map[string][]int{}
	var order []string
	n := 0
	for _, l := range keep {
		s := l.server()
		if _, ok := byServer[s]; !ok {
			order = append(order, s)
		}
		byServer[s] = append(byServer[s], l)
		if _, ok := l["call"]; ok {
			callsOf[s] = append(callsOf[s], n)
			n++
		}
	}
	var runs []run
	for _, s := range order {
		if len(callsOf[s]) == 0 {
			continue // a server that only answered: nothing to judge
		}
		runs = append(runs, run{session: encode(byServer[s], true), calls: callsOf[s]})
	}
	return runs
}

// SessionFile returns the file a layout of a session is read from (the split
// file when the single one was not written: dropping "server" derives it).
func (s *Session) SessionFile(layout string) string {
	if f := s.Files[layout]; f != "" {
		return f
	}
	if f := s.Files["split"]; f != "" {
		return f
	}
	return s.Files["single"]
}

// Replay runs one session in one layout and returns one verdict per call line.
func (r *Runner) Replay(ctx context.Context, s *Session, layout string, mode Mode, set PolicySet) ([]Verdict, error) {
	lines, err := readLines(filepath.Join(r.Dir, s.SessionFile(layout)))
	if err != nil {
		return nil, err
	}
	out := make([]Verdict, len(s.Calls))
	got := 0
	for _, rn := range plan(lines, layout, mode) {
		vs, err := r.check(ctx, PolicyFiles(r.Dir, s.Suite, set), rn.session)
		if err != nil {
			return nil, fmt.Errorf("%s/%s (%s): %v", s.Suite, s.Name, layout, err)
		}
		if len(vs) != len(rn.calls) {
			return nil, fmt.Errorf("%s/%s (%s): %d verdicts for %d calls", s.Suite, s.Name, layout, len(vs), len(rn.calls))
		}
		for k, v := range vs {
			i := rn.calls[k]
			if i >= len(out) || s.Calls[i] != v.Tool {
				return nil, fmt.Errorf("%s/%s (%s): verdict %d is for %q, the manifest's call %d is not", s.Suite, s.Name, layout, k, v.Tool, i)
			}
			out[i] = v
			got++
		}
	}
	if got != len(s.Calls) {
		return nil, fmt.Errorf("%s/%s (%s): %d verdicts for %d calls", s.Suite, s.Name, layout, got, len(s.Calls))
	}
	return out, nil
}

// Outcome is the verdict on one send in one layout.
type Outcome struct {
	Session *Session
	Layout  string
	Send    Send
	Verdict
}

// Result is every send's outcome under one mode and policy set.
type Result struct {
	Mode     Mode
	Policy   PolicySet
	Outcomes []Outcome
}

// Run replays every session of the manifest in both layouts, with workers
// check runs at a time.
func (r *Runner) Run(ctx context.Context, m *Manifest, mode Mode, set PolicySet, workers int) (*Result, error) {
	if workers < 1 {
		workers = 1
	}
	type job struct {
		s      *Session
		layout string
	}
	jobs := make(chan job)
	var (
		mu       sync.Mutex
		outcomes []Outcome
		firstErr error
		wg       sync.WaitGroup
	)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				vs, err := r.Replay(ctx, j.s, j.layout, mode, set)
				mu.Lock()
				if err != nil {
					if firstErr == nil {
						firstErr = err
						cancel()
					}
				} else {
					for _, snd := range j.s.Sends {
						outcomes = append(outcomes, Outcome{Session: j.s, Layout: j.layout, Send: snd, Verdict: vs[snd.I]})
					}
				}
				mu.Unlock()
			}
		}()
	}
feed:
	for _, s := range m.Sessions {
		if len(s.Sends) == 0 {
			continue
		}
		for _, layout := range Layouts {
			select {
			case jobs <- job{s, layout}:
			case <-ctx.Done():
				break feed
			}
		}
	}
	close(jobs)
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	// A stable order, whatever the workers did.
	index := map[*Session]int{}
	for i, s := range m.Sessions {
		index[s] = i
	}
	sort.SliceStable(outcomes, func(a, b int) bool {
		oa, ob := outcomes[a], outcomes[b]
		if index[oa.Session] != index[ob.Session] {
			return index[oa.Session] < index[ob.Session]
		}
		if oa.Layout != ob.Layout {
			return oa.Layout < ob.Layout
		}
		return oa.Send.I < ob.Send.I
	})
	return &Result{Mode: mode, Policy: set, Outcomes: outcomes}, nil
}
