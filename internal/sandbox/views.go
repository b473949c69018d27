package sandbox

import (
	"path/filepath"
	"strconv"
	"strings"

	"github.com/bouncer-mcp/bouncer/internal/pathtree"
)

// A bind mount covers a path, not a file: where the file system that holds
// an own file is mounted at a second place too (a bind mount of a home
// directory elsewhere, a file system's top mounted beside a subvolume), the
// file is reachable there as well. views finds those places in the mount
// table, so that the launcher covers them too.

// mountEntry is one line of /proc/self/mountinfo: the file system (its
// device), the directory of it mounted (root) and where (point).
type mountEntry struct {
	dev, root, point string
}

// parseMountinfo reads /proc/PID/mountinfo. Lines it can't read are
// skipped: a view it misses is a view left to the argument checks, as
// without this.
func parseMountinfo(s string) []mountEntry {
	var out []mountEntry
	for _, line := range strings.Split(s, "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		out = append(out, mountEntry{dev: f[2], root: unescapeMount(f[3]), point: unescapeMount(f[4])})
	}
	return out
}

// unescapeMount undoes the kernel's octal escapes (\040 for a space) in a
// mountinfo path.
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// views returns the other paths that show what the absolute, resolved path
// p shows, by the mount table: p lies in the mount with the longest mount
// point above it (the last one mounted there), at some path of that file
// system; every other mount of the same file system whose root holds that
// path shows it too. Mounts below such a view may hide it again: the
// caller checks each view leads to the same file.
func views(mounts []mountEntry, p string) []string {
	at := -1
	for i, m := range mounts {
		if pathtree.Within(p, m.point) && (at < 0 || len(m.point) >= len(mounts[at].point)) {
			at = i
		}
	}
	if at < 0 {
		return nil
	}
	rest, _ := pathtree.Below(p, mounts[at].point)
	inFS := filepath.Join(mounts[at].root, rest)
	var out []string
	seen := map[string]bool{p: true}
	for i, m := range mounts {
		if i == at || m.dev != mounts[at].dev {
			continue
		}
		if r, ok := pathtree.Below(inFS, m.root); ok {
			v := filepath.Join(m.point, r)
			if !seen[v] {
				seen[v] = true
				out = append(out, v)
			}
		}
	}
	return out
}
