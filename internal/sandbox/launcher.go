package sandbox

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"

	"github.com/bouncer-mcp/bouncer/internal/pathtree"
)

// LauncherName is the hidden subcommand that runs RunLauncher. It is not
// meant to be typed; `bouncer run` puts it in front of the upstream's
// command line.
const LauncherName = "__sandbox-exec"

// Confinement is how an upstream server is confined: the policy's
// `sandbox:` key, converted by cmd/bouncer.
type Confinement struct {
	// ReadWrite are absolute paths the server may read, write and create
	// files under (its workspace).
	ReadWrite []string
	// ReadOnly are further absolute paths it may read (and execute).
	ReadOnly []string
	// ConnectTCP are the only TCP ports it may connect to. Empty means no
	// network at all: no IPv4 or IPv6 socket can be created.
	ConnectTCP []int
	// NoWrite are paths the server must not be able to write, such as the
	// policy files (a server that rewrote them would set the next
	// session's rules), and NoRead paths it must not even read, such as
	// Bouncer's state directory (pending approvals, the audit log of every
	// server). A ReadWrite or ReadOnly entry that contains one is an error.
	NoWrite, NoRead []string
	// Source is "FILE:LINE" of the key, for messages.
	Source string
}

// realPath resolves symbolic links where it can, so /link/x and /real/x
// compare equal.
func realPath(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return filepath.Clean(p)
}

// Reaches reports whether the planned domain would let the server read or
// write path (the path itself or a directory holding it is granted).
func (l Launch) Reaches(path string) (read, write bool) {
	rp := realPath(path)
	for _, w := range l.plan.Write {
		if pathtree.Within(rp, realPath(w)) {
			return true, true
		}
	}
	for _, r := range append(append([]string{}, l.plan.Read...), l.plan.Exec...) {
		if pathtree.Within(rp, realPath(r)) {
			return true, false
		}
	}
	return false, false
}

// systemExec are the directories every server may read and execute from:
// the dynamic loader, libc, the interpreters. Missing ones are skipped.
var systemExec = []string{"/usr", "/lib", "/lib64", "/lib32", "/libx32", "/bin", "/sbin"}

// systemRead are readable but not executable: configuration (resolv.conf,
// ssl certificates, passwd for getpwuid), the random devices, and the
// system-wide /proc files runtimes size themselves by. Not /proc as a
// whole: measured on Linux 6.18, a Landlock domain does not keep a process
// from reading another same-user process's /proc/PID/environ (the
// client's API keys, say), though it does refuse its fd links and root.
var systemRead = []string{"/etc", "/dev/urandom", "/dev/random", "/dev/zero",
	"/proc/meminfo", "/proc/stat", "/proc/cpuinfo", "/proc/loadavg", "/proc/uptime",
	"/proc/sys/kernel", "/proc/sys/vm/overcommit_memory"}

// selfProc is the confined process's own /proc directory. The launcher
// resolves /proc/self to /proc/PID when it builds the domain, and exec
// keeps the PID, so the server can read its own /proc entries (and its
// threads' under task/), while processes it starts cannot read theirs.
const selfProc = "/proc/self"

// launchPlan is the resolved domain, passed to the launcher on its command
// line. Every path is absolute.
type launchPlan struct {
	Strict bool `json:"strict,omitempty"`
	// Confine is true when the policy's sandbox key confines the server
	// to Exec, Read, Write and TCP.
	Confine bool     `json:"confine,omitempty"`
	Exec    []string `json:"exec,omitempty"`
	Read    []string `json:"read,omitempty"`
	Write   []string `json:"write,omitempty"`
	TCP     []int    `json:"tcp,omitempty"`
	// Own keeps the server off Bouncer's own files; nil leaves them to
	// the argument checks.
	Own *ownPlan `json:"own,omitempty"`
	// Spawner runs the launcher as bouncer listen's spawner
	// (runSpawner), with no server of its own.
	Spawner bool `json:"spawner,omitempty"`
}

// ownPlan is how the launcher keeps the server off Bouncer's own files.
type ownPlan struct {
	// Form is "namespace" or "landlock" (OwnForm's spelling).
	Form     string   `json:"form"`
	Hidden   []string `json:"hidden,omitempty"`
	ReadOnly []string `json:"read_only,omitempty"`
	// Around is what the landlock form grants whole: everything but the
	// own files and the directories that hold them.
	Around []string `json:"around,omitempty"`
	// Dir is the server's working directory, entered again once the
	// mounts are made (a directory entered before them would lead
	// under them).
	Dir string `json:"dir,omitempty"`
	// Probe sets up the form, reports and exits without starting the
	// server (bouncer doctor).
	Probe bool `json:"probe,omitempty"`
}

// Launch describes the upstream's confined start.
type Launch struct {
	// Path and Args replace the upstream's command: Path is this binary,
	// Args start with LauncherName. With Guard, Command gives them
	// instead, for the form being tried.
	Path string
	Args []string
	plan launchPlan
	caps Capabilities // what the launcher will find, for String
	// argv is the upstream's own command line, path first.
	argv []string
	own  *ownStart
}

// String says what the server will be allowed, for the proxy's stderr line.
func (l Launch) String() string {
	tcp := "none"
	if len(l.plan.TCP) > 0 {
		ports := make([]string, len(l.plan.TCP))
		for i, p := range l.plan.TCP {
			ports[i] = strconv.Itoa(p)
		}
		tcp = strings.Join(ports, ",")
	}
	layers := "landlock, seccomp denylist"
	switch {
	case l.caps.LandlockABI == 0 && !l.caps.Seccomp:
		return "upstream NOT confined: this kernel offers neither Landlock nor seccomp"
	case l.caps.LandlockABI == 0:
		layers = "seccomp denylist only, NO landlock: files and TCP are not confined"
	case !l.caps.Seccomp:
		layers = "landlock only, NO seccomp: MPTCP and raw IP sockets are not refused"
	}
	return fmt.Sprintf("upstream confined (%s): read-write %s; read-only extra %s; tcp connect %s",
		layers, list(l.plan.Write), list(extra(l.plan)), tcp)
}

func list(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, " ")
}

// extra is what the plan can read beyond the fixed system paths (and
// what lies below them, like /usr/bin for node).
func extra(p launchPlan) []string {
	var out []string
	system := append(append([]string{}, systemExec...), systemRead...)
	for _, s := range append(append([]string{}, p.Exec...), p.Read...) {
		if !pathtree.WithinAny(s, system) {
			out = append(out, s)
		}
	}
	return out
}

// LauncherArgs plans the confinement of the upstream command path (already
// looked up in PATH) with args, run in dir (empty: ours), and returns the
// command line that starts it confined. The server may read and execute
// the system directories, the directories of its program and interpreter
// (following symbolic links and a #! line; a Python virtual environment
// as a whole) and, for a script argument inside node_modules, that whole
// node_modules tree; read c.ReadOnly; read and write c.ReadWrite and
// /dev/null; connect to c.ConnectTCP. Not /tmp, not the home directory,
// not the terminal, unless listed.
//
// In Strict mode an old or missing Landlock is an error here, before
// anything starts; in Auto the launcher applies what the kernel offers.
func LauncherArgs(m Mode, c Confinement, path string, args []string, dir string) (Launch, error) {
	where := "sandbox"
	if c.Source != "" {
		where = c.Source + ": sandbox"
	}
	caps := Probe()
	if m == Strict {
		if err := caps.strictError(); err != nil {
			return Launch{}, err
		}
	}
	p, err := listedPlan(c, where)
	if err != nil {
		return Launch{}, err
	}
	p.Strict = m == Strict
	p.Confine = true
	p.Write = append(p.Write, "/dev/null")
	p.Exec = append(p.Exec, systemExec...)
	p.Read = append(p.Read, systemRead...)

	if !filepath.IsAbs(path) {
		lp, err := exec.LookPath(path)
		if err != nil {
			return Launch{}, fmt.Errorf("sandbox: upstream: %w", err)
		}
		path = lp
	}
	if !filepath.IsAbs(path) {
		base := dir
		if base == "" {
			base, _ = os.Getwd()
		}
		path = filepath.Join(base, path)
	}
	p.Exec = append(p.Exec, programDirs(path, 0)...)
	// The first operand is an interpreter's script (node index.js,
	// python server.py); it is readable, and a node_modules tree it sits
	// in. Later operands are the server's own business: list them.
	for _, a := range args {
		if strings.HasPrefix(a, "-") {
			continue
		}
		if !looksLikePath(a) {
			break
		}
		if !filepath.IsAbs(a) {
			base := dir
			if base == "" {
				base, _ = os.Getwd()
			}
			a = filepath.Join(base, a)
		}
		if st, err := os.Stat(a); err == nil && st.Mode().IsRegular() {
			p.Read = append(p.Read, scriptPaths(a)...)
		}
		break
	}
	p.Exec, p.Read, p.Write = dedupe(p.Exec), dedupe(p.Read), dedupe(p.Write)
	l := Launch{plan: p}
	if err := l.keepsOff(c, where); err != nil {
		return Launch{}, err
	}

	l = Launch{plan: p, caps: caps, argv: append([]string{path}, args...)}
	l.Path, l.Args, err = l.launcher(p)
	return l, err
}

// launcher is the command line that runs the launcher with plan p.
func (l Launch) launcher(p launchPlan) (path string, args []string, err error) {
	enc, err := json.Marshal(p)
	if err != nil {
		return "", nil, fmt.Errorf("sandbox: %w", err)
	}
	// This very binary, even if it was replaced on disk since.
	return launcherPath, append([]string{LauncherName, base64.RawURLEncoding.EncodeToString(enc), "--"}, l.argv...), nil
}

// Validate checks a policy's confinement on its own, without an upstream
// command: every listed path absolute and existing, every port in range,
// and no listed path reaching c.NoWrite or c.NoRead. bouncer check and
// serve call it so that they refuse what bouncer run refuses; run's
// LauncherArgs makes the same checks and more.
func Validate(c Confinement) error {
	where := "sandbox"
	if c.Source != "" {
		where = c.Source + ": sandbox"
	}
	p, err := listedPlan(c, where)
	if err != nil {
		return err
	}
	return Launch{plan: p}.keepsOff(c, where)
}

// listedPlan is the part of a plan that the policy lists.
func listedPlan(c Confinement, where string) (launchPlan, error) {
	var p launchPlan
	for _, s := range c.ReadWrite {
		if err := checkListed(s); err != nil {
			return p, fmt.Errorf("%s.read_write: %w", where, err)
		}
		p.Write = append(p.Write, filepath.Clean(s))
	}
	for _, s := range c.ReadOnly {
		if err := checkListed(s); err != nil {
			return p, fmt.Errorf("%s.read_only: %w", where, err)
		}
		p.Read = append(p.Read, filepath.Clean(s))
	}
	for _, port := range c.ConnectTCP {
		if port < 1 || port > 65535 {
			return p, fmt.Errorf("%s.connect_tcp: port %d is out of range 1-65535", where, port)
		}
		p.TCP = append(p.TCP, port)
	}
	return p, nil
}

// keepsOff refuses a plan that reaches what c says the server must not
// write or read: a listed path that holds it, or one inside it (a
// read_write path inside the state directory or an installed policy
// set's directory reaches a part of it as surely as the whole).
func (l Launch) keepsOff(c Confinement, where string) error {
	for _, n := range c.NoWrite {
		if _, w := l.Reaches(n); w {
			return fmt.Errorf("%s.read_write: the server could write %s, which it must not change", where, n)
		}
		if p, ok := listedInside(l.plan.Write, n); ok {
			return fmt.Errorf("%s.read_write: the server could write %s, inside %s, which it must not change", where, p, n)
		}
	}
	for _, n := range c.NoRead {
		if r, w := l.Reaches(n); r {
			key := "read_only"
			if w {
				key = "read_write"
			}
			return fmt.Errorf("%s.%s: the server could read %s, which it must not see", where, key, n)
		}
		if p, ok := listedInside(l.plan.Write, n); ok {
			return fmt.Errorf("%s.read_write: the server could read %s, inside %s, which it must not see", where, p, n)
		}
		if p, ok := listedInside(l.plan.Read, n); ok {
			return fmt.Errorf("%s.read_only: the server could read %s, inside %s, which it must not see", where, p, n)
		}
	}
	return nil
}

// listedInside returns the first of paths that lies inside dir, its
// symlinks resolved on both sides.
func listedInside(paths []string, dir string) (string, bool) {
	rd := realPath(dir)
	for _, p := range paths {
		if pathtree.Within(realPath(p), rd) {
			return p, true
		}
	}
	return "", false
}

// checkListed accepts an absolute path that exists.
func checkListed(s string) error {
	if !filepath.IsAbs(s) {
		return fmt.Errorf("%q is not an absolute path", s)
	}
	if _, err := os.Stat(s); err != nil {
		return fmt.Errorf("%q: %w", s, errors.Unwrap(err))
	}
	return nil
}

// looksLikePath rules out URLs and empty strings.
func looksLikePath(a string) bool {
	return a != "" && !strings.Contains(a, "://")
}

// programDirs are the directories a program needs to be executed from: its
// own directory as named and as resolved, its interpreter's (from a #!
// line, one level deep like the kernel's binfmt_script for our purpose)
// and a Python virtual environment it lives in.
func programDirs(path string, depth int) []string {
	var out []string
	add := func(p string) {
		d := filepath.Dir(p)
		out = append(out, d)
		if root := filepath.Dir(d); fileExists(filepath.Join(root, "pyvenv.cfg")) {
			out = append(out, root)
		}
	}
	add(path)
	real, err := filepath.EvalSymlinks(path)
	if err == nil && real != path {
		add(real)
	}
	if depth == 0 {
		if interp := shebang(path); interp != "" && filepath.IsAbs(interp) {
			out = append(out, programDirs(interp, 1)...)
		}
	}
	return out
}

// scriptPaths is what reading a script needs: the outermost node_modules
// directory it sits in (a package's dependencies are beside it), else the
// script file alone. A script's own directory is not granted, since that
// is often a home directory; list it under read_only when the script
// imports its neighbours.
func scriptPaths(script string) []string {
	real, err := filepath.EvalSymlinks(script)
	if err != nil {
		real = script
	}
	var out []string
	for _, p := range dedupe([]string{script, real}) {
		parts := strings.Split(p, string(filepath.Separator))
		idx := -1
		for i, c := range parts {
			if c == "node_modules" {
				idx = i
				break
			}
		}
		if idx > 0 {
			out = append(out, strings.Join(parts[:idx+1], string(filepath.Separator)))
		} else {
			out = append(out, p)
		}
	}
	return out
}

// shebang returns the interpreter named by a "#!" first line, or "".
func shebang(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	line, err := bufio.NewReader(io.LimitReader(f, 256)).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return ""
	}
	if !strings.HasPrefix(line, "#!") {
		return ""
	}
	fields := strings.Fields(strings.TrimPrefix(line, "#!"))
	if len(fields) == 0 {
		return ""
	}
	interp := fields[0]
	// "#!/usr/bin/env node": the real interpreter is found in PATH.
	if filepath.Base(interp) == "env" {
		for _, f := range fields[1:] {
			if strings.HasPrefix(f, "-") || strings.Contains(f, "=") {
				continue
			}
			if lp, err := exec.LookPath(f); err == nil {
				return lp
			}
			break
		}
	}
	return interp
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

func dedupe(s []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range s {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

// RunLauncher is the hidden subcommand: args are the encoded plan, "--",
// and the server's command line. It applies the server's Landlock domain
// and seccomp denylist to itself and then becomes the server; it returns
// only on failure, with status 126 (the shell's "cannot execute") after a
// "bouncer: sandbox launcher: ..." line on stderr.
func RunLauncher(args []string) int {
	err := launch(args)
	if errors.Is(err, errOwnSetup) {
		return 125 // the proxy was told why, and tries a weaker form
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "bouncer: sandbox launcher: %v\n", err)
		return 126
	}
	return 0 // not reached: launch execs or fails
}

// errLauncherUsage is a launcher command line that isn't one.
var errLauncherUsage = errors.New("usage: " + LauncherName + " PLAN -- COMMAND [ARGS]")

// launcherCommand reads the launcher's arguments (PLAN -- COMMAND [ARGS],
// as Launch.launcher writes them), for the launcher and the spawner alike.
// Only the spawner's own plan has no command.
func launcherCommand(args []string) (launchPlan, []string, error) {
	if len(args) < 2 || args[1] != "--" {
		return launchPlan{}, nil, errLauncherUsage
	}
	p, err := decodePlan(args[0])
	if err != nil {
		return p, nil, err
	}
	argv := args[2:]
	if len(argv) == 0 && !p.Spawner {
		return p, nil, errLauncherUsage
	}
	return p, argv, nil
}

func launch(args []string) error {
	p, argv, err := launcherCommand(args)
	if err != nil {
		return err
	}
	if p.Spawner {
		return runSpawner()
	}
	caps := Probe()
	if p.Strict {
		if err := caps.strictError(); err != nil {
			return err
		}
	}
	// In the namespace form (started in new namespaces by the proxy) the
	// launcher makes the mounts, and then runs the server as the PID
	// namespace's init; in the landlock form it applies the domain and
	// becomes the server. Either way it tells the proxy first.
	namespace := p.Own != nil && p.Own.Form == OwnNamespace.String()
	if p.Own != nil {
		var st ownStatus
		var err error
		if namespace {
			st, err = mountOwn(*p.Own)
		} else {
			st, err = guardAround(*p.Own, caps.LandlockABI)
		}
		if err := reportOwn(st, err); err != nil {
			return err
		}
		if p.Own.Probe {
			os.Exit(0)
		}
	}
	if err := confine(p, caps, false); err != nil {
		return err
	}
	if namespace {
		return runInit(argv, caps.LandlockABI > 0)
	}
	if err := syscall.Exec(argv[0], argv, os.Environ()); err != nil {
		return fmt.Errorf("exec %s: %w", argv[0], err)
	}
	return nil
}

// confine applies the sandbox key's Landlock domain and seccomp denylist,
// as far as the kernel offers them (p.Strict made sure it offers both).
// With thisThread it confines the calling (locked) thread alone, as the
// spawner confines the thread it starts a server from; else the whole
// process, as the launcher does before it becomes the server.
func confine(p launchPlan, caps Capabilities, thisThread bool) error {
	if !p.Confine {
		return nil
	}
	if caps.LandlockABI > 0 {
		rules, err := upstreamRules(p, caps.LandlockABI)
		if err != nil {
			return err
		}
		if thisThread {
			err = restrictThread(upstreamLandlock(), rules)
		} else {
			err = upstreamLandlock().Restrict(rules...)
		}
		if err != nil {
			return fmt.Errorf("landlock: %w", err)
		}
	}
	if caps.Seccomp {
		info, err := nativeArch()
		if err != nil {
			return err
		}
		prog, err := upstreamFilter(info, len(p.TCP) == 0, caps.LandlockABI < 9)
		if err != nil {
			return err
		}
		if thisThread {
			err = loadThreadFilter(prog)
		} else {
			err = loadFilter(prog)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// decodePlan reads the launcher's first argument. Anything odd is refused:
// unknown fields, trailing data, relative paths, ports out of range.
func decodePlan(s string) (launchPlan, error) {
	var p launchPlan
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return p, fmt.Errorf("plan: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return p, fmt.Errorf("plan: %w", err)
	}
	if dec.More() {
		return p, errors.New("plan: trailing data")
	}
	lists := [][]string{p.Exec, p.Read, p.Write}
	if p.Own != nil {
		if f, err := ParseOwnForm(p.Own.Form); err != nil || f == OwnArguments {
			return p, fmt.Errorf("plan: own files form %q", p.Own.Form)
		}
		if p.Own.Dir != "" && !filepath.IsAbs(p.Own.Dir) {
			return p, fmt.Errorf("plan: %q is not absolute", p.Own.Dir)
		}
		lists = append(lists, p.Own.Hidden, p.Own.ReadOnly, p.Own.Around)
	}
	for _, list := range lists {
		for _, path := range list {
			if !filepath.IsAbs(path) {
				return p, fmt.Errorf("plan: %q is not absolute", path)
			}
		}
	}
	for _, port := range p.TCP {
		if port < 1 || port > 65535 {
			return p, fmt.Errorf("plan: port %d out of range", port)
		}
	}
	return p, nil
}

// upstreamLandlock handles all file-system rights, TCP, and both IPC
// scopes: the server cannot signal the proxy or reach abstract UNIX
// sockets outside its domain. UDP is not handled: without it no server
// could resolve a host name; with no TCP port listed the seccomp filter
// refuses IP sockets altogether.
func upstreamLandlock() landlock.Config {
	return landlock.Config{
		HandledAccessFS:  landlock.V9.HandledAccessFS,
		HandledAccessNet: landlock.V4.HandledAccessNet,
		Scoped:           landlock.V6.Scoped,
	}.BestEffort()
}

const (
	execRights = ll.AccessFSExecute | ll.AccessFSReadFile | ll.AccessFSReadDir
	rwFile     = ll.AccessFSReadFile | ll.AccessFSWriteFile | ll.AccessFSTruncate
)

func upstreamRules(p launchPlan, abi int) ([]landlock.Rule, error) {
	var rules []landlock.Rule
	add := func(dirRights, fileRights landlock.AccessFSSet, paths []string, mustExist bool) error {
		for _, s := range paths {
			st, err := os.Stat(s)
			if err != nil {
				if !mustExist && errors.Is(err, os.ErrNotExist) {
					continue
				}
				return fmt.Errorf("%s: %w", s, err)
			}
			if st.IsDir() {
				rules = append(rules, landlock.PathAccess(dirRights, s))
			} else {
				rules = append(rules, landlock.PathAccess(fileRights, s))
			}
		}
		return nil
	}
	// Everything but "refer" (moving files between directories), which
	// ABI 1 cannot grant: best effort would then drop the whole domain.
	rw := landlock.V9.HandledAccessFS &^ ll.AccessFSRefer
	if abi >= 2 {
		rw |= ll.AccessFSRefer
	}
	if err := add(execRights, execRights&^ll.AccessFSReadDir, p.Exec, false); err != nil {
		return nil, err
	}
	if err := add(readDir, readFile, append(p.Read, selfProc), false); err != nil {
		return nil, err
	}
	if err := add(rw, rwFile, p.Write, true); err != nil {
		return nil, err
	}
	sort.Ints(p.TCP)
	for _, port := range p.TCP {
		rules = append(rules, landlock.ConnectTCP(uint16(port)))
	}
	return rules, nil
}

// Unworkable says why an upstream command can't work under confinement c,
// or "": package runners (npx -y, uvx, bunx, pnpm dlx) fetch the server
// when they start, and container tools (docker, podman) talk to a daemon's
// socket, and the sandbox gives the upstream neither the network nor the
// home directory and caches they need. Such an upstream hangs or fails at
// start, which looks like a broken server; bouncer run says so first.
func Unworkable(path string, args []string, c Confinement) string {
	base := filepath.Base(path)
	sub := ""
	if len(args) > 0 {
		sub = args[0]
	}
	switch {
	case base == "npx" || base == "pnpx" || base == "bunx" || base == "uvx" ||
		(base == "npm" && sub == "exec") || (base == "pnpm" && sub == "dlx") || (base == "yarn" && sub == "dlx") || (base == "uv" && sub == "tool"):
		return fmt.Sprintf("the upstream starts with %s, which fetches the server at start from the network and into your home directory's cache; "+
			"the sandbox key gives it neither, so it will hang or fail. Install the server and run it directly "+
			"(for example: npm install in a directory listed in sandbox.read_only, then node .../dist/index.js), or run with --sandbox off", base)
	case base == "docker" || base == "podman" || base == "nerdctl":
		return fmt.Sprintf("the upstream starts with %s, which needs its daemon's socket; the sandbox key does not give it, so it will fail. "+
			"Confine the container with its own options instead, and run with --sandbox off", base)
	}
	return ""
}
