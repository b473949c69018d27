package transport

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
)

// BenchmarkConnRead1MiB reads one tools/call frame whose arguments carry
// 1 MiB, as the pump does for every client message: find the frame's end,
// then parse it. The content is escape-dense text (an escape every 10 bytes
// or so) or prose (a line end every 62 bytes).
func BenchmarkConnRead1MiB(b *testing.B) {
	for _, c := range []struct{ name, content string }{
		{"dense", strings.Repeat("lorem ipsum dolor sit amet, \"quoted\" and \\ back\n", 1<<20/50)},
		{"prose", strings.Repeat("the quick brown fox jumps over the lazy dog, again and again.\n", 1<<20/62)},
	} {
		b.Run(c.name, func(b *testing.B) {
			params, _ := json.Marshal(map[string]any{"name": "write_file", "arguments": map[string]any{"path": "/srv/out/x", "content": c.content}})
			frame := append([]byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":`), params...)
			frame = append(frame, "}\n"...)
			b.SetBytes(int64(len(frame)))
			b.ReportAllocs()
			r := bytes.NewReader(frame)
			for i := 0; i < b.N; i++ {
				r.Reset(frame)
				c := NewConn(r, io.Discard)
				if _, err := c.Read(context.Background()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
