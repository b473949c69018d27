package serve

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bouncer-mcp/bouncer/internal/engine"
	"github.com/bouncer-mcp/bouncer/internal/policy"
	"github.com/bouncer-mcp/bouncer/internal/setup"
)

const checkDescription = "Dry run: decides one tool call the way `bouncer run` would, and returns verdict (allow, deny or ask), " +
	"reason, rule and the policy entry that applied. The policy is the built-in packs, then the server's --policy files, " +
	"then policy_yaml if given (a later entry for a tool replaces an earlier one). untrusted_output is what the upstream " +
	"returned earlier in the session (strings, or CallToolResult objects); a destination that appears in it is tainted. " +
	"tool_definition (the tool's tools/list entry) pins the tool as the proxy would; without it the tool counts as pinned. " +
	"approvals are a human's earlier yes for a destination. Nothing is written to the audit log and nothing is forwarded."

func checkSchema() *jsonschema.Schema {
	return object(map[string]*jsonschema.Schema{
		"tool":      {Type: "string", Description: "the tool's name, as the upstream lists it", MinLength: ptr(1)},
		"arguments": {Type: "object", Description: "the call's arguments, as the client would send them"},
		"untrusted_output": {
			Type:        "array",
			Description: "upstream output seen earlier in the session: strings, or CallToolResult objects",
			Items:       &jsonschema.Schema{Types: []string{"string", "object"}},
		},
		"policy_yaml": {Type: "string", Description: "policy YAML layered over the packs and the server's --policy files"},
		"tool_definition": {
			Type:        "object",
			Description: "the tool's entry from tools/list ({name, inputSchema, ...}); pins it as the proxy would",
		},
		"approvals": {
			Type:        "array",
			Description: "a human's earlier approvals of one destination of one argument of this tool",
			Items: object(map[string]*jsonschema.Schema{
				"param":       {Type: "string"},
				"destination": {Type: "string"},
			}, "param", "destination"),
		},
	}, "tool")
}

type checkIn struct {
	Tool            string            `json:"tool"`
	Arguments       json.RawMessage   `json:"arguments"`
	UntrustedOutput []json.RawMessage `json:"untrusted_output"`
	PolicyYAML      *string           `json:"policy_yaml"`
	ToolDefinition  json.RawMessage   `json:"tool_definition"`
	Approvals       []struct {
		Param       string `json:"param"`
		Destination string `json:"destination"`
	} `json:"approvals"`
}

// CheckResult is check_call's answer.
type CheckResult struct {
	Tool    string `json:"tool"`
	Verdict string `json:"verdict"`
	Reason  string `json:"reason"`
	Rule    string `json:"rule"`
	// Asks lists the destinations a human would be asked about.
	Asks []Dest `json:"asks,omitempty"`
	// Entry is the policy entry that applied to the tool.
	Entry Entry `json:"entry"`
	// Audited is always false: a dry run writes no audit line.
	Audited bool `json:"audited"`
}

// Dest is one destination of one argument.
type Dest struct {
	Param string `json:"param"`
	Value string `json:"value"`
}

// Entry describes a tool's policy entry.
type Entry struct {
	// Source is "pack NAME", "FILE:LINE", or "fallback" for a tool no pack
	// or file names (its sinks come from destination-shaped argument names).
	Source              string   `json:"source"`
	Exfiltrating        bool     `json:"exfiltrating"`
	SinkParams          []string `json:"sink_params,omitempty"`
	TrustedDestinations []string `json:"trusted_destinations,omitempty"`
	WriteParams         []string `json:"write_params,omitempty"`
	AllowedPathPrefixes []string `json:"allowed_path_prefixes,omitempty"`
	// RelativePaths is how a relative write path is read ("deny",
	// "workdir" or a directory); set when paths are confined.
	RelativePaths string `json:"relative_paths,omitempty"`
	MaxCalls      *int   `json:"max_calls,omitempty"`
}

func entryOf(t *policy.Tool) Entry {
	relative := ""
	if len(t.AllowedPathPrefixes) > 0 {
		relative = t.RelativePaths.String()
	}
	return Entry{
		Source:              t.Source,
		Exfiltrating:        t.Exfiltrating,
		SinkParams:          t.SinkParams,
		TrustedDestinations: t.TrustedDestinations,
		WriteParams:         t.WriteParams,
		AllowedPathPrefixes: t.AllowedPathPrefixes,
		RelativePaths:       relative,
		MaxCalls:            t.MaxCalls,
	}
}

func (h *handlers) checkCall(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var in checkIn
	if err := decodeArgs(req.Params.Arguments, &in); err != nil {
		return toolError("check_call: %v", err)
	}
	if in.Tool == "" {
		return toolError("check_call: tool is required")
	}
	args := in.Arguments
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	if !isObject(args) {
		return toolError("check_call: arguments must be a JSON object")
	}

	wd := workDir(h.opts)
	var extra []policy.Source
	if in.PolicyYAML != nil {
		if len(*in.PolicyYAML) > maxPolicyBytes {
			return toolError("check_call: policy_yaml is larger than %d bytes", maxPolicyBytes)
		}
		extra = append(extra, policy.Source{Name: "policy_yaml", Dir: wd, Data: []byte(*in.PolicyYAML)})
	}
	dec, err := setup.Load(setup.Config{Sources: h.opts.Policy, Extra: extra, WorkDir: wd})
	if err != nil {
		return toolError("check_call: policy: %v", err)
	}
	eng := dec.Engine("")
	store := dec.Session.Output("")
	for i, out := range in.UntrustedOutput {
		var s string
		switch {
		case json.Unmarshal(out, &s) == nil:
			store.Record(s)
		case isObject(out):
			store.RecordJSON(out)
		default:
			return toolError("check_call: untrusted_output[%d] is neither a string nor an object", i)
		}
	}

	if len(in.ToolDefinition) > 0 {
		if err := eng.Pin([]json.RawMessage{in.ToolDefinition}); err != nil {
			return toolError("check_call: tool_definition: %v", err)
		}
	} else {
		eng.PinAll()
	}
	for _, a := range in.Approvals {
		eng.Approve(in.Tool, a.Param, a.Destination)
	}

	// The call is parsed as the proxy parses a client's tools/call params.
	name, _ := json.Marshal(in.Tool)
	c, err := engine.ParseCall(json.RawMessage(`{"name":` + string(name) + `,"arguments":` + string(args) + `}`))
	var d engine.Decision
	if err != nil {
		d = engine.Decision{Verdict: engine.Deny, Rule: engine.RuleDefault, Reason: "malformed tools/call: " + err.Error()}
	} else {
		d = eng.Decide(c)
	}
	out := CheckResult{
		Tool:    in.Tool,
		Verdict: string(d.Verdict),
		Reason:  d.Reason,
		Rule:    string(d.Rule),
		Entry:   entryOf(eng.Entry(in.Tool, argValues(args))),
	}
	for _, a := range d.Asks {
		out.Asks = append(out.Asks, Dest{Param: a.Param, Value: a.Value})
	}
	return result(out)
}

// maxPolicyBytes bounds a policy document, as policy.ReadFile bounds a file.
const maxPolicyBytes = policy.MaxFileSize

func isObject(raw json.RawMessage) bool {
	s := strings.TrimSpace(string(raw))
	return strings.HasPrefix(s, "{") && json.Valid(raw)
}

// argValues reads the arguments of a call, as the fallback reads them.
func argValues(args json.RawMessage) map[string]any {
	var m map[string]any
	if json.Unmarshal(args, &m) != nil {
		return nil
	}
	return m
}
