package serve

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bouncer-mcp/bouncer/internal/filepos"
	"github.com/bouncer-mcp/bouncer/internal/policy"
)

func validateSchema() *jsonschema.Schema {
	return object(map[string]*jsonschema.Schema{
		"policy_yaml": {Type: "string", Description: "the policy document"},
		"name":        {Type: "string", Description: "the file name to use in messages (default policy.yaml)"},
	}, "policy_yaml")
}

type validateIn struct {
	PolicyYAML *string `json:"policy_yaml"`
	Name       string  `json:"name"`
}

// ValidateResult is validate_policy's answer.
type ValidateResult struct {
	Valid bool `json:"valid"`
	// Error is the first problem, when Valid is false.
	Error *PolicyError `json:"error,omitempty"`
	// Tools are the entries this document configures.
	Tools []ToolEntry `json:"tools,omitempty"`
	// Sandbox reports whether the document sets the sandbox key.
	Sandbox bool `json:"sandbox"`
}

// PolicyError is a policy problem, located: a *filepos.Error as JSON.
type PolicyError struct {
	File string `json:"file"`
	// Line is 1-based; 0 for a YAML syntax error the parser gave no line for.
	Line    int    `json:"line"`
	Key     string `json:"key,omitempty"`
	Message string `json:"message"`
	// Text is the whole error as `bouncer run` prints it.
	Text string `json:"text"`
}

// ToolEntry is one tool a document configures.
type ToolEntry struct {
	Name string `json:"name"`
	Entry
	// Replaces names the pack entry this one replaces whole, if any, on
	// the server that pack was written for: the pack's gate no longer
	// applies to the tool there.
	Replaces string `json:"replaces,omitempty"`
}

// validatePolicy judges the document the user passes, alone over the
// packs: it calls the parser (policy.LoadSources) directly because the
// question is "is this text right?", not "what is in force?", which
// check_call answers through setup.Load.
func (h *handlers) validatePolicy(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var in validateIn
	if err := decodeArgs(req.Params.Arguments, &in); err != nil {
		return toolError("validate_policy: %v", err)
	}
	if in.PolicyYAML == nil {
		return toolError("validate_policy: policy_yaml is required")
	}
	if len(*in.PolicyYAML) > maxPolicyBytes {
		return toolError("validate_policy: policy_yaml is larger than %d bytes", maxPolicyBytes)
	}
	name := in.Name
	if name == "" {
		name = "policy.yaml"
	}
	pol, err := policy.LoadSources(policy.Source{Name: name, Dir: workDir(h.opts), Data: []byte(*in.PolicyYAML)})
	if err != nil {
		var pe *filepos.Error
		if !errors.As(err, &pe) {
			pe = &filepos.Error{File: name, Msg: err.Error()}
		}
		return result(ValidateResult{Valid: false, Error: &PolicyError{
			File: pe.File, Line: pe.Line, Key: pe.Key, Message: pe.Msg, Text: pe.Error(),
		}})
	}
	out := ValidateResult{Valid: true, Sandbox: pol.Sandbox != nil, Tools: []ToolEntry{}}
	prefix := name + ":"
	for _, n := range pol.Names() {
		t, _ := pol.Lookup(n)
		if !strings.HasPrefix(t.Source, prefix) {
			continue
		}
		te := ToolEntry{Name: n, Entry: entryOf(t)}
		for _, pk := range policy.Packs() {
			if slices.Contains(pk.Tools, n) {
				te.Replaces = "pack " + pk.Name
			}
		}
		out.Tools = append(out.Tools, te)
	}
	return result(out)
}

func packsSchema() *jsonschema.Schema {
	return object(map[string]*jsonschema.Schema{
		"name": {Type: "string", Description: "one pack's name (e.g. gmail); all packs without it"},
	})
}

// PacksResult is list_packs' answer.
type PacksResult struct {
	Packs []PackInfo `json:"packs"`
}

// PackInfo is one built-in pack.
type PackInfo struct {
	Name  string   `json:"name"`
	Tools []string `json:"tools"`
	YAML  string   `json:"yaml"`
}

func (h *handlers) listPacks(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var in struct {
		Name string `json:"name"`
	}
	if err := decodeArgs(req.Params.Arguments, &in); err != nil {
		return toolError("list_packs: %v", err)
	}
	out := PacksResult{Packs: []PackInfo{}}
	var names []string
	for _, p := range policy.Packs() {
		names = append(names, p.Name)
		if in.Name != "" && !strings.EqualFold(in.Name, p.Name) {
			continue
		}
		tools := p.Tools
		if tools == nil {
			tools = []string{}
		}
		out.Packs = append(out.Packs, PackInfo{Name: p.Name, Tools: tools, YAML: string(p.Data)})
	}
	if in.Name != "" && len(out.Packs) == 0 {
		return toolError("list_packs: no pack named %q; the packs are: %s", in.Name, strings.Join(names, ", "))
	}
	return result(out)
}

func auditSchema() *jsonschema.Schema {
	return object(map[string]*jsonschema.Schema{
		"limit": {Type: "integer", Description: "how many of the most recent entries to list (default 20, 0 for none, at most 1000)",
			Minimum: ptr(0.0), Maximum: ptr(float64(maxLimit))},
	})
}

func (h *handlers) auditSummary(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var in struct {
		Limit *int `json:"limit"`
	}
	if err := decodeArgs(req.Params.Arguments, &in); err != nil {
		return toolError("audit_summary: %v", err)
	}
	limit := 20
	if in.Limit != nil {
		limit = *in.Limit
	}
	if limit < 0 || limit > maxLimit {
		return toolError("audit_summary: limit must be between 0 and %d, not %d", maxLimit, limit)
	}
	if h.opts.AuditPath == "" {
		return toolError("audit_summary: no audit log configured")
	}
	sum, err := Summarize(h.opts.AuditPath, limit)
	if err != nil {
		return toolError("audit_summary: %v", err)
	}
	return result(sum)
}

// statMissing reports whether path does not exist (as opposed to being
// unreadable, which is an error worth showing).
func statMissing(path string) (bool, error) {
	_, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("audit %s: %w", path, err)
	}
	return false, nil
}
