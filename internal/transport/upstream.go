package transport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Command describes how to start the upstream server.
type Command struct {
	Path string   // program; looked up in PATH when it has no slash
	Args []string // arguments, without the program name
	Env  []string // full environment ("K=V"); nil means the proxy's own
	Dir  string   // working directory; empty means the proxy's own
	// Name is the server's name in messages (bouncer run --name); empty
	// means Path's base name.
	Name string
	// Setup, when set, adjusts the command before it starts (the
	// sandbox's namespaces and its launcher's status pipe); the process
	// group and the death signal set here stay.
	Setup func(*exec.Cmd)
	// Spawn, when set, starts the prepared command in place of its own
	// Start: bouncer listen has the sandbox's spawner start confined
	// servers, so that the listener itself never forks into a new user
	// namespace.
	Spawn func(*exec.Cmd) (Child, error)
}

// Child is an upstream process started by a Command's Spawn.
type Child interface {
	// Pid is its process ID in our PID namespace.
	Pid() int
	// Signal sends sig to its process group; 0 only asks whether any of
	// it is left.
	Signal(sig syscall.Signal) error
	// Wait waits for it to exit and gives its status: nil for 0.
	Wait() error
}

// cmdChild is a Child that exec.Cmd started here.
type cmdChild struct{ cmd *exec.Cmd }

func (c cmdChild) Pid() int                        { return c.cmd.Process.Pid }
func (c cmdChild) Signal(sig syscall.Signal) error { return kill(-c.cmd.Process.Pid, sig) }
func (c cmdChild) Wait() error                     { return c.cmd.Wait() }

// Process is a running upstream server and the MCP connection over its
// stdin and stdout. It runs in its own process group, so stopping it stops
// whatever it started, and it is killed if the proxy dies.
type Process struct {
	child  Child
	stdin  *os.File // our end of the server's stdin
	stdout *os.File // our end of the server's stdout
	conn   *Conn
	done   chan struct{}
	err    error // cmd.Wait's result, once done is closed
}

// Start starts the upstream. Its stderr goes to stderr (usually the proxy's
// own). Messages of any size pass: the connection has no frame limit.
//
// A line the server writes on stdout that is not a JSON-RPC message (a log
// line printed to the wrong stream) goes to stderr too, escaped, with a
// warning naming the server, and never to the client; the session goes on,
// as it does with the clients, which skip such lines (Conn.TolerateNoise).
func Start(c Command, stderr io.Writer) (*Process, error) {
	// Our own pipes rather than cmd.StdoutPipe: exec's Wait closes those as
	// soon as the process exits, which could drop its last messages.
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("upstream stdin: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, fmt.Errorf("upstream stdout: %w", err)
	}
	cmd := exec.Command(c.Path, c.Args...)
	cmd.Env = c.Env
	cmd.Dir = c.Dir
	cmd.Stdin = inR
	cmd.Stdout = outW
	cmd.Stderr = stderr
	cmd.SysProcAttr = procAttr()
	if c.Setup != nil {
		c.Setup(cmd)
	}
	var child Child = cmdChild{cmd}
	if c.Spawn != nil {
		child, err = c.Spawn(cmd)
	} else {
		err = cmd.Start()
	}
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, fmt.Errorf("starting %s: %w", c.Path, err)
	}
	conn := NewConn(outR, inW)
	warn := stderr
	if warn == nil {
		warn = io.Discard
	}
	name := c.Name
	if name == "" {
		name = filepath.Base(c.Path)
	}
	conn.TolerateNoise(func(line []byte, size int) {
		fmt.Fprintf(warn, "bouncer: warning: server %q wrote a line on its stdout that is not an MCP message; it was not passed to the client: %s\n", name, noiseText(line, size))
	})
	p := &Process{child: child, stdin: inW, stdout: outR, conn: conn, done: make(chan struct{})}
	go func() {
		p.err = child.Wait()
		close(p.done)
	}()
	return p, nil
}

// noiseText is a noise line as a warning shows it: quoted, so that nothing
// in it can act on a terminal or pass for another line, and cut at
// maxNoiseShown bytes, with its size.
func noiseText(line []byte, size int) string {
	if len(line) < size {
		// Not a rune cut in two: its start goes too.
		i := len(line) - 1
		for i > 0 && i > len(line)-utf8.UTFMax && !utf8.RuneStart(line[i]) {
			i--
		}
		if i >= 0 && !utf8.FullRune(line[i:]) {
			line = line[:i]
		}
		return fmt.Sprintf("%s… (%d bytes)", strconv.Quote(string(line)), size)
	}
	return strconv.Quote(string(line))
}

// Pid is the upstream's process ID (and process group ID).
func (p *Process) Pid() int { return p.child.Pid() }

// Read reads the next message from the upstream.
func (p *Process) Read(ctx context.Context) (jsonrpc.Message, error) { return p.conn.Read(ctx) }

// Write sends a message to the upstream.
func (p *Process) Write(ctx context.Context, m jsonrpc.Message) error { return p.conn.Write(ctx, m) }

// OnIdle is Conn.OnIdle on the upstream's connection.
func (p *Process) OnIdle(fn func()) { p.conn.OnIdle(fn) }

// Cork is Conn.Cork on the upstream's connection.
func (p *Process) Cork() { p.conn.Cork() }

// Uncork is Conn.Uncork on the upstream's connection.
func (p *Process) Uncork() { p.conn.Uncork() }

// InBatch is Conn.InBatch on the upstream's connection.
func (p *Process) InBatch(id jsonrpc.ID) bool { return p.conn.InBatch(id) }

// Release is Conn.Release on the upstream's connection: the pump releases
// (or, in a batch, answers) a request the upstream sent and then cancelled.
func (p *Process) Release(id jsonrpc.ID) (inBatch bool) { return p.conn.Release(id) }

// GiveBack is Conn.GiveBack on the server's stdout.
func (p *Process) GiveBack(m jsonrpc.Message) { p.conn.GiveBack(m) }

// SessionID is empty: stdio has no sessions.
func (p *Process) SessionID() string { return "" }

// Close closes both pipes. It does not stop the process; Stop does.
func (p *Process) Close() error { return p.conn.Close() }

// CloseWrite closes the upstream's stdin, which tells a well-behaved server
// to finish and exit; its output can still be read.
func (p *Process) CloseWrite() error { return p.stdin.Close() }

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// ExitError is the process's exit status once Done is closed (nil for
// status 0).
func (p *Process) ExitError() error {
	select {
	case <-p.done:
		return p.err
	default:
		return errors.New("still running")
	}
}

// Stop ends the upstream: its stdin is closed, then after grace it gets
// SIGTERM, and after another grace SIGKILL, each sent to its whole process
// group; anything the server left behind in its group is killed too. Stop
// returns once the server has exited, with its exit status.
func (p *Process) Stop(grace time.Duration) error {
	_ = p.stdin.Close()
	sig := p.child.Signal
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = sig(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(grace):
			_ = sig(syscall.SIGKILL)
			<-p.done
		}
	}
	// Stragglers: children the server started in its group and did not
	// stop. They get SIGTERM, then SIGKILL shortly after.
	if sig(0) == nil {
		_ = sig(syscall.SIGTERM)
		for i := 0; i < 20 && sig(0) == nil; i++ {
			time.Sleep(10 * time.Millisecond)
		}
		_ = sig(syscall.SIGKILL)
	}
	_ = p.conn.Close()
	return p.err
}
