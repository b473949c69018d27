// Package e2e runs the real bouncer binary in front of real MCP servers, for
// end-to-end tests in any package. A test starts `bouncer run --sandbox off
// --home TMP [--policy FILE] -- SERVER`, sends raw JSON-RPC lines (the bytes
// exactly as given, so hostile JSON such as duplicate keys, case-folded keys
// and lone surrogate escapes reaches the proxy untouched), reads the raw
// responses, and then checks what the server really did (its side-effects
// file, the files it wrote) and what Bouncer recorded (its audit log).
//
// The servers:
//
//   - MCPGo: internal/testsupport/testserver/mcpgo, built on github.com/mark3labs/mcp-go,
//     decoding arguments with encoding/json into structs (case-insensitive
//     keys with Unicode folding, last matching key wins, lone surrogates
//     become U+FFFD).
//   - JSONParse: testdata/servers/jsonparse-server.mjs, plain JSON.parse
//     (exact keys, last duplicate wins, lone surrogates kept).
//   - Filesystem: the npm reference @modelcontextprotocol/server-filesystem.
//   - Builder: testdata/servers/builder-server.mjs, whose tools build what
//     they act on from their arguments (path.join(savePath, filename),
//     sh -c, python3 -c), as real servers do.
//   - Toolbox: internal/testsupport/testserver/toolbox, Builder's
//     download_attachment in Go (filepath.Join), on mcp-go.
//
// The bouncer binary and the Go test servers are built once per test binary
// into a temporary directory (go build, from the module root found above
// the test's working directory). Tests that need node skip when it is not
// installed (and fail when $CI is set, as the proxy tests' npm helper does).
//
// For example, a duplicate key that must never reach the server:
//
//	s := e2e.Start(t, e2e.MCPGo(t), e2e.Options{Policy: "send_email:\n  exfiltrating: true\n"})
//	r := s.Roundtrip(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"send_email","arguments":{"to":"a@x.example","tO":"b@evil.example"}}}`)
//	if !r.Blocked() || s.SideEffects() != nil { t.Fatalf("%s reached the server: %q", r.Raw, s.SideEffects()) }
//	t.Log(s.Audit()[0].Verdict, s.Audit()[0].Rule)
//
// Only tests import this package.
package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bouncer-mcp/bouncer/internal/audit"
	"github.com/bouncer-mcp/bouncer/internal/testsupport/need"
	"github.com/bouncer-mcp/bouncer/internal/testsupport/syncbuf"
)

const modulePath = "github.com/bouncer-mcp/bouncer"

// Server is an upstream MCP server: the command bouncer runs after "--".
type Server struct {
	Name string   // "mcpgo", "jsonparse" or "filesystem"
	Argv []string // the command and its arguments
	// SideEffects is the file the server appends one JSON line to per
	// action, before it answers the call; "" for the filesystem server.
	SideEffects string
}

var (
	buildOnce sync.Once
	buildDir  string
	buildErr  error
)

// build compiles bouncer and the Go test servers once per test binary.
func build(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		root, err := moduleRoot()
		if err != nil {
			buildErr = err
			return
		}
		dir, err := os.MkdirTemp("", "bouncer-e2e")
		if err != nil {
			buildErr = err
			return
		}
		cmd := exec.Command("go", "build", "-o", dir+string(filepath.Separator),
			"./cmd/bouncer", "./internal/testsupport/testserver/mcpgo", "./internal/testsupport/testserver/toolbox")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
			return
		}
		buildDir = dir
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return buildDir
}

// RemoveBuilds deletes the binaries built for this test binary, if any.
// Call it from TestMain after m.Run to leave nothing in the temp directory.
func RemoveBuilds() {
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
}

// Bouncer returns the path of the bouncer binary built from this module.
func Bouncer(t testing.TB) string { return filepath.Join(build(t), "bouncer") }

// ModuleRoot returns the root of the bouncer module (where go.mod is).
func ModuleRoot(t testing.TB) string {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.HasPrefix(string(b), "module "+modulePath+"\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("e2e: no go.mod of " + modulePath + " above the working directory")
		}
		dir = parent
	}
}

func sideEffectsFile(t testing.TB) string {
	return filepath.Join(t.TempDir(), "side-effects.jsonl")
}

// MCPGo returns the mcp-go test server. read_inbox names inbox (default
// attacker@evil.example).
func MCPGo(t testing.TB, inbox ...string) Server {
	t.Helper()
	se := sideEffectsFile(t)
	argv := []string{filepath.Join(build(t), "mcpgo"), "--side-effects", se}
	if len(inbox) > 0 {
		argv = append(argv, "--inbox", strings.Join(inbox, ","))
	}
	return Server{Name: "mcpgo", Argv: argv, SideEffects: se}
}

// Toolbox returns the toolbox test server: a Gmail-style
// download_attachment in Go, which writes to filepath.Join(savePath,
// filename).
func Toolbox(t testing.TB) Server {
	t.Helper()
	return Server{Name: "toolbox", Argv: []string{filepath.Join(build(t), "toolbox")}}
}

// Node returns the path of node, or skips the test when it is missing
// (fails when $CI is set).
func Node(t testing.TB) string {
	t.Helper()
	return need.Node(t)
}

// JSONParse returns the JSON.parse node test server. read_inbox names inbox
// (default attacker@evil.example).
func JSONParse(t testing.TB, inbox ...string) Server {
	t.Helper()
	node := Node(t)
	se := sideEffectsFile(t)
	argv := []string{node, filepath.Join(ModuleRoot(t), "testdata", "servers", "jsonparse-server.mjs"), "--side-effects", se}
	if len(inbox) > 0 {
		argv = append(argv, "--inbox", strings.Join(inbox, ","))
	}
	return Server{Name: "jsonparse", Argv: argv, SideEffects: se}
}

// Builder returns the node test server whose tools build what they act on
// from their arguments: download_attachment writes path.join(savePath,
// filename), run_command runs sh -c, run_python runs python3 -c.
func Builder(t testing.TB) Server {
	t.Helper()
	return Server{Name: "builder", Argv: []string{Node(t), filepath.Join(ModuleRoot(t), "testdata", "servers", "builder-server.mjs")}}
}

// Filesystem returns the npm reference filesystem server confined (by
// itself) to dirs. It skips the test when node or the package is missing
// (run npm ci in testdata/npm), and fails then when $CI is set.
func Filesystem(t testing.TB, dirs ...string) Server {
	t.Helper()
	node := Node(t)
	script := need.NPM(t, "@modelcontextprotocol/server-filesystem/dist/index.js")
	return Server{Name: "filesystem", Argv: append([]string{node, script}, dirs...)}
}

// Options configure a Session.
type Options struct {
	// Policy is YAML policy text, written to a temporary policy.yaml and passed
	// as --policy; "{{DIR}}" in it is replaced by the session's Dir.
	// Empty means no --policy (the built-in packs only).
	Policy string
	// Dir is the working directory of bouncer and so of the server
	// (relative paths the server writes land there); default a new
	// temporary directory.
	Dir string
	// Args are more `bouncer run` flags, put before "--".
	Args []string
	// Env is added to the environment bouncer (and so the server) gets.
	Env []string
	// Direct runs the server itself, with no bouncer in front: what the
	// server would do with a line if the proxy forwarded it as is.
	Direct bool
	// NoHandshake leaves initialize to the test.
	NoHandshake bool
	// Timeout bounds each wait for a line; default 30s.
	Timeout time.Duration
	// Home is bouncer's --home; default a new temporary directory. Proxies
	// of one client session share it.
	Home string
	// Via is a command that starts bouncer as its child (for example a
	// python3 one-liner): bouncer's parent, and so its client, is then
	// that process, not the test.
	Via []string
}

// Session is one running bouncer (or, with Direct, the bare server) and the
// client end of its stdio.
type Session struct {
	t       testing.TB
	Server  Server
	Home    string // bouncer's --home: audit.jsonl, pending.json, sessions/
	Dir     string // the working directory
	Timeout time.Duration

	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan []byte
	stderr *syncbuf.Buffer
	done   chan struct{} // closed when the process has exited
	exit   error
	closed bool
	// Others holds the lines Response skipped over (notifications,
	// requests from the server, responses to other ids), in order.
	Others [][]byte
}

// Start runs `bouncer run --sandbox off --home HOME [--policy FILE]
// [o.Args...] -- srv.Argv...` (or, with o.Direct, srv.Argv alone) and, unless
// o.NoHandshake, initializes the session as a 2025-06-18 client without
// elicitation. The process is stopped when the test ends.
func Start(t testing.TB, srv Server, o Options) *Session {
	t.Helper()
	s := &Session{t: t, Server: srv, Home: o.Home, Dir: o.Dir, Timeout: o.Timeout,
		lines: make(chan []byte, 256), stderr: &syncbuf.Buffer{}, done: make(chan struct{})}
	if s.Dir == "" {
		s.Dir = t.TempDir()
	}
	if s.Home == "" {
		s.Home = t.TempDir()
	}
	if s.Timeout == 0 {
		s.Timeout = 30 * time.Second
	}
	var argv []string
	if o.Direct {
		argv = srv.Argv
	} else {
		argv = []string{Bouncer(t), "run", "--sandbox", "off", "--home", s.Home}
		if o.Policy != "" {
			f := filepath.Join(t.TempDir(), "policy.yaml")
			if err := os.WriteFile(f, []byte(strings.ReplaceAll(o.Policy, "{{DIR}}", s.Dir)), 0o600); err != nil {
				t.Fatal(err)
			}
			argv = append(argv, "--policy", f)
		}
		argv = append(argv, o.Args...)
		argv = append(append(argv, "--"), srv.Argv...)
	}
	argv = append(append([]string(nil), o.Via...), argv...)
	s.cmd = exec.Command(argv[0], argv[1:]...)
	s.cmd.Dir = s.Dir
	s.cmd.Env = append(os.Environ(), o.Env...)
	s.cmd.Stderr = s.stderr
	s.cmd.WaitDelay = 5 * time.Second // for a child that keeps stderr open
	var err error
	if s.stdin, err = s.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	// Our own pipe, not StdoutPipe: Wait must not close it under the
	// reader, which reads to the end.
	stdout, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	s.cmd.Stdout = w
	err = s.cmd.Start()
	w.Close()
	if err != nil {
		stdout.Close()
		t.Fatalf("start %q: %v", argv, err)
	}
	go func() {
		r := bufio.NewReaderSize(stdout, 64<<10)
		for {
			line, err := r.ReadBytes('\n')
			if len(line) > 0 {
				s.lines <- bytes.TrimRight(line, "\r\n")
			}
			if err != nil {
				stdout.Close()
				close(s.lines)
				return
			}
		}
	}()
	go func() {
		s.exit = s.cmd.Wait()
		close(s.done)
	}()
	t.Cleanup(func() {
		go func() {
			for range s.lines { // unread lines must not block the reader
			}
		}()
		_ = s.Close()
		if t.Failed() {
			t.Logf("%s stderr:\n%s", srv.Name, s.Stderr())
		}
	})
	if !o.NoHandshake {
		s.Handshake()
	}
	return s
}

// Kill stops bouncer with SIGKILL, as a crash would, and waits for it.
func (s *Session) Kill() {
	s.t.Helper()
	if err := s.cmd.Process.Kill(); err != nil {
		s.t.Fatalf("kill: %v", err)
	}
	<-s.done
}

// Handshake sends initialize (protocol 2025-06-18, no client capabilities)
// and notifications/initialized, and fails the test on an error answer.
func (s *Session) Handshake() {
	s.t.Helper()
	r := s.Roundtrip(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"e2e","version":"1"}}}`)
	if r.Error != nil {
		s.t.Fatalf("initialize: %s", r.Raw)
	}
	s.Send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

// Send writes line, byte for byte, followed by a newline (unless it ends
// with one already).
func (s *Session) Send(line string) {
	s.t.Helper()
	if !strings.HasSuffix(line, "\n") {
		line += "\n"
	}
	if _, err := io.WriteString(s.stdin, line); err != nil {
		s.t.Fatalf("send: %v\n%s", err, s.Stderr())
	}
}

// Next returns the next line the process writes, raw.
func (s *Session) Next() []byte {
	s.t.Helper()
	select {
	case line, ok := <-s.lines:
		if !ok {
			s.t.Fatalf("%s closed its stdout (exit: %v)\n%s", s.Server.Name, s.waitExit(time.Second), s.Stderr())
		}
		return line
	case <-time.After(s.Timeout):
		s.t.Fatalf("no line from %s in %v\n%s", s.Server.Name, s.Timeout, s.Stderr())
	}
	return nil
}

// Response reads lines until the response whose id equals id, given as JSON
// text (`7`, `"a"`); the lines before it go to s.Others.
func (s *Session) Response(id string) Response {
	s.t.Helper()
	var want any
	if err := json.Unmarshal([]byte(id), &want); err != nil {
		s.t.Fatalf("Response: id %s is not JSON: %v", id, err)
	}
	for {
		line := s.Next()
		var m map[string]json.RawMessage
		if json.Unmarshal(line, &m) == nil {
			_, isReq := m["method"]
			var got any
			if raw, ok := m["id"]; ok && !isReq && json.Unmarshal(raw, &got) == nil && reflect.DeepEqual(got, want) {
				return parseResponse(line)
			}
		}
		s.Others = append(s.Others, line)
	}
}

// Roundtrip sends line and returns the response to it. The id to wait for
// is the line's top-level "id" (exact key; the last one if repeated); for a
// line with no readable id, use Send and Response.
func (s *Session) Roundtrip(line string) Response {
	s.t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(line), &m); err != nil || m["id"] == nil {
		s.t.Fatalf("Roundtrip: no id to wait for in %s (use Send and Response)", line)
	}
	s.Send(line)
	return s.Response(string(m["id"]))
}

// CallTool sends tools/call for tool with argsJSON as the arguments, byte
// for byte, and returns the response.
func (s *Session) CallTool(id int, tool, argsJSON string) Response {
	s.t.Helper()
	name, _ := json.Marshal(tool)
	return s.Roundtrip(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%s,"arguments":%s}}`, id, name, argsJSON))
}

// Response is one JSON-RPC response, raw and decoded.
type Response struct {
	Raw    []byte          // the line as written
	Result json.RawMessage // nil for an error response
	Error  *RPCError
	// Text is the first text block of a tool result, IsError its isError.
	Text    string
	IsError bool
}

// RPCError is a JSON-RPC error object.
type RPCError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// BlockedPrefix starts the text of every call Bouncer refuses.
const BlockedPrefix = "[bouncer blocked] "

// Blocked reports whether Bouncer refused the call (the contract's blocked
// tool result).
func (r Response) Blocked() bool { return r.IsError && strings.HasPrefix(r.Text, BlockedPrefix) }

func parseResponse(line []byte) Response {
	r := Response{Raw: line}
	var m struct {
		Result json.RawMessage `json:"result"`
		Error  *RPCError       `json:"error"`
	}
	_ = json.Unmarshal(line, &m)
	r.Result, r.Error = m.Result, m.Error
	var res struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	}
	if json.Unmarshal(r.Result, &res) == nil {
		r.IsError = res.IsError
		for _, c := range res.Content {
			if c.Type == "text" {
				r.Text = c.Text
				break
			}
		}
	}
	return r
}

// SideEffects returns the server's side-effects lines, raw (a lone
// surrogate the node server kept is still the escape \ud800 here), in
// order; nil when it has acted on nothing.
func (s *Session) SideEffects() []string {
	s.t.Helper()
	if s.Server.SideEffects == "" {
		s.t.Fatalf("%s keeps no side-effects file", s.Server.Name)
	}
	b, err := os.ReadFile(s.Server.SideEffects)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		s.t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// Effects returns the side-effects lines decoded (strings through
// encoding/json, so a lone surrogate reads as U+FFFD; use SideEffects to
// tell them apart).
func (s *Session) Effects() []map[string]any {
	s.t.Helper()
	var out []map[string]any
	for _, line := range s.SideEffects() {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			s.t.Fatalf("side-effects line %s: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}

// Audit returns bouncer's audit log entries (nil before the first line,
// and always with Direct).
func (s *Session) Audit() []audit.Entry {
	s.t.Helper()
	es, err := audit.ReadFile(filepath.Join(s.Home, "audit.jsonl"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		s.t.Fatal(err)
	}
	return es
}

// Pid is the process ID of bouncer (or, with Direct, the server).
func (s *Session) Pid() int { return s.cmd.Process.Pid }

// Stderr returns what the process wrote to stderr so far.
func (s *Session) Stderr() string { return s.stderr.String() }

// Close closes the process's stdin and waits for it to exit (bouncer then
// stops the server), killing it after 10s. It returns the exit error.
func (s *Session) Close() error {
	if !s.closed {
		s.closed = true
		s.stdin.Close()
	}
	return s.waitExit(10 * time.Second)
}

func (s *Session) waitExit(d time.Duration) error {
	select {
	case <-s.done:
	case <-time.After(d):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
	return s.exit
}
