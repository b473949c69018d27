package session

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// A proxy that publishes its own files makes them known to every proxy of
// its client, those that joined before and after, and to no other
// client's; what it learns changes version only when something new is
// published, and a list that is not a list of absolute paths is passed
// over.
func TestOwnFiles(t *testing.T) {
	state := t.TempDir()
	client := live(t, os.Getpid())
	mail := join(t, state, client)
	fs := join(t, state, client)
	other := join(t, state, live(t, os.Getppid()))

	if got, _ := fs.OwnFiles(); len(got) != 0 {
		t.Fatalf("before any publish: %q", got)
	}
	mailOwn := []string{"/home/u/proj/mail.yaml", "/home/u/.bouncer"}
	if err := mail.PublishOwn(mailOwn); err != nil {
		t.Fatal(err)
	}
	got, v1 := fs.OwnFiles()
	if !reflect.DeepEqual(got, mailOwn) {
		t.Fatalf("fs learned %q, want %q", got, mailOwn)
	}
	if got, _ := mail.OwnFiles(); len(got) != 0 {
		t.Fatalf("mail learned its own list back: %q", got)
	}
	if got, _ := other.OwnFiles(); len(got) != 0 {
		t.Fatalf("another client's proxy learned %q", got)
	}
	if _, v := fs.OwnFiles(); v != v1 {
		t.Fatalf("the version moved with nothing new: %d, then %d", v1, v)
	}

	// A proxy that joins later learns what was published before it, and
	// the earlier ones learn its list.
	late := join(t, state, client)
	if got, _ := late.OwnFiles(); !reflect.DeepEqual(got, mailOwn) {
		t.Fatalf("a later proxy learned %q", got)
	}
	if err := late.PublishOwn([]string{"/home/u/proj/fs.yaml"}); err != nil {
		t.Fatal(err)
	}
	got, v2 := fs.OwnFiles()
	if v2 == v1 || len(got) != 3 {
		t.Fatalf("after a second publish: %q at version %d (was %d)", got, v2, v1)
	}

	// A malformed list adds nothing and breaks nothing.
	dir := filepath.Dir(mail.disk.out.Name())
	if err := os.WriteFile(filepath.Join(dir, "own-1-bad"), []byte(`["relative/path"]`), 0o600); err != nil {
		t.Fatal(err)
	}
	mail.Output("mail").Record("something new") // bumps the counter
	if got, _ := fs.OwnFiles(); len(got) != 3 {
		t.Fatalf("a malformed list was taken: %q", got)
	}
}
