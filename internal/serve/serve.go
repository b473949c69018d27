// Package serve is Bouncer's own MCP server, for people writing policy: it
// answers "what would the proxy do with this call?", checks a policy
// document, shows the built-in packs and summarises the audit log.
//
// It is a separate server on purpose. Its tools never appear next to an
// upstream's tools in `bouncer run` (the original tool once leaked them into
// proxy mode, ungated), and nothing here forwards a call anywhere. Every
// tool is read-only: a check builds a throwaway engine and taint store and
// writes no audit line, because a hypothetical call in the real log would be
// evidence of something that never happened.
package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bouncer-mcp/bouncer/internal/setup"
)

// Options configure the server.
type Options struct {
	// Policy is the policy in force as the flags say (--policy,
	// --policy-dir, --trust and the state directory), loaded by
	// setup.LoadPolicy as bouncer run loads it, under any policy text a
	// check sends. It is read and checked again on every check, so an
	// author can edit a file and check again without a restart.
	Policy setup.Sources
	// AuditPath is the audit log audit_summary reads. It is only read.
	AuditPath string
	// WorkDir resolves relative paths: path arguments of checked calls, and
	// relative allowed_path_prefixes in policy text sent with a call.
	WorkDir string
	// Version is reported in the initialize result.
	Version string
}

// ErrPolicy is matched (errors.Is) by New's error when the policy in
// force does not load or verify: bouncer serve then exits 2, as run
// does for the same flags.
var ErrPolicy = errors.New("the policy in force does not load")

// policyError keeps the loader's own text (FILE:LINE: KEY: ...) while
// saying it is ErrPolicy.
type policyError struct{ err error }

func (e *policyError) Error() string        { return e.err.Error() }
func (e *policyError) Unwrap() error        { return e.err }
func (e *policyError) Is(target error) bool { return target == ErrPolicy }

// maxLimit bounds audit_summary's recent entries, so one call can't pull a
// whole log of mail bodies into a model's context.
const maxLimit = 1000

// New returns the server with its tools. It loads the policy in force
// once, as check_call will, so a broken or unverifiable file is reported
// before the server answers anything.
func New(opts Options) (*mcp.Server, error) {
	if _, err := setup.Load(setup.Config{Sources: opts.Policy, WorkDir: workDir(opts)}); err != nil {
		return nil, &policyError{err}
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	h := &handlers{opts: opts}
	s := mcp.NewServer(&mcp.Implementation{Name: "bouncer", Title: "Bouncer policy tools", Version: opts.Version}, &mcp.ServerOptions{
		Instructions: "Tools for writing and testing Bouncer policy. check_call is a dry run of the proxy's " +
			"decision: it writes nothing to the audit log and forwards nothing. None of these tools change any file.",
	})
	readOnly := &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: ptr(false)}
	s.AddTool(&mcp.Tool{
		Name:        "check_call",
		Title:       "Dry-run a tool call against a policy",
		Description: checkDescription,
		InputSchema: checkSchema(),
		Annotations: readOnly,
	}, h.checkCall)
	s.AddTool(&mcp.Tool{
		Name:        "validate_policy",
		Title:       "Validate a policy document",
		Description: "Parses policy YAML the way `bouncer run --policy` does, layered over the built-in packs. Returns valid:true with the tools it configures (and which pack entries it replaces), or valid:false with the file, line, key and message of the first problem.",
		InputSchema: validateSchema(),
		Annotations: readOnly,
	}, h.validatePolicy)
	s.AddTool(&mcp.Tool{
		Name:        "list_packs",
		Title:       "List the built-in policy packs",
		Description: "Lists the policy packs built into this bouncer, with the tools each configures and its YAML. Give name to see one pack.",
		InputSchema: packsSchema(),
		Annotations: readOnly,
	}, h.listPacks)
	s.AddTool(&mcp.Tool{
		Name:        "audit_summary",
		Title:       "Summarise the audit log",
		Description: "Counts the audit log's lines by verdict, rule, tool and server, lists the most recent entries (limit, default 20, at most 1000), names malformed lines, and verifies the hash chain. Reads only.",
		InputSchema: auditSchema(),
		Annotations: readOnly,
	}, h.auditSummary)
	return s, nil
}

// Run serves on stdio until the client closes stdin or ctx ends.
func Run(ctx context.Context, opts Options) error {
	s, err := New(opts)
	if err != nil {
		return err
	}
	rw := newStdio(os.Stdin, os.Stdout)
	return s.Run(ctx, &mcp.IOTransport{Reader: rw, Writer: rw})
}

type handlers struct{ opts Options }

func ptr[T any](v T) *T { return &v }

// decodeArgs decodes a call's arguments strictly: an unknown field is an
// error rather than a silently ignored typo (a misspelt policy_yaml would
// otherwise check the call against the wrong policy).
func decodeArgs(raw json.RawMessage, v any) error {
	if len(raw) == 0 || string(raw) == "null" {
		raw = json.RawMessage("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("arguments: %w", err)
	}
	if dec.More() {
		return errors.New("arguments: trailing data after the object")
	}
	return nil
}

// result is a tool result carrying v as structured content and as its JSON
// text, for clients that only read text.
func result(v any) (*mcp.CallToolResult, error) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encoding the result: %w", err)
	}
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: string(b)}},
		StructuredContent: json.RawMessage(b),
	}, nil
}

// toolError is a result with isError set: the model sees the message and
// can correct its call, as the MCP spec asks for input problems.
func toolError(format string, a ...any) (*mcp.CallToolResult, error) {
	return &mcp.CallToolResult{
		IsError: true,
		Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf(format, a...)}},
	}, nil
}

func workDir(opts Options) string {
	if opts.WorkDir != "" {
		return opts.WorkDir
	}
	wd, err := os.Getwd()
	if err != nil {
		return ""
	}
	return wd
}

func object(props map[string]*jsonschema.Schema, required ...string) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "object", Properties: props, Required: required, AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}}}
}
