package report

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// A saved tool list is read back only if it is this user's and no one
// else may write it: another's could hide a tool from the review. It is
// skipped with an error naming it; the others are still read.
func TestPinnedOthersWrite(t *testing.T) {
	state := t.TempDir()
	tool := []json.RawMessage{json.RawMessage(`{"name":"send_email","inputSchema":{"type":"object"}}`)}
	for _, server := range []string{"mail", "files"} {
		if err := SavePinned(state, server, "", tool); err != nil {
			t.Fatal(err)
		}
	}
	if fi, err := os.Stat(PinnedPath(state, "mail")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("saved list: %v %v, want 0600", fi.Mode(), err)
	}
	if err := os.Chmod(PinnedPath(state, "mail"), 0o666); err != nil {
		t.Fatal(err)
	}
	got, err := LoadPinned(state, "")
	if err == nil || !strings.Contains(err.Error(), PinnedPath(state, "mail")+": mode 0666 lets other users write it") {
		t.Errorf("LoadPinned: %v", err)
	}
	if len(got) != 1 || got[0].Server != "files" || len(got[0].Tools) != 1 {
		t.Errorf("read %+v, want the files list only", got)
	}
}

// The pack that applied to a server is kept with its list and read back
// with it; one this binary does not know is read as none.
func TestPinnedPack(t *testing.T) {
	state := t.TempDir()
	tool := []json.RawMessage{json.RawMessage(`{"name":"send_email","inputSchema":{"type":"object"}}`)}
	for server, pack := range map[string]string{"mail": "gmail", "other": ""} {
		if err := SavePinned(state, server, pack, tool); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(PinnedPath(state, "odd"), []byte(`{"tools":[],"bouncerPack":"nosuch"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := LoadPinned(state, "")
	if err != nil {
		t.Fatal(err)
	}
	packs := map[string]string{}
	for _, l := range got {
		packs[l.Server] = l.Pack
	}
	if len(got) != 3 || packs["mail"] != "gmail" || packs["other"] != "" || packs["odd"] != "" {
		t.Fatalf("packs = %v", packs)
	}
}
