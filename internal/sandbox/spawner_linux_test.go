//go:build linux

package sandbox

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bouncer-mcp/bouncer/internal/protect"
)

// spawned is one server the spawner started in a test.
type spawned struct {
	child *Child
	in    io.WriteCloser
	out   *bufio.Reader
}

// spawnProbe starts the exit probe with argv through s, in the namespace
// form, as bouncer listen starts a session's server.
func spawnProbe(t *testing.T, s *Spawner, tr ownTree, argv ...string) spawned {
	t.Helper()
	l := Direct(os.Args[0], append([]string{"exit-probe"}, argv...))
	l.Guard(Guarding{Files: OwnFiles{Hidden: []string{tr.State}, ReadOnly: []string{tr.Policy}}, Max: OwnNamespace, Dir: tr.Proj, Around: protect.Around})
	path, args, setup, err := l.Command()
	must(t, err)
	cmd := exec.Command(path, args...)
	inR, inW, err := os.Pipe()
	must(t, err)
	outR, outW, err := os.Pipe()
	must(t, err)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, os.Stderr
	setup(cmd)
	c, err := s.Spawn(cmd)
	inR.Close()
	outW.Close()
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Started(); err != nil {
		t.Fatalf("the own files were not set up: %v", err)
	}
	t.Cleanup(func() { inW.Close(); _ = c.Signal(syscall.SIGKILL); _ = c.Wait(); outR.Close() })
	return spawned{c, inW, bufio.NewReader(outR)}
}

// Servers the spawner starts for different sessions can't see one
// another: /proc lists only the server itself, though another session's
// server runs beside it.
func TestSpawnerKeepsServersApart(t *testing.T) {
	needUserNamespaces(t)
	if why := SpawnerUnavailable(); why != "" {
		t.Fatalf("the spawner can't run here: %s", why)
	}
	tr := newOwnTree(t, 0)
	var s Spawner
	defer s.Close()
	a := spawnProbe(t, &s, tr, "echo")
	fmt.Fprintln(a.in, "x")
	if l, err := a.out.ReadString('\n'); err != nil || l != "echo x\n" {
		t.Fatalf("the first server: %q, %v", l, err)
	}
	b := spawnProbe(t, &s, tr, "procs")
	line, err := b.out.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	var self, procs string
	if _, err := fmt.Sscanf(line, "self %s procs %s", &self, &procs); err != nil {
		t.Fatalf("the probe said %q", line)
	}
	if procs != self {
		t.Errorf("/proc lists %s to the server (itself: %s); want only itself", procs, self)
	}
	if err := b.child.Wait(); err != nil {
		t.Errorf("exit: %v", err)
	}
	if a.child.Pid() <= 0 || a.child.Signal(0) != nil {
		t.Errorf("the first server (pid %d) is not running", a.child.Pid())
	}
}

// A spawner that dies takes every server it started with it, each one's
// Wait says so, and the next Spawn starts a new spawner.
func TestSpawnerDies(t *testing.T) {
	needUserNamespaces(t)
	tr := newOwnTree(t, 0)
	var s Spawner
	defer s.Close()
	a := spawnProbe(t, &s, tr, "echo")
	pid := a.child.Pid()
	s.mu.Lock()
	must(t, s.proc.cmd.Process.Kill())
	s.mu.Unlock()
	done := make(chan error, 1)
	go func() { done <- a.child.Wait() }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "spawner stopped") {
			t.Errorf("Wait: %v; want the spawner's end", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Wait did not return once the spawner died")
	}
	for deadline := time.Now().Add(5 * time.Second); syscall.Kill(pid, 0) == nil; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the server (pid %d) outlived its spawner", pid)
		}
	}
	b := spawnProbe(t, &s, tr, "exit", "3")
	var ee *ExitError
	if err := b.child.Wait(); !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Errorf("a server of the new spawner: %v; want exit status 3", err)
	}
}
