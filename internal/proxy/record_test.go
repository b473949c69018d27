package proxy

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bouncer-mcp/bouncer/internal/record"
)

// The record of a session has each call before the output that answers
// it, the output with the tool it came from, and a human's yes through the
// client right after the call it was asked for: a replay then asks about
// the first call, as the session did, and allows the second.
func TestRecordApproval(t *testing.T) {
	file := filepath.Join(t.TempDir(), "rec.jsonl")
	tape, err := record.Open(file, "helpdesk", func(msg string) { t.Error(msg) })
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, hopts{policy: helpdeskPolicy, tape: tape})
	cs := h.client(&mcp.ClientOptions{
		ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{}}, nil
		},
	})
	callTool(t, cs, "get_ticket", map[string]any{"id": "4711"})
	for _, subject := range []string{"hi", "again"} {
		if text, isErr := callTool(t, cs, "send_email", map[string]any{"to": "new@partner.example", "subject": subject}); isErr {
			t.Fatalf("approved send refused: %s", text)
		}
	}
	if err := tape.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	// Each line reduced to its kind and what says which call it is.
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var line struct {
			Output  json.RawMessage `json:"output"`
			Call    *struct{ Name string }
			Approve *struct{ Tool, Param, Destination string }
			Server  string
			Tool    string
		}
		if err := json.Unmarshal([]byte(l), &line); err != nil || line.Server != "helpdesk" {
			t.Fatalf("line %s: %v", l, err)
		}
		switch {
		case line.Call != nil:
			got = append(got, "call "+line.Call.Name)
		case line.Approve != nil:
			got = append(got, "approve "+line.Approve.Tool+" "+line.Approve.Param+" "+line.Approve.Destination)
		case line.Tool != "":
			got = append(got, "output of "+line.Tool)
		case strings.Contains(string(line.Output), `"tools":[`):
			got = append(got, "output (the tool list)")
		default:
			got = append(got, "output")
		}
	}
	want := []string{
		"output", // initialize's result
		"output (the tool list)",
		"call get_ticket", "output of get_ticket",
		"call send_email", "approve send_email to new@partner.example", "output of send_email",
		"call send_email", "output of send_email",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("record:\n%s\nwant:\n%s\n\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"), b)
	}
}
