//go:build unix

package main

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A --header-file is refused unless it is a regular file of this user
// that nobody else may read or write; a FIFO is refused at once, never
// waited on.
func TestHeaderFileRefused(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	file := func(mode os.FileMode) string {
		p := filepath.Join(dir, fmt.Sprintf("h%o.txt", mode))
		if err := os.WriteFile(p, []byte("Authorization: Bearer s3cr3t\n"), mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(p, mode)
		return p
	}
	for _, c := range []struct {
		path, want string // "" = accepted
	}{
		{file(0o600), ""},
		{file(0o400), ""},
		{file(0o640), "mode 0640 lets other users read or write it; run: chmod 600 "},
		{file(0o604), "mode 0604 lets other users"},
		{file(0o620), "mode 0620 lets other users"},
		{dir, "open " + dir + ": not a regular file but a directory"},
		{fifo, "open " + fifo + ": not a regular file but a named pipe (FIFO)"},
	} {
		done := make(chan error, 1)
		go func() { done <- addHeaderFile(http.Header{}, c.path) }()
		var err error
		select {
		case err = <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: still reading after 5s", c.path)
		}
		if (c.want == "") != (err == nil) || (err != nil && (!strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "s3cr3t"))) {
			t.Errorf("%s: %v, want %q", c.path, err, c.want)
		}
	}
}
