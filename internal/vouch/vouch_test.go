package vouch

import (
	"path/filepath"
	"slices"
	"testing"
)

func TestTable(t *testing.T) {
	seen := map[string]bool{}
	for i, w := range Ways {
		for _, n := range append([]string{w.Name}, w.Was...) {
			if seen[n] {
				t.Errorf("name %q is declared twice", n)
			}
			seen[n] = true
		}
		if w.Means == "" {
			t.Errorf("%s: no meaning for report", w.Name)
		}
		// The engine asks taint between the ways that win over it and
		// those that don't; the table lists them in that order so that
		// reading it top to bottom is the order of the checks.
		if i > 0 && w.WinsOverTaint && !Ways[i-1].WinsOverTaint {
			t.Errorf("%s wins over taint but follows %s, which doesn't", w.Name, Ways[i-1].Name)
		}
	}
	if w, ok := Lookup("human"); !ok || w.Name != Remembered {
		t.Errorf("Lookup(human) = %v, %v; an older log's name must still be known", w.Name, ok)
	}
	if _, ok := Lookup("nobody"); ok {
		t.Error("an unknown name was found")
	}
}

func TestFiles(t *testing.T) {
	dir := t.TempDir()
	got := Files(dir)
	for _, want := range []string{RememberedFile, SessionsDir, PendingFile} {
		if !slices.Contains(got, filepath.Join(dir, want)) {
			t.Errorf("Files(%s) = %v, lacks %s", dir, got, want)
		}
	}
	for _, f := range got {
		if filepath.Dir(f) != dir {
			t.Errorf("%s lies outside the state directory, where the proxy's sandbox keeps nothing readable", f)
		}
	}
	if Files("") != nil {
		t.Error("Files of no state directory listed something")
	}
}
