package transport

import (
	"io"
	"testing"
	"time"

	"github.com/bouncer-mcp/bouncer/internal/testsupport/procgroup"
)

// Stop leaves nothing running: not the server, not what it started in its
// group, not a server that ignores EOF and SIGTERM.
func TestStopKillsGroup(t *testing.T) {
	cases := map[string]string{
		"exits on EOF, leaves a child": "sleep 1000 & cat >/dev/null",
		"ignores EOF and SIGTERM":      "trap '' TERM; while :; do sleep 0.05; done",
	}
	for name, script := range cases {
		t.Run(name, func(t *testing.T) {
			p, err := Start(Command{Path: "/bin/sh", Args: []string{"-c", script}}, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(100 * time.Millisecond) // let it start its children
			start := time.Now()
			_ = p.Stop(300 * time.Millisecond)
			if d := time.Since(start); d > 3*time.Second {
				t.Errorf("Stop took %v", d)
			}
			if !procgroup.Gone(p.Pid()) {
				t.Fatal("something in the upstream's process group survived Stop")
			}
		})
	}
}

func TestStartMissingProgram(t *testing.T) {
	if _, err := Start(Command{Path: "/nonexistent/server"}, io.Discard); err == nil {
		t.Fatal("started a program that does not exist")
	}
}
