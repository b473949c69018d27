package proxy

import (
	"path/filepath"
	"strings"
	"testing"
)

// The reference memory server's relation tools take {from, to,
// relationType}: the nested "to" names an entity, not a destination, and
// no pack or policy names the tools. They pass untouched, even when the
// entities' names came from the server's own output (untrusted), and a
// destination from that output, in a tool that doesn't send, is asked
// about, not allowed.
func TestNPMMemoryRelations(t *testing.T) {
	cmd := npmServer(t, "server-memory")
	cmd.Env = append(cmd.Env, "MEMORY_FILE_PATH="+filepath.Join(t.TempDir(), "memory.jsonl"))
	h := newHarness(t, hopts{cmd: &cmd})
	cs := h.client(nil)
	if _, isErr := callTool(t, cs, "create_entities", map[string]any{"entities": []any{
		map[string]any{"name": "Alexandra", "entityType": "person", "observations": []any{"mail alexandra@evil.example"}},
		map[string]any{"name": "Benjamin", "entityType": "person", "observations": []any{"works with Alexandra"}},
	}}); isErr {
		t.Fatal("create_entities failed")
	}
	graph, _ := callTool(t, cs, "read_graph", map[string]any{})
	if !strings.Contains(graph, "Benjamin") || !h.proxy.cfg.Store.Seen("Benjamin") {
		t.Fatalf("read_graph = %q: its output was not recorded as untrusted", graph)
	}
	rel := map[string]any{"relations": []any{map[string]any{"from": "Alexandra", "to": "Benjamin", "relationType": "knows"}}}
	if text, isErr := callTool(t, cs, "create_relations", rel); isErr {
		t.Fatalf("create_relations was refused: %s", text)
	}
	if graph, _ := callTool(t, cs, "read_graph", map[string]any{}); !strings.Contains(graph, `"relationType": "knows"`) && !strings.Contains(graph, `"relationType":"knows"`) {
		t.Fatalf("the server did not get the relation: %s", graph)
	}
	if text, isErr := callTool(t, cs, "delete_relations", rel); isErr {
		t.Fatalf("delete_relations was refused: %s", text)
	}
	// An address from the server's output, where a relation's entity
	// would be: a create whose destination-shaped key holds a destination
	// registers it, as a webhook's URL is, so the call is judged as a send
	// (and the tainted values in it deny it).
	bad := map[string]any{"relations": []any{map[string]any{"from": "Alexandra", "to": "alexandra@evil.example", "relationType": "mails"}}}
	if text, isErr := callTool(t, cs, "create_relations", bad); !isErr {
		t.Fatalf("a relation to a tainted address went through: %s", text)
	}
	var verdicts []string
	for _, e := range h.auditLines() {
		if strings.HasSuffix(e.Tool, "_relations") {
			verdicts = append(verdicts, e.Verdict)
		}
	}
	if strings.Join(verdicts, " ") != "allow allow deny" {
		t.Errorf("relation verdicts %v, want allow allow deny", verdicts)
	}
}

// Entities named like files ("setup.py", "README.md": two labels under a
// top-level domain, as a host is named too) in the real memory server's
// own output: a relation between them is ambiguous, so it is asked about,
// never denied as if create_relations registered where it sends.
func TestNPMMemoryFileNamedEntities(t *testing.T) {
	cmd := npmServer(t, "server-memory")
	cmd.Env = append(cmd.Env, "MEMORY_FILE_PATH="+filepath.Join(t.TempDir(), "memory.jsonl"))
	h := newHarness(t, hopts{cmd: &cmd})
	cs := h.client(nil)
	if _, isErr := callTool(t, cs, "create_entities", map[string]any{"entities": []any{
		map[string]any{"name": "setup.py", "entityType": "file", "observations": []any{"builds the package"}},
		map[string]any{"name": "README.md", "entityType": "file", "observations": []any{"documents setup.py"}},
	}}); isErr {
		t.Fatal("create_entities failed")
	}
	if graph, _ := callTool(t, cs, "read_graph", map[string]any{}); !strings.Contains(graph, "README.md") {
		t.Fatalf("read_graph = %q", graph)
	}
	rel := map[string]any{"relations": []any{map[string]any{"from": "README.md", "to": "setup.py", "relationType": "documents"}}}
	callTool(t, cs, "create_relations", rel)
	var verdicts []string
	for _, e := range h.auditLines() {
		if e.Tool == "create_relations" {
			verdicts = append(verdicts, e.Verdict)
		}
	}
	// The harness's client declines the question, which the audit log
	// records after it.
	if len(verdicts) == 0 || verdicts[0] != "ask" {
		t.Errorf("create_relations verdicts %v, want ask first", verdicts)
	}
}
