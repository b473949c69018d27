package session

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/bouncer-mcp/bouncer/internal/statefile"
	"github.com/bouncer-mcp/bouncer/internal/vouch"
)

// Dir is the directory of client sessions within the state directory.
const Dir = vouch.SessionsDir

// Join joins the session of the client that started this process (see
// FindClient), creating it if this process is the first. When the session
// can't be joined it returns a session of this process's own, and the
// reason, which the caller says once: nothing is shared then, and no
// destination is allowed for it.
func Join(stateDir string, log func(string)) (*Session, error) {
	c, err := FindClient(os.Getpid())
	if err != nil {
		return New(), fmt.Errorf("no client session: %w", err)
	}
	return JoinClient(stateDir, c, log)
}

// JoinClient joins the session of client c.
func JoinClient(stateDir string, c Client, log func(string)) (*Session, error) {
	base := filepath.Join(stateDir, Dir)
	if err := statefile.Dir(base); err != nil {
		return New(), fmt.Errorf("no client session: %s: %w", base, err)
	}
	prune(base, c)
	d, key, err := openShared(filepath.Join(base, dirName(c)), log)
	if err != nil {
		return New(), fmt.Errorf("no client session in %s: %w", base, err)
	}
	s := newWithKey(key)
	s.disk = d
	s.sync()
	return s, nil
}

// prune removes the session directories of clients that have exited, so
// the state directory does not fill with them. It runs when a process
// joins; a directory whose client can't be told dead stays.
func prune(base string, self Client) {
	entries, err := os.ReadDir(base)
	if err != nil {
		return
	}
	for _, e := range entries {
		pidS, startS, ok := strings.Cut(e.Name(), "-")
		if !ok || !e.IsDir() {
			continue
		}
		pid, err1 := strconv.Atoi(pidS)
		start, err2 := strconv.ParseUint(startS, 10, 64)
		if err1 != nil || err2 != nil {
			continue
		}
		c := Client{PID: pid, Start: start}
		if c == self || alive(c) {
			continue
		}
		os.RemoveAll(filepath.Join(base, e.Name()))
	}
}
