package engine

import (
	"encoding/json"
	"strings"
	"testing"
)

// BenchmarkParseDecide1MiB is a write of a 1 MiB file: its params parsed,
// judged and re-encoded for the server and the audit line, as the proxy
// does for every call. Compare runs with benchstat.
func BenchmarkParseDecide1MiB(b *testing.B) {
	content := strings.Repeat("lorem ipsum dolor sit amet, \"quoted\" and \\ back\n", 1<<20/50)
	params, _ := json.Marshal(map[string]any{"name": "write_file", "arguments": map[string]any{"path": "/srv/out/x", "content": content}})
	e, _ := newEngine(b, testPolicy, Options{})
	b.SetBytes(int64(len(params)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c, err := ParseCall(params)
		if err != nil {
			b.Fatal(err)
		}
		if d := e.Decide(c); d.Verdict != Allow || len(d.Forward) < len(content) {
			b.Fatal(d.Verdict, d.Reason)
		}
	}
}
