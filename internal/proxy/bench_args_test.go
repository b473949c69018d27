package proxy

import (
	"strings"
	"testing"
)

// BenchmarkPairedWrite1MiB is a tools/call whose arguments carry 1 MiB (a
// file written through the server), direct and proxied in turn: the
// proxied side parses, judges, audits (elided) and re-encodes them.
func BenchmarkPairedWrite1MiB(b *testing.B) {
	content := strings.Repeat("lorem ipsum dolor sit amet, \"quoted\" and \\ back\n", 1<<20/50)
	benchPaired(b, "write_file", map[string]any{"path": b.TempDir() + "/bench.txt", "content": content})
}
