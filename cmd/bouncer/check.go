package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/term"

	"github.com/bouncer-mcp/bouncer/internal/engine"
	"github.com/bouncer-mcp/bouncer/internal/policy"
	"github.com/bouncer-mcp/bouncer/internal/setup"
	"github.com/bouncer-mcp/bouncer/internal/statefile"
)

const checkSynopsis = "bouncer check [--policy FILE]... [--policy-dir DIR] [--trust FILE] [--tools FILE] [--name NAME] [SESSION.jsonl]\n\n" +
	"Replays a recorded session against a policy, offline. Each input line is one of\n" +
	`  {"output": RESULT}                                  record tool output as untrusted` + "\n" +
	`  {"call": {"name": TOOL, "arguments": {...}}}        decide a call as the proxy would` + "\n" +
	`  {"approve": {"tool": T, "param": P, "destination": D}}  a human's yes, for the rest of the run` + "\n" +
	`  {"prompt": "TEXT"}                                  what the user typed: it vouches` + "\n" +
	`with "server": NAME beside output, call or approve for a session of several servers (default --name),` + "\n" +
	`and "tool": NAME beside output to say which tool returned it (for trusted_output).` + "\n" +
	"bouncer run --record FILE writes a session in this form as it happens.\n" +
	"Each call prints {\"tool\",\"verdict\",\"reason\",\"rule\"}. Reads stdin without SESSION; with only\n" +
	"--policy (or --policy-dir) and no SESSION on a terminal, it checks the policy and exits.\n" +
	"The policy is the one bouncer run loads for the same --policy, --policy-dir and --trust:\n" +
	"an installed set verified as pulled, each file's signature checked under the trust configuration."

// isString reports whether a JSON value is a string.
func isString(v json.RawMessage) bool {
	var s string
	return json.Unmarshal(v, &s) == nil
}

func cmdCheck(args []string) error {
	fs, home := newFlags("check", checkSynopsis)
	var pf policyFlags
	pf.register(fs)
	toolsFile := fs.String("tools", "", "a saved tools/list result ({\"tools\": [...]}) to pin; without it every tool counts as pinned")
	name := fs.String("name", "", "the server's name (as in bouncer run --name), for lines with no \"server\"")
	if done, err := parseFlags(fs, args); done {
		return err
	}
	if fs.NArg() > 1 {
		return usageErr("%s", "check takes at most one session file")
	}

	dir, err := stateDir(*home)
	if err != nil {
		return badInput(fmt.Errorf("%v", err))
	}
	wd, _ := os.Getwd()
	dec, err := setup.Load(setup.Config{Sources: pf.sources(dir, ""), WorkDir: wd})
	if err != nil {
		return badInput(fmt.Errorf("%v", err))
	}
	var tools []json.RawMessage
	if *toolsFile != "" {
		if tools, err = readToolsFile(*toolsFile); err != nil {
			return badInput(fmt.Errorf("%v", err))
		}
		// Pin once now, so a bad list is reported before any line.
		if err := dec.Engine(*name).Pin(tools); err != nil {
			return badInput(fmt.Errorf("%s: %v", *toolsFile, err))
		}
	}
	var names []string
	if tools != nil {
		names = toolNames(tools)
	}
	for _, w := range policy.Lint(dec.Policy, names) {
		errorf("warning: %s", w)
	}
	r := &replayer{dec: dec, tools: tools, name: *name, engines: map[string]*engine.Engine{}}

	in, src := io.Reader(os.Stdin), "stdin"
	if fs.NArg() == 1 {
		f, err := statefile.Open(fs.Arg(0))
		if err != nil {
			return badInput(fmt.Errorf("%v", err))
		}
		defer f.Close()
		in, src = f, fs.Arg(0)
	} else if term.IsTerminal(int(os.Stdin.Fd())) {
		if pf.given() {
			// Nothing to replay: the policy loaded with every check run
			// makes, which is what was asked.
			fmt.Fprintf(os.Stdout, "policy OK: %s\n", strings.Join(dec.Files, ", "))
			return nil
		}
		errorf("check: waiting for session lines on stdin (one JSON object a line; Ctrl-D ends); give a SESSION file or --policy FILE to check a policy")
	}
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	if err := r.replay(in, out); err != nil {
		out.Flush()
		return badInput(fmt.Errorf("%s:%v", src, err))
	}
	return nil
}

// sessionLine is one line of a session file; exactly one of output, call,
// approve and prompt is set.
type sessionLine struct {
	Output json.RawMessage `json:"output"`
	// Call is the tools/call params, parsed by engine.ParseCall exactly as
	// the proxy parses them.
	Call    json.RawMessage `json:"call"`
	Approve *checkApprove   `json:"approve"`
	Prompt  *string         `json:"prompt"`
	// Server names the server of the client session that produced the
	// output or receives the call (default: --name).
	Server *string `json:"server"`
	// Tool names the tool that returned an output.
	Tool string `json:"tool"`
	// Elided says the output or call was too large to record whole (see
	// record.MaxLine): its long strings are digests.
	Elided bool `json:"elided"`
}

// replayer holds one check run: every server of the session shares the
// decider's session, and each has its own engine (pins and budgets), as
// each proxy of a client has.
type replayer struct {
	dec     *setup.Decider
	tools   []json.RawMessage // pinned on every server's engine; nil pins all
	name    string
	engines map[string]*engine.Engine
	elided  bool // a line was elided (warned about once)
}

func (r *replayer) engine(server string) *engine.Engine {
	if e, ok := r.engines[server]; ok {
		return e
	}
	e := r.dec.Engine(server)
	if r.tools != nil {
		_ = e.Pin(r.tools) // checked when the run started
	} else {
		e.PinAll()
	}
	r.engines[server] = e
	return e
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

func (r *replayer) replay(in io.Reader, out io.Writer) error {
	br := bufio.NewReader(in)
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	for n := 1; ; n++ {
		raw, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(raw)) > 0 {
			if lerr := r.line(raw, enc); lerr != nil {
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

func (r *replayer) line(raw []byte, enc *json.Encoder) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var l sessionLine
	if err := dec.Decode(&l); err != nil {
		if auditLine(raw) {
			return errors.New("this is a line of bouncer's audit log, which records each call and its verdict but not what the servers returned, " +
				"so taint can't be replayed from it; record a session with bouncer run --record FILE and check that file")
		}
		return fmt.Errorf("not a session line (want {\"output\"|\"call\"|\"approve\"|\"prompt\": ...}): %v", err)
	}
	set := 0
	for _, ok := range []bool{l.Output != nil, l.Call != nil, l.Approve != nil, l.Prompt != nil} {
		if ok {
			set++
		}
	}
	if set != 1 {
		return fmt.Errorf("a line holds exactly one of \"output\", \"call\", \"approve\" or \"prompt\"")
	}
	server := r.name
	if l.Server != nil {
		if l.Prompt != nil {
			return fmt.Errorf("a prompt belongs to the whole client session, not to a \"server\"")
		}
		if *l.Server == "" {
			return fmt.Errorf("\"server\" is empty")
		}
		server = *l.Server
	}
	if l.Tool != "" && l.Output == nil {
		return fmt.Errorf("\"tool\" goes beside \"output\" only")
	}
	if l.Elided {
		if l.Output == nil && l.Call == nil {
			return fmt.Errorf("\"elided\" goes beside \"output\" or \"call\" only")
		}
		r.warnElided()
	}
	eng := r.engine(server)
	switch {
	case l.Prompt != nil:
		r.dec.Session.RecordPrompt(*l.Prompt)
	case l.Output != nil:
		var store interface {
			Record(string)
			RecordJSON([]byte)
		} = r.dec.Session.Output(server)
		if l.Tool != "" && eng.TrustedOutput(l.Tool) {
			store = r.dec.Session.TrustedOutput(server)
		}
		if kind := eng.Directory(l.Tool); l.Tool != "" && kind != "" && !isString(l.Output) {
			// As the proxy does: a directory's entries are recorded
			// besides the output itself.
			r.dec.Session.Directory(kind).RecordJSON(l.Output)
		}
		if on, text := eng.AnchorRecords(l.Tool); l.Tool != "" && on && !isString(l.Output) {
			r.dec.Session.Anchors(text).RecordJSON(l.Output)
		}
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

// warnElided says, once a run, that a line was recorded elided.
func (r *replayer) warnElided() {
	if r.elided {
		return
	}
	r.elided = true
	errorf("warning: the session holds output or calls too large to record whole (\"elided\": true): their long strings are digests, " +
		"so a destination or value inside one is not replayed, and a verdict that rests on it may differ from the session's")
}

// auditLine reports whether raw is a line of the audit log.
func auditLine(raw []byte) bool {
	var a struct {
		TS      *string `json:"ts"`
		Verdict *string `json:"verdict"`
	}
	return json.Unmarshal(raw, &a) == nil && a.TS != nil && a.Verdict != nil
}

// maxToolsFile bounds a saved tools/list result.
const maxToolsFile = 64 << 20

// readToolsFile reads a saved tools/list result.
func readToolsFile(path string) ([]json.RawMessage, error) {
	data, err := statefile.ReadFile(path, maxToolsFile)
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
