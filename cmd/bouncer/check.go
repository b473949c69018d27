package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/bouncer-mcp/bouncer/internal/engine"
	"github.com/bouncer-mcp/bouncer/internal/setup"
	"github.com/bouncer-mcp/bouncer/internal/taint"
)

const checkSynopsis = "bouncer check [--policy FILE]... [--tools FILE] [--name NAME] [SESSION.jsonl]\n\n" +
	"Replays a recorded session against a policy, offline. Each input line is one of\n" +
	`  {"output": RESULT}                                  record tool output as untrusted` + "\n" +
	`  {"call": {"name": TOOL, "arguments": {...}}}        decide a call as the proxy would` + "\n" +
	`  {"approve": {"tool": T, "param": P, "destination": D}}  a human's yes, for the rest of the run` + "\n" +
	"and each call prints {\"tool\",\"verdict\",\"reason\",\"rule\"}. Reads stdin without SESSION."

func cmdCheck(args []string) int {
	fs, home := newFlags("check", checkSynopsis)
	var policies multiFlag
	fs.Var(&policies, "policy", "policy file layered over the built-in packs (repeatable)")
	toolsFile := fs.String("tools", "", "a saved tools/list result ({\"tools\": [...]}) to pin; without it every tool counts as pinned")
	fs.String("name", "", "the server's name (as in bouncer run --name)")
	if done, st := parseFlags(fs, args); done {
		return st
	}
	if fs.NArg() > 1 {
		return usageError("check takes at most one session file")
	}

	dir, err := stateDir(*home)
	if err != nil {
		errorf("%v", err)
		return exitUsage
	}
	wd, _ := os.Getwd()
	dec, err := setup.Load(setup.Config{Policies: policies, StateDir: dir, WorkDir: wd})
	if err != nil {
		errorf("%v", err)
		return exitUsage
	}
	eng, store := dec.Engine, dec.Store
	if *toolsFile != "" {
		tools, err := readToolsFile(*toolsFile)
		if err != nil {
			errorf("%v", err)
			return exitUsage
		}
		if err := eng.Pin(tools); err != nil {
			errorf("%s: %v", *toolsFile, err)
			return exitUsage
		}
	} else {
		eng.PinAll()
	}

	in, name := io.Reader(os.Stdin), "stdin"
	if fs.NArg() == 1 {
		f, err := os.Open(fs.Arg(0))
		if err != nil {
			errorf("%v", err)
			return exitUsage
		}
		defer f.Close()
		in, name = f, fs.Arg(0)
	}
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	if err := replay(eng, store, in, out); err != nil {
		out.Flush()
		errorf("%s:%v", name, err)
		return exitUsage
	}
	return exitOK
}

// sessionLine is one line of a session file; exactly one field is set.
type sessionLine struct {
	Output json.RawMessage `json:"output"`
	// Call is the tools/call params, parsed by engine.ParseCall exactly as
	// the proxy parses them.
	Call    json.RawMessage `json:"call"`
	Approve *checkApprove   `json:"approve"`
}

type checkApprove struct {
	Tool        string `json:"tool"`
	Param       string `json:"param"`
	Destination string `json:"destination"`
}

type checkVerdict struct {
	Tool    string `json:"tool"`
	Verdict string `json:"verdict"`
	Reason  string `json:"reason"`
	Rule    string `json:"rule"`
}

// lineError names the session line at fault; it prints as "N: why".
type lineError struct {
	line int
	err  error
}

func (e *lineError) Error() string { return fmt.Sprintf("%d: %v", e.line, e.err) }

func replay(eng *engine.Engine, store *taint.Store, in io.Reader, out io.Writer) error {
	r := bufio.NewReader(in)
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	for n := 1; ; n++ {
		raw, err := r.ReadBytes('\n')
		if len(bytes.TrimSpace(raw)) > 0 {
			if lerr := replayLine(eng, store, raw, enc); lerr != nil {
				return &lineError{n, lerr}
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return &lineError{n, err}
		}
	}
}

func replayLine(eng *engine.Engine, store *taint.Store, raw []byte, enc *json.Encoder) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var l sessionLine
	if err := dec.Decode(&l); err != nil {
		return fmt.Errorf("not a session line (want {\"output\"|\"call\"|\"approve\": ...}): %v", err)
	}
	set := 0
	for _, ok := range []bool{l.Output != nil, l.Call != nil, l.Approve != nil} {
		if ok {
			set++
		}
	}
	if set != 1 {
		return fmt.Errorf("a line holds exactly one of \"output\", \"call\" or \"approve\"")
	}
	switch {
	case l.Output != nil:
		var s string
		if json.Unmarshal(l.Output, &s) == nil {
			store.Record(s)
		} else {
			store.RecordJSON(l.Output)
		}
	case l.Call != nil:
		c, err := engine.ParseCall(l.Call)
		var ce *engine.CallError
		switch {
		case errors.As(err, &ce) && ce.Invalid:
			return fmt.Errorf("call: %v", err)
		case err != nil:
			// Well-formed JSON that run refuses to judge: the same deny.
			return enc.Encode(checkVerdict{Tool: c.Tool, Verdict: string(engine.Deny), Reason: "malformed tools/call: " + err.Error(), Rule: string(engine.RuleDefault)})
		}
		d := eng.Decide(c)
		return enc.Encode(checkVerdict{Tool: c.Tool, Verdict: string(d.Verdict), Reason: d.Reason, Rule: string(d.Rule)})
	case l.Approve != nil:
		if l.Approve.Tool == "" {
			return fmt.Errorf("approve has no \"tool\"")
		}
		eng.Approve(l.Approve.Tool, l.Approve.Param, l.Approve.Destination)
	}
	return nil
}

// readToolsFile reads a saved tools/list result.
func readToolsFile(path string) ([]json.RawMessage, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var list struct {
		Tools []json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(data, &list); err != nil {
		return nil, fmt.Errorf("%s: not a tools/list result: %w", path, err)
	}
	if list.Tools == nil {
		return nil, fmt.Errorf("%s: no \"tools\" array", path)
	}
	return list.Tools, nil
}
