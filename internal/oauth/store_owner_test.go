package oauth

import (
	"os"
	"strings"
	"testing"
)

// A stored sign-in that other users may write is refused, not repaired
// and used: its tokens and token endpoint could be theirs. (One they may
// only read is put back to 0600 and used: TestStoreAtomic0600.)
func TestStoreRefusesOthersWrite(t *testing.T) {
	s := newStore(t.TempDir())
	r := &record{ServerURL: "https://mcp.example.com/mcp", TokenEndpoint: "https://as.example.com/token",
		Token: &tokenRecord{AccessToken: "a", RefreshToken: "r"}}
	if err := s.save(r); err != nil {
		t.Fatal(err)
	}
	p := s.path(r.ServerURL)
	if err := os.Chmod(p, 0o662); err != nil {
		t.Fatal(err)
	}
	got, err := s.load(r.ServerURL)
	if got != nil || err == nil || !strings.Contains(err.Error(), "mode 0662 lets other users write it") || !strings.Contains(err.Error(), p) {
		t.Fatalf("load: %+v, %v", got, err)
	}
	if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o662 {
		t.Errorf("the refused file was changed: %v %v", fi.Mode(), err)
	}
}
