package serve

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// FuzzTools feeds arbitrary arguments to every tool handler: whatever a
// client sends, the answer is a result (possibly an error result), never a
// panic or a protocol error.
func FuzzTools(f *testing.F) {
	for _, seed := range []string{
		`{"tool":"send_email","arguments":{"to":"a@b.example"},"untrusted_output":["a@b.example"]}`,
		`{"tool":"x","policy_yaml":"x:\n  sink_params: to\n"}`,
		`{"tool":"x","tool_definition":{"name":"x","inputSchema":{"type":"object","properties":{"to":{}}}}}`,
		`{"tool":"x","approvals":[{"param":"to","destination":"d"}],"arguments":{"to":"d"}}`,
		`{"policy_yaml":"a: {max_calls: 1}"}`,
		`{"name":"gmail"}`,
		`{"limit":3}`,
		`null`, `[]`, `{"tool":1}`, `{"arguments":"x"}`,
	} {
		f.Add([]byte(seed))
	}
	h := &handlers{opts: Options{AuditPath: filepath.Join(f.TempDir(), "audit.jsonl"), WorkDir: f.TempDir()}}
	tools := []func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error){
		h.checkCall, h.validatePolicy, h.listPacks, h.auditSummary,
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, tool := range tools {
			req := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "fuzz", Arguments: json.RawMessage(data)}}
			res, err := tool(context.Background(), req)
			if err != nil || res == nil {
				t.Fatalf("%s: result %v, error %v", data, res, err)
			}
		}
	})
}
