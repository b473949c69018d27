package mcpconfig

import "testing"

// checkWrapUndo is the property every client format's fuzz target holds a
// config file at path to: a file that reads, wrapped, reads back; undone
// with the originals the wrap kept, it is the file again, byte for byte.
// A file that does not read, or a wrap refused (one that would not read
// back), is no failure.
func checkWrapUndo(t *testing.T, path string, data []byte) {
	t.Helper()
	c, err := Parse(path, data)
	if err != nil {
		return
	}
	out, changes, err := c.Wrap(WrapOptions{ConfigArg: "/c", Remote: true})
	if err != nil {
		return // a rewrite that would not read back is refused
	}
	c2, err := Parse(path, out)
	if err != nil {
		t.Fatalf("the wrapped file does not read: %v\n%q\n%q", err, data, out)
	}
	c2.kept = map[string]map[string]keptEntry{}
	wrapped := false
	for _, ch := range changes {
		if ch.Kept != "" {
			wrapped = true
			if c2.kept[ch.Block] == nil {
				c2.kept[ch.Block] = map[string]keptEntry{}
			}
			c2.kept[ch.Block][ch.Server] = keptEntry{Entry: ch.Kept}
		}
	}
	undone, _, err := c2.Undo("", nil)
	if err != nil {
		t.Fatalf("undo: %v\n%q\n%q", err, data, out)
	}
	if wrapped && string(undone) != string(data) {
		t.Fatalf("undo is not the original:\n%q\n%q\n%q", data, out, undone)
	}
}
