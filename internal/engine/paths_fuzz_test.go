package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"golang.org/x/text/unicode/norm"

	"github.com/bouncer-mcp/bouncer/internal/fsresolve"
	"github.com/bouncer-mcp/bouncer/internal/pathtree"
	"github.com/bouncer-mcp/bouncer/internal/policy"
	"github.com/bouncer-mcp/bouncer/internal/taint"
)

// FuzzPathsAgainstKernel checks the path rules against the kernel. Each
// input builds a small tree in a temporary directory (directories, files,
// symlinks absolute and relative, loops, links out of the allowed prefix
// ROOT/out) and a path to write. Whenever the engine allows the write,
// every reading of it must land inside ROOT/out, as found by the inode the
// kernel really opened (or the directory it really made):
//
//   - the path as sent, opened by the kernel (openat with O_CREAT, mkdir);
//   - the path forwarded, opened by the kernel (a Go server);
//   - the path forwarded, as the reference filesystem server places it
//     (path.resolve, realpath, then NFC matching of missing names), with
//     its allowed directory the whole of ROOT.
//
// tree is a list of entries separated by ';': "d NAME", "f NAME" or
// "l NAME TARGET", NAME relative to ROOT; a TARGET starting with '/' is
// taken below ROOT, any other is the link's text. path starting with '/' is
// taken below ROOT; any other is relative to ROOT/out (the tool has
// relative_paths: workdir, the server's working directory being ROOT/out).
// A non-zero gen adds random entries and, when path is empty, a random path.
func FuzzPathsAgainstKernel(f *testing.F) {
	for _, s := range []struct {
		gen        uint64
		tree, path string
	}{
		{0, "d out/sub;d secret;l out/link /secret", "/out/link/../.ssh/x"},                      // .. after a link
		{0, "d secret;l out/rel ../secret", "/out/rel/../x"},                                     // relative link, ..
		{0, "d secret;l out/caf\u00e9 /secret", "/out/cafe\u0301/x"},                             // NFD of an NFC link
		{0, "d secret;l out/cafe\u0301 /secret", "/out/caf\u00e9"},                               // NFC of an NFD link
		{0, "d secret;l out/\u212aey /secret", "/out/Key/x"},                                     // Kelvin sign
		{0, "d docs;f docs/victim.txt", "victim.txt"},                                            // relative
		{0, "d out/sub/a;l out/deep sub/a", "/out/deep/../x"},                                    // .. after an inside link
		{0, "d out/sub;l out/inlink sub", "/out/inlink/../x"},                                    // readings agree
		{0, "d out/sub/a;l out/deep sub/a;d secret;l out/link2 /secret", "/out/deep/../link2/x"}, // kernel inside, cleaned outside
		{0, "d out", "/new/../out/x"},                                                            // mkdir -p would make /new
		{0, "l out/loop loop", "/out/loop/x"},                                                    // loop
		{0, "l out/a b;l out/b a", "/out/a"},                                                     // two-link loop
		{0, "d secret;l out/dl /secret/new", "/out/dl"},                                          // dangling, outside
		{0, "l out/up ..;d secret", "/out/up/secret/x"},                                          // link to the parent
		{0, "d out/sub", "/out//sub/./x/"},                                                       // spelling
		{0, "f out/file", "/out/file/../y"},                                                      // .. after a file
		{0, "d secret;l out/l1 l2;l out/l2 /secret", "/out/l1/../../out/x"},                      // chain
		{0, "d out/sub;l out/sub/back ../..", "/out/sub/back/out/x"},                             // back up through a link
		{0, "d out/x;d secret;l out/x/s /secret", "x/s/../../y"},                                 // relative with a link
		{0, "d secret;l out/caf\u00e9 /secret", "cafe\u0301/z"},                                  // relative NFD
		{1, "", ""}, {2, "", ""}, {3, "", ""}, {42, "d secret", ""}, {7, "", "/out/"},
	} {
		f.Add(s.gen, s.tree, s.path)
	}
	f.Fuzz(fuzzPaths)
}

func fuzzPaths(t *testing.T, gen uint64, tree, path string) {
	if len(tree) > 2000 || len(path) > 300 {
		return
	}
	root := fuzzRoot(t)
	out := filepath.Join(root, "out")
	if err := os.Mkdir(out, 0o700); err != nil {
		t.Fatal(err)
	}
	entries := strings.Split(tree, ";")
	var rng *rand.Rand
	if gen != 0 {
		rng = rand.New(rand.NewPCG(gen, gen^0x9e3779b97f4a7c15))
		entries = append(entries, randomTree(rng)...)
		if path == "" {
			path = randomPath(rng)
		}
	}
	if len(entries) > 40 {
		entries = entries[:40]
	}
	for _, e := range entries {
		build(root, e)
	}
	if path == "" {
		return
	}

	y := fmt.Sprintf("write_file:\n  write_params: [path]\n  allowed_path_prefixes: [%q]\n  relative_paths: workdir\n", out)
	y += strings.ReplaceAll(y, "write_file", "create_directory")
	pol, err := policy.LoadSources(policy.Source{Name: "fuzz.yaml", Data: []byte(y)})
	if err != nil {
		t.Fatal(err)
	}
	e := New(pol, taint.NewStore(), Options{Resolve: fsresolve.Existing, WorkDir: out})
	e.PinAll()

	sent := path
	if strings.HasPrefix(path, "/") {
		sent = root + path
	}
	rawAbs := sent
	if !strings.HasPrefix(sent, "/") {
		rawAbs = out + "/" + sent
	}
	args, _ := json.Marshal(map[string]string{"path": sent})
	for _, op := range []string{"write_file", "create_directory"} {
		d := e.Decide(Call{Tool: op, Args: args})
		if d.Verdict != Allow {
			if d.Verdict != Deny || d.Reason == "" {
				t.Fatalf("%s %q: %+v", op, sent, d)
			}
			continue
		}
		var fwd struct {
			Arguments struct {
				Path string `json:"path"`
			} `json:"arguments"`
		}
		if err := json.Unmarshal(d.Forward, &fwd); err != nil {
			t.Fatal(err)
		}
		p := fwd.Arguments.Path
		if !filepath.IsAbs(p) || filepath.Clean(p) != p || !pathtree.Within(p, out) {
			t.Fatalf("%s %q: forwarded %q, not a clean absolute path under %s", op, sent, p, out)
		}
		readings := map[string]string{"the path as sent": rawAbs, "the path forwarded": p}
		if np, ok := nodeValidate(p, root); ok {
			readings["the reference server's reading"] = np
		}
		for what, target := range readings {
			for _, landed := range kernelLands(t, root, op, target) {
				if !pathtree.Within(landed, out) {
					t.Fatalf("%s %q allowed, but for %s (%q) the kernel wrote %q, outside %s", op, sent, what, target, landed, out)
				}
			}
		}
	}
}

// fuzzRoot returns a new empty directory, removed when the test ends. It is
// made on tmpfs when there is one (/dev/shm): the same path semantics, and
// many times faster than a disk for the creating and removing each input
// does.
func fuzzRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("/dev/shm", "bouncer-paths-")
	if err != nil {
		dir = t.TempDir()
	} else {
		t.Cleanup(func() { os.RemoveAll(dir) })
	}
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// build creates one tree entry below root, ignoring what can't be made.
func build(root, entry string) {
	parts := strings.SplitN(entry, " ", 3)
	if len(parts) < 2 || parts[1] == "" || strings.ContainsRune(entry, 0) {
		return
	}
	name := parts[1]
	for _, c := range strings.Split(name, "/") {
		if c == ".." || strings.HasPrefix(name, "/") {
			return
		}
	}
	// Never create through a link made earlier: that could write outside
	// root.
	cs := strings.Split(filepath.Clean(name), "/")
	for i := range cs {
		fi, err := os.Lstat(filepath.Join(root, filepath.Join(cs[:i+1]...)))
		if err != nil {
			break
		}
		if fi.Mode()&fs.ModeSymlink != 0 || (i == len(cs)-1 && parts[0] != "d") {
			return
		}
	}
	full := filepath.Join(root, name)
	switch parts[0] {
	case "d":
		_ = os.MkdirAll(full, 0o700)
	case "f":
		_ = os.MkdirAll(filepath.Dir(full), 0o700)
		_ = os.WriteFile(full, nil, 0o600)
	case "l":
		if len(parts) < 3 || parts[2] == "" {
			return
		}
		target := parts[2]
		if strings.HasPrefix(target, "/") {
			target = root + target
		}
		_ = os.MkdirAll(filepath.Dir(full), 0o700)
		_ = os.Symlink(target, full)
	}
}

// names the generator draws from: look-alikes under normalization among
// them.
var fuzzNames = []string{"out", "sub", "a", "b", "x", "secret", "caf\u00e9", "cafe\u0301", "\u212a", "K", "link"}

func pick[T any](rng *rand.Rand, xs []T) T { return xs[rng.IntN(len(xs))] }

func randomRel(rng *rand.Rand, n int, dots bool) string {
	var cs []string
	for i := 0; i < n; i++ {
		c := pick(rng, fuzzNames)
		if dots {
			switch rng.IntN(6) {
			case 0:
				c = ".."
			case 1:
				c = "."
			}
		}
		cs = append(cs, c)
	}
	return strings.Join(cs, "/")
}

func randomTree(rng *rand.Rand) []string {
	var out []string
	for i, n := 0, 2+rng.IntN(7); i < n; i++ {
		name := randomRel(rng, 1+rng.IntN(3), false)
		if rng.IntN(2) == 0 {
			name = "out/" + randomRel(rng, 1+rng.IntN(2), false)
		}
		switch rng.IntN(4) {
		case 0:
			out = append(out, "d "+name)
		case 1:
			out = append(out, "f "+name)
		default:
			var target string
			switch rng.IntN(4) {
			case 0: // absolute, below ROOT
				target = "/" + randomRel(rng, 1+rng.IntN(3), true)
			case 1: // itself or a sibling: loops
				target = pick(rng, fuzzNames)
			default: // relative, often climbing
				target = randomRel(rng, 1+rng.IntN(4), true)
			}
			out = append(out, "l "+name+" "+target)
		}
	}
	return out
}

func randomPath(rng *rand.Rand) string {
	p := randomRel(rng, 1+rng.IntN(5), true)
	switch rng.IntN(5) {
	case 0:
		p = "/" + p
	case 1:
		// relative
	default:
		p = "/out/" + p
	}
	switch rng.IntN(6) {
	case 0:
		p += "/"
	case 1:
		p = strings.Replace(p, "/", "//", 1)
	case 2:
		p = norm.NFD.String(p)
	case 3:
		p = norm.NFC.String(p)
	}
	return p
}

// kernelLands performs op on target as a Go server would (os.OpenFile
// with O_CREATE, os.MkdirAll as node's mkdir -p) and returns every real
// path it created or, for a file that already existed, the real path of
// the file it opened (found by inode), then undoes what it created.
func kernelLands(t *testing.T, root, op, target string) []string {
	t.Helper()
	before := snapshot(root)
	_, statErr := os.Stat(target)
	var opened os.FileInfo
	made := false
	switch op {
	case "write_file":
		if f, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY, 0o600); err == nil {
			opened, _ = f.Stat()
			f.Close()
		}
	case "create_directory":
		// A failure may still have made parents.
		made = os.MkdirAll(target, 0o700) == nil && statErr != nil
	}
	var landed []string
	for p := range snapshot(root) {
		if !before[p] {
			landed = append(landed, p)
		}
	}
	// Undo, deepest first.
	sort.Sort(sort.Reverse(sort.StringSlice(landed)))
	for _, p := range landed {
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
	}
	if made && len(landed) == 0 {
		t.Fatalf("%s %q made a directory outside %s", op, target, root)
	}
	if opened != nil && len(landed) == 0 {
		for p := range before {
			if li, err := os.Lstat(p); err == nil && os.SameFile(li, opened) {
				return []string{p}
			}
		}
		t.Fatalf("%s %q opened a file outside %s", op, target, root)
	}
	return landed
}

// snapshot lists every path below root, symlinks not followed.
func snapshot(root string) map[string]bool {
	m := map[string]bool{}
	_ = filepath.WalkDir(root, func(p string, _ fs.DirEntry, err error) error {
		if err == nil {
			m[p] = true
		}
		return nil
	})
	return m
}

// nodeValidate is the reference filesystem server's validatePath (dist/
// lib.js) for an absolute path, with allowed its only allowed directory:
// path.resolve, then realpath, or for a missing path each component
// matched against its directory's entries by NFC. ok is false when the
// server refuses.
func nodeValidate(p, allowed string) (string, bool) {
	abs := filepath.Clean(p)
	within := func(x string) bool { return pathtree.Within(x, allowed) }
	if !within(abs) {
		return "", false
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		return real, within(real)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", false
	}
	cur, err := filepath.EvalSymlinks(allowed)
	if err != nil {
		return "", false
	}
	rel, _ := filepath.Rel(allowed, abs)
	parts := strings.Split(rel, "/")
	for i, part := range parts {
		if part == "." || part == "" {
			continue
		}
		d, err := os.Open(cur)
		if err != nil {
			return "", false
		}
		names, err := d.Readdirnames(-1)
		d.Close()
		if err != nil {
			return "", false
		}
		var matches []string
		for _, n := range names {
			if n == part {
				matches = []string{n}
				break
			}
			if norm.NFC.String(n) == norm.NFC.String(part) {
				matches = append(matches, n)
			}
		}
		switch len(matches) {
		case 0:
			return filepath.Join(append([]string{cur}, parts[i:]...)...), true
		case 1:
		default:
			return "", false
		}
		real, err := filepath.EvalSymlinks(filepath.Join(cur, matches[0]))
		if err != nil || !within(real) {
			return "", false
		}
		cur = real
	}
	return cur, true
}
