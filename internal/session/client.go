package session

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// Client identifies the MCP client process a proxy or hook belongs to: its
// pid, and its start time (so a reused pid is another client).
type Client struct {
	PID   int
	Start uint64 // in the system's own units (clock ticks since boot on Linux)
}

func (c Client) String() string { return fmt.Sprintf("pid %d", c.PID) }

// proc is what FindClient needs to know of a process.
type proc struct {
	ppid  int
	start uint64
	name  string   // the executable's base name
	args  []string // its command line, when it can be read
}

// ErrNoClient means no client process could be found (the proxy was
// started by init, or the system has no way to tell): the proxy keeps its
// own history.
var ErrNoClient = errors.New("no client process found")

// maxHops bounds the walk up the process tree.
const maxHops = 8

// FindClient returns the client that started process pid: its nearest
// ancestor that is not a shell or launcher. Clients start a proxy directly
// or through `sh -c`, `env`, `npx` and the like, and run their hooks
// through a shell, so the proxy and the hook of one client both land on
// the client itself.
func FindClient(pid int) (Client, error) {
	return findClient(pid, readProc)
}

func findClient(pid int, read func(int) (proc, error)) (Client, error) {
	me, err := read(pid)
	if err != nil {
		return Client{}, err
	}
	cur := me.ppid
	for hop := 0; hop < maxHops; hop++ {
		if cur <= 1 {
			return Client{}, ErrNoClient
		}
		p, err := read(cur)
		if err != nil {
			return Client{}, err
		}
		if !launcher(p) {
			return Client{PID: cur, Start: p.start}, nil
		}
		cur = p.ppid
	}
	return Client{}, fmt.Errorf("%w within %d ancestors (all shells or launchers)", ErrNoClient, maxHops)
}

// launchers are programs that start another on a client's behalf without
// being the client: shells and exec wrappers.
var launchers = map[string]bool{
	"sh": true, "bash": true, "dash": true, "zsh": true, "ksh": true, "mksh": true, "ash": true,
	"fish": true, "busybox": true, "env": true, "nohup": true, "timeout": true, "setsid": true,
	"stdbuf": true, "nice": true, "ionice": true, "chrt": true, "taskset": true, "script": true,
	"uv": true, "uvx": true, "npx": true, "pnpx": true, "bunx": true, "cmd.exe": true,
}

// launcher reports whether p only launched the next process: a shell, an
// exec wrapper, or a package runner (npx is a node script, so node counts
// when its script is npx's or npm's).
func launcher(p proc) bool {
	if launchers[p.name] {
		return true
	}
	if (p.name == "node" || p.name == "bun") && len(p.args) > 1 {
		script := filepath.Base(p.args[1])
		for _, s := range []string{"npx-cli.js", "npm-cli.js", "npx", "npm", "pnpm", "pnpx"} {
			if script == s || strings.HasSuffix(p.args[1], "/"+s) {
				return true
			}
		}
	}
	return false
}
