package proxy

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bouncer-mcp/bouncer/internal/testsupport/need"
)

// BenchmarkPairedFilesystemWrite1MiB writes a 1 MiB file through the npm
// reference filesystem server (testdata/npm), directly and through a real
// `bouncer run` with a policy that confines write_file to the directory, in
// turn. It is the case the issue measured from outside: a fast server, so
// the ratio shows what judging, auditing and re-encoding 1 MiB of arguments
// costs.
func BenchmarkPairedFilesystemWrite1MiB(b *testing.B) {
	benchFilesystemWrite(b, strings.Repeat("lorem ipsum dolor sit amet, \"quoted\" and \\ back\n", 1<<20/50))
}

// BenchmarkPairedFilesystemWrite1MiBText is the same write with prose: a
// line end every 62 bytes, no quotes or backslashes.
func BenchmarkPairedFilesystemWrite1MiBText(b *testing.B) {
	benchFilesystemWrite(b, strings.Repeat("the quick brown fox jumps over the lazy dog, again and again.\n", 1<<20/62))
}

func benchFilesystemWrite(b *testing.B, content string) {
	script := need.NPM(b, "@modelcontextprotocol/server-filesystem/dist/index.js")
	node := need.Node(b)
	dir := b.TempDir()
	root := filepath.Join(dir, "root")
	if err := os.Mkdir(root, 0o700); err != nil {
		b.Fatal(err)
	}
	root, _ = filepath.EvalSymlinks(root)
	policy := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(policy, []byte("write_file:\n  write_params: [path]\n  allowed_path_prefixes: [\""+root+"\"]\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	connect := func(proxied bool) *mcp.ClientSession {
		cmd := exec.Command(node, script, root)
		if proxied {
			cmd = exec.Command(bouncerBinary(b), "run", "--sandbox", "off", "--policy", policy, "--", node, script, root)
		}
		cmd.Env = append(os.Environ(), "BOUNCER_HOME="+benchHome(b, dir))
		cmd.Dir = dir
		return commandBenchSession(b, cmd)
	}
	args := map[string]any{"path": filepath.Join(root, "bench.txt"), "content": content}
	pairedCalls(b, connect(false), connect(true), "write_file", args)
}
