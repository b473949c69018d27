//go:build linux

package sandbox

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// The spawner starts bouncer listen's confined servers in the namespace
// form without the listener forking into a new user namespace per
// session. Such a fork can't share the parent's memory (Go then gives up
// vfork), so it copies the listener's page tables, and each one costs the
// listener about 30 ms of CPU under Go's fork lock; and the launcher it
// starts is this whole binary once more. The spawner is one launcher,
// started once in new user, mount and PID namespaces, that holds the two
// capabilities the namespace form needs there. For each server it sets up
// on one thread of its own what the launcher would set up in a process of
// its own: a mount namespace with the own files pinned, the sandbox key's
// Landlock domain and seccomp filter, no capabilities. From that thread
// it starts the server (vfork and exec) as the init of a new PID
// namespace, and the thread then ends, so nothing it took on reaches
// another thread.
//
// What each server gets is the launcher's, but for three things. Its PID
// namespace has no init of ours above it, so the server is that
// namespace's init: the kernel gives it no signal it has no handler for
// but SIGKILL (Stop's SIGKILL still ends it), and it reaps its own
// orphans. Its /proc is the spawner's, mounted with hidepid=invisible: it
// lists only the processes the server may trace, its own, since every
// server has a Landlock domain of its own; that is why the spawner is
// used only where Landlock is. And the servers of one listener share the
// spawner's user namespace (docs/hardening.md, "bouncer listen's
// spawner").

// spawnRequest asks the spawner to start one server. Its stdin, stdout,
// stderr and the launcher's status pipe come with it as file descriptors.
type spawnRequest struct {
	ID uint64 `json:"id"`
	// Args are the launcher's arguments: the plan, "--" and the server's
	// command line (launcherCommand).
	Args []string `json:"args"`
	Env  []string `json:"env"`
}

// spawnReply says a server started (neither Err nor Exited; its pidfd
// comes with it), could not (Err), or exited (Exited, with its wait
// status).
type spawnReply struct {
	ID     uint64 `json:"id"`
	Err    string `json:"err,omitempty"`
	Exited bool   `json:"exited,omitempty"`
	Status int    `json:"status,omitempty"`
}

// spawnSocketFD is the spawner's end of its socket.
const spawnSocketFD = 3

// Spawner starts confined servers in the namespace form through one
// spawner process, started at the first Spawn and again after it is gone.
// The zero value is ready to use.
type Spawner struct {
	mu   sync.Mutex
	proc *spawnerProc
	// startErr is why the last spawner did not start, kept for a minute
	// from failedAt: a system that refuses it (a container's seccomp
	// profile, say) refuses it for every session.
	startErr error
	failedAt time.Time
}

// spawnerProc is one spawner process and its socket.
type spawnerProc struct {
	cmd      *exec.Cmd
	conn     *net.UnixConn
	buf, oob []byte // read's

	waitOnce sync.Once

	mu       sync.Mutex
	next     uint64
	children map[uint64]*Child
	gone     error // why the spawner is gone, once it is
}

// SpawnerUnavailable says why this system can't use the spawner, "" when
// it can: it needs Landlock (a domain per server is what keeps the
// servers that share its /proc apart) and user namespaces.
func SpawnerUnavailable() string {
	if c := Probe(); c.LandlockABI == 0 {
		return c.LandlockWhy
	}
	return formUnavailable(OwnNamespace)
}

// Spawn starts cmd, as Launch.Command made it for the namespace form
// (the launcher's command line, its status pipe as the one extra file),
// through the spawner. The child's stdin, stdout and stderr must be
// files, or nil.
func (s *Spawner) Spawn(cmd *exec.Cmd) (*Child, error) {
	p, err := s.running()
	if err != nil {
		return nil, err
	}
	c, err := p.spawn(cmd)
	if err != nil && p.isGone() {
		// It stopped since: once more, with a new one.
		if p, err = s.running(); err == nil {
			c, err = p.spawn(cmd)
		}
	}
	return c, err
}

// Close stops the spawner and, with it, every server it started.
func (s *Spawner) Close() error {
	s.mu.Lock()
	p := s.proc
	s.proc = nil
	s.mu.Unlock()
	if p == nil {
		return nil
	}
	p.conn.Close()
	_ = p.cmd.Process.Kill()
	p.wait()
	return nil
}

// running gives the spawner process, starting one if there is none.
func (s *Spawner) running() (*spawnerProc, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc != nil && !s.proc.isGone() {
		return s.proc, nil
	}
	if s.startErr != nil && time.Since(s.failedAt) < time.Minute {
		return nil, s.startErr
	}
	p, err := startSpawner()
	if err != nil {
		s.startErr, s.failedAt = err, time.Now()
		return nil, err
	}
	s.startErr = nil
	s.proc = p
	return p, nil
}

func startSpawner() (*spawnerProc, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("sandbox: spawner socket: %w", err)
	}
	ours, theirs := os.NewFile(uintptr(fds[0]), "spawner"), os.NewFile(uintptr(fds[1]), "spawner")
	defer theirs.Close()
	fc, err := net.FileConn(ours)
	ours.Close()
	if err != nil {
		theirs.Close()
		return nil, fmt.Errorf("sandbox: spawner socket: %w", err)
	}
	conn := fc.(*net.UnixConn)
	enc, _ := json.Marshal(launchPlan{Spawner: true})
	cmd := exec.Command(launcherPath, LauncherName, base64.RawURLEncoding.EncodeToString(enc), "--")
	cmd.Stderr = os.Stderr
	cmd.ExtraFiles = []*os.File{theirs} // spawnSocketFD
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	namespaceAttrs(cmd)
	if err := cmd.Start(); err != nil {
		conn.Close()
		return nil, fmt.Errorf("sandbox: starting the spawner: %w", err)
	}
	p := &spawnerProc{cmd: cmd, conn: conn, children: map[uint64]*Child{}}
	// Its first word: ready, or why not.
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	var r spawnReply
	if err := p.read(&r, nil); err != nil || r.Err != "" {
		if err == nil {
			err = errors.New(r.Err)
		}
		conn.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, fmt.Errorf("sandbox: the spawner did not start: %w", err)
	}
	_ = conn.SetReadDeadline(time.Time{})
	go p.readLoop()
	return p, nil
}

// read reads one message from the spawner, and the file descriptors that
// came with it into fds.
// Only one goroutine reads at a time: startSpawner, then readLoop.
func (p *spawnerProc) read(r *spawnReply, fds *[]int) error {
	if p.buf == nil {
		p.buf, p.oob = make([]byte, 64<<10), make([]byte, unix.CmsgSpace(4*4))
	}
	buf, oob := p.buf, p.oob
	n, oobn, _, _, err := p.conn.ReadMsgUnix(buf, oob)
	if err != nil {
		return err
	}
	if n == 0 {
		return errors.New("the spawner closed its socket")
	}
	got, err := receivedFDs(oob[:oobn])
	if err != nil {
		return err
	}
	if fds != nil {
		*fds = got
	} else {
		closeFDs(got)
	}
	if err := json.Unmarshal(buf[:n], r); err != nil {
		return fmt.Errorf("the spawner said %q: %w", buf[:n], err)
	}
	return nil
}

func receivedFDs(oob []byte) ([]int, error) {
	if len(oob) == 0 {
		return nil, nil
	}
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, err
	}
	var fds []int
	for _, m := range msgs {
		got, err := unix.ParseUnixRights(&m)
		if err != nil {
			closeFDs(fds)
			return nil, err
		}
		fds = append(fds, got...)
	}
	return fds, nil
}

func closeFDs(fds []int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
}

// readLoop hands each message to its child until the spawner is gone;
// then every child still running is gone with it (the kernel ended them
// with the spawner's PID namespace).
func (p *spawnerProc) readLoop() {
	for {
		var r spawnReply
		var fds []int
		err := p.read(&r, &fds)
		if err != nil {
			p.fail(fmt.Errorf("the sandbox's spawner stopped: %v", err))
			return
		}
		p.mu.Lock()
		c := p.children[r.ID]
		if r.Exited || r.Err != "" {
			delete(p.children, r.ID)
		}
		p.mu.Unlock()
		started := !r.Exited && r.Err == "" && len(fds) > 0
		if c == nil {
			if started {
				// A start Spawn gave up waiting for.
				_ = unix.PidfdSendSignal(fds[0], unix.SIGKILL, nil, 0)
			}
			closeFDs(fds)
			continue
		}
		if started {
			// Set here, before the exit that may follow is read.
			c.setPidfd(fds[0])
			fds = fds[1:]
		}
		closeFDs(fds)
		switch {
		case r.Exited:
			// An exit before any start reply: the own files could not be
			// set up, as the launcher's status pipe says.
			select {
			case c.started <- r:
			default:
			}
			c.finish(exitError(syscall.WaitStatus(r.Status)))
		case !started && r.Err == "":
			r.Err = "the spawner sent no pidfd"
			c.started <- r
		default:
			c.started <- r
		}
	}
}

// fail marks the spawner gone and ends every child waiting on it.
func (p *spawnerProc) fail(err error) {
	p.mu.Lock()
	if p.gone == nil {
		p.gone = err
	}
	children := p.children
	p.children = map[uint64]*Child{}
	p.mu.Unlock()
	for _, c := range children {
		select {
		case c.started <- spawnReply{Err: err.Error()}:
		default:
		}
		c.finish(err)
	}
	p.conn.Close()
	go p.wait()
}

func (p *spawnerProc) isGone() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.gone != nil
}

// forget drops a child Spawn gave up on.
func (p *spawnerProc) forget(id uint64) {
	p.mu.Lock()
	delete(p.children, id)
	p.mu.Unlock()
}

// maxSpawnRequest bounds a request: one datagram, within the socket's
// default send buffer.
const maxSpawnRequest = 160 << 10

// wait waits for the spawner process, once.
func (p *spawnerProc) wait() { p.waitOnce.Do(func() { _ = p.cmd.Wait() }) }

func (p *spawnerProc) spawn(cmd *exec.Cmd) (*Child, error) {
	if len(cmd.Args) < 4 || cmd.Args[1] != LauncherName {
		return nil, errors.New("sandbox: the spawner starts the launcher's command line only")
	}
	files := []*os.File{}
	for _, f := range []any{cmd.Stdin, cmd.Stdout, cmd.Stderr} {
		switch f := f.(type) {
		case nil:
			null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
			if err != nil {
				return nil, err
			}
			defer null.Close()
			files = append(files, null)
		case *os.File:
			files = append(files, f)
		default:
			return nil, fmt.Errorf("sandbox: the spawner passes files only, not a %T", f)
		}
	}
	if len(cmd.ExtraFiles) != 1 {
		return nil, errors.New("sandbox: the spawner needs the launcher's status pipe")
	}
	files = append(files, cmd.ExtraFiles[0])
	env := cmd.Env
	if env == nil {
		env = os.Environ()
	}
	// cmd.Dir is not passed: the plan names the working directory, which
	// is entered once the mounts are made (before them, it would lead
	// under them).
	c := &Child{started: make(chan spawnReply, 1), done: make(chan struct{}), pid: -1, pidfd: -1}
	p.mu.Lock()
	if p.gone != nil {
		p.mu.Unlock()
		return nil, p.gone
	}
	p.next++
	id := p.next
	p.children[id] = c
	p.mu.Unlock()
	b, err := json.Marshal(spawnRequest{ID: id, Args: cmd.Args[2:], Env: env})
	if err == nil && len(b) > maxSpawnRequest {
		err = fmt.Errorf("the command line and environment take %d bytes, more than the spawner takes (%d)", len(b), maxSpawnRequest)
	}
	if err != nil {
		p.forget(id)
		return nil, fmt.Errorf("sandbox: spawner: %w", err)
	}
	fds := make([]int, len(files))
	for i, f := range files {
		fds[i] = int(f.Fd())
	}
	_, _, err = p.conn.WriteMsgUnix(b, unix.UnixRights(fds...), nil)
	runtime.KeepAlive(files)
	if err != nil {
		p.fail(fmt.Errorf("the sandbox's spawner stopped: %v", err))
		return nil, fmt.Errorf("sandbox: asking the spawner: %w", err)
	}
	var r spawnReply
	select {
	case r = <-c.started:
	case <-time.After(30 * time.Second):
		// A server that starts after this is nobody's: it is killed as
		// its start is read (readLoop).
		p.forget(id)
		return nil, errors.New("sandbox: no word from the spawner in 30s")
	}
	if r.Err != "" {
		return nil, fmt.Errorf("sandbox: spawner: %s", r.Err)
	}
	return c, nil
}

// pidOf is the process ID, in our PID namespace, of the process pidfd
// refers to; -1 once it has exited.
func pidOf(pidfd int) int {
	if pidfd < 0 {
		return -1
	}
	f, err := os.Open("/proc/self/fdinfo/" + strconv.Itoa(pidfd))
	if err != nil {
		return -1
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "Pid:"); ok {
			if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
				return n
			}
		}
	}
	return -1
}

// Child is a server the spawner started: the init of a PID namespace of
// its own, in a process group of its own.
type Child struct {
	started chan spawnReply // the spawner's answer to the start

	mu    sync.Mutex // guards pid and pidfd: a dying spawner ends children from another goroutine
	pid   int
	pidfd int

	once sync.Once
	done chan struct{}
	err  error
}

// setPidfd takes the server's pidfd, and reads its process ID from it.
func (c *Child) setPidfd(fd int) {
	pid := pidOf(fd)
	c.mu.Lock()
	c.pidfd, c.pid = fd, pid
	c.mu.Unlock()
}

// Pid is the server's process ID in our PID namespace.
func (c *Child) Pid() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pid
}

// Signal sends sig to the server's process group. With 0 it only says
// whether any of it is left.
func (c *Child) Signal(sig syscall.Signal) error {
	select {
	case <-c.done:
		// Its PID namespace ended with it: nothing of it is left, and
		// its number may already be another process's.
		return syscall.ESRCH
	default:
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pid <= 0 {
		return unix.PidfdSendSignal(c.pidfd, sig, nil, 0)
	}
	return unix.Kill(-c.pid, sig)
}

// Wait waits for the server to exit; its status is nil for 0, else an
// *ExitError.
func (c *Child) Wait() error {
	<-c.done
	return c.err
}

func (c *Child) finish(err error) {
	c.once.Do(func() {
		c.err = err
		c.mu.Lock()
		if c.pidfd >= 0 {
			unix.Close(c.pidfd)
			c.pidfd = -1
		}
		c.mu.Unlock()
		close(c.done)
	})
}

// ExitError is a spawned server's exit status other than 0, as exec's
// ExitError says it.
type ExitError struct{ Status syscall.WaitStatus }

func (e *ExitError) Error() string {
	if e.Status.Signaled() {
		return "signal: " + e.Status.Signal().String()
	}
	return "exit status " + strconv.Itoa(e.Status.ExitStatus())
}

// ExitCode is the server's exit code, or 128+N when signal N killed it, as
// the launcher's init reports it.
func (e *ExitError) ExitCode() int { return shellStatus(e.Status) }

func exitError(ws syscall.WaitStatus) error {
	if ws.Exited() && ws.ExitStatus() == 0 {
		return nil
	}
	return &ExitError{ws}
}

// runSpawner is the spawner: the launcher with a Spawner plan, started in
// new user, mount and PID namespaces with the capabilities to make more.
func runSpawner() error {
	sock := os.NewFile(spawnSocketFD, "spawner")
	fc, err := net.FileConn(sock)
	sock.Close()
	if err != nil {
		return fmt.Errorf("spawner: socket: %w", err)
	}
	conn := fc.(*net.UnixConn)
	sp := &spawnerSide{conn: conn, ids: map[int]uint64{}}
	if err := sp.setUp(); err != nil {
		sp.send(spawnReply{Err: err.Error()}, -1)
		return errOwnSetup
	}
	sp.send(spawnReply{}, -1)
	go sp.reap()
	buf := make([]byte, 256<<10)
	oob := make([]byte, unix.CmsgSpace(8*4))
	for {
		n, oobn, _, _, err := conn.ReadMsgUnix(buf, oob)
		if err != nil || n == 0 {
			// The listener is gone or done with us: as this PID
			// namespace's init, our exit ends every server.
			os.Exit(0)
		}
		fds, err := receivedFDs(oob[:oobn])
		var req spawnRequest
		if err == nil {
			err = json.Unmarshal(buf[:n], &req)
		}
		if err != nil || len(fds) != 4 {
			closeFDs(fds)
			sp.send(spawnReply{ID: req.ID, Err: fmt.Sprintf("spawner: a bad request (%d files): %v", len(fds), err)}, -1)
			continue
		}
		go sp.start(req, fds)
	}
}

// spawnerSide is the spawner's state.
type spawnerSide struct {
	conn *net.UnixConn
	caps Capabilities
	// mu is held across a start and its registration, and by the reaper,
	// so no exit is reaped before its ID is known.
	mu  sync.Mutex
	ids map[int]uint64 // pid (ours) → request ID
}

// setUp makes the spawner's own mounts: none reach the listener's
// namespace, and /proc lists only the processes the reader may trace.
func (sp *spawnerSide) setUp() error {
	sp.caps = Probe()
	if sp.caps.LandlockABI == 0 {
		return fmt.Errorf("spawner: %s", sp.caps.LandlockWhy)
	}
	// The servers may not trace or read the memory of this process.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("spawner: not dumpable: %w", err)
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_SLAVE, ""); err != nil {
		return fmt.Errorf("spawner: mount namespace: %w", err)
	}
	// Members of the group gid= names see every process; by default
	// that is group 0, which root's servers are in (and which isn't
	// mapped here when we aren't root). Root's namespace maps every
	// group, so it names the last one, which nobody is in.
	opts := "hidepid=invisible"
	if os.Getuid() == 0 {
		opts += ",gid=4294967294"
	}
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, opts); err != nil {
		return fmt.Errorf("spawner: a /proc of its own: %w", err)
	}
	return nil
}

// send writes one message, with fd attached when it is not -1.
func (sp *spawnerSide) send(r spawnReply, fd int) {
	b, _ := json.Marshal(r)
	var oob []byte
	if fd >= 0 {
		oob = unix.UnixRights(fd)
	}
	_, _, _ = sp.conn.WriteMsgUnix(b, oob, nil)
}

// reap waits for every child, as this PID namespace's init, and tells the
// listener how each server ended.
func (sp *spawnerSide) reap() {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGCHLD)
	for range ch {
		sp.mu.Lock()
		for {
			var ws syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			if err == syscall.EINTR {
				continue
			}
			if err != nil || pid <= 0 {
				break
			}
			if id, ok := sp.ids[pid]; ok {
				delete(sp.ids, pid)
				sp.send(spawnReply{ID: id, Exited: true, Status: int(ws)}, -1)
			}
		}
		sp.mu.Unlock()
	}
}

// start sets up one server's confinement on a thread of its own and
// starts the server from it. The thread is never unlocked, so the Go
// runtime ends it with this goroutine, and nothing set up here (the mount
// namespace, the Landlock domain, the seccomp filter, the dropped
// capabilities) reaches another thread.
func (sp *spawnerSide) start(req spawnRequest, fds []int) {
	runtime.LockOSThread()
	defer closeFDs(fds)
	switch err := sp.startServer(req, fds); {
	case errors.Is(err, errOwnSetup):
		// The status pipe said why, for the listener's Started; the
		// server "exits" as the launcher would have, with 125.
		sp.send(spawnReply{ID: req.ID, Exited: true, Status: 125 << 8}, -1)
	case err != nil:
		sp.send(spawnReply{ID: req.ID, Err: err.Error()}, -1)
	}
}

// startServer is start's work. Its reply for a server that started is
// sent under sp.mu, with the server registered, so that the reaper's word
// of its exit comes after it.
func (sp *spawnerSide) startServer(req spawnRequest, fds []int) error {
	p, argv, err := launcherCommand(req.Args)
	if err != nil {
		return err
	}
	if p.Own == nil || p.Own.Form != OwnNamespace.String() || p.Spawner || p.Own.Probe {
		return errors.New("spawner: a plan of the namespace form only")
	}
	if p.Strict {
		if err := sp.caps.strictError(); err != nil {
			return err
		}
	}
	status := os.NewFile(uintptr(fds[3]), "status")
	fds[3] = -1 // closed by writeStatus
	err = func() error {
		// This thread's next child, the server, is the init of a PID
		// namespace of its own: whatever it leaves behind ends with it,
		// and it can name no other server's process.
		if err := unix.Unshare(unix.CLONE_NEWNS | unix.CLONE_NEWPID); err != nil {
			return fmt.Errorf("mount and PID namespaces: %w", err)
		}
		// The mounts made here reach neither the spawner's namespace
		// nor another server's.
		if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_SLAVE, ""); err != nil {
			return fmt.Errorf("mount namespace: %w", err)
		}
		return pinOwn(*p.Own)
	}()
	if err := writeStatus(status, ownStatus{}, err); err != nil {
		return err
	}
	if err := confine(p, sp.caps, true); err != nil {
		return err
	}
	if err := dropCapabilities(); err != nil {
		return err
	}
	if err := threadLandlock(); err != nil {
		return err
	}
	sp.mu.Lock()
	defer sp.mu.Unlock()
	pid, err := syscall.ForkExec(argv[0], argv, &syscall.ProcAttr{
		Dir:   p.Own.Dir,
		Env:   req.Env,
		Files: []uintptr{uintptr(fds[0]), uintptr(fds[1]), uintptr(fds[2])},
		Sys:   &syscall.SysProcAttr{Setpgid: true},
	})
	if err != nil {
		return fmt.Errorf("exec %s: %w", argv[0], err)
	}
	sp.ids[pid] = req.ID
	pidfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		// A server the listener can't signal is one it can't stop. Its
		// exit, unregistered, is reaped without a word.
		delete(sp.ids, pid)
		_ = unix.Kill(pid, unix.SIGKILL)
		return fmt.Errorf("pidfd of %s: %w", argv[0], err)
	}
	sp.send(spawnReply{ID: req.ID}, pidfd)
	unix.Close(pidfd)
	return nil
}

// restrictThread enforces a Landlock ruleset on the calling (locked)
// thread alone, where Config.Restrict would enforce it on every thread.
func restrictThread(cfg landlock.Config, rules []landlock.Rule) error {
	fd, flags, err := cfg.NewRulesetFD(rules...)
	if err != nil || fd < 0 {
		return err
	}
	defer unix.Close(fd)
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	return ll.LandlockRestrictSelf(fd, flags)
}
