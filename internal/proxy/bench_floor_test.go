package proxy

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"testing"
)

// envPump makes the test binary a byte pump between its stdio and a
// streamable HTTP server (see floorPump): the value names the HTTP client,
// "nethttp" or "raw", and the first argument is the server's URL.
const envPump = "BOUNCER_TEST_PUMP"

// runPumpIfAsked runs the pump and exits, when the test binary was started
// as one.
func runPumpIfAsked() {
	kind := os.Getenv(envPump)
	if kind == "" {
		return
	}
	if err := floorPump(kind, os.Args[len(os.Args)-1], os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "pump:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// floorPump relays a stdio MCP client to a streamable HTTP server and
// does nothing else: no parsing, judging, recording or audit line, one
// request at a time, no event stream of its own. It is the least any
// stdio-to-HTTP proxy must do, so BenchmarkPairedRemoteFloor measures the
// ratio below which `bouncer run --url` can't go on this machine.
//
// It reads each POST's answer as the go-sdk's server writes it (a JSON
// body, or events of one data line each) and is no MCP client: a test
// device, not a reference.
//
// kind "nethttp" posts through net/http's client, as Remote does; "raw"
// writes HTTP/1.1 on one TCP connection itself and reads the answers
// with http.ReadResponse, which saves net/http's connection goroutines.
func floorPump(kind, endpoint string, in io.Reader, out io.Writer) error {
	u, err := url.Parse(endpoint)
	if err != nil {
		return err
	}
	var post func(body []byte, h http.Header) (*http.Response, error)
	switch kind {
	case "nethttp":
		client := &http.Client{}
		post = func(body []byte, h http.Header) (*http.Response, error) {
			req, err := http.NewRequest(http.MethodPost, endpoint, bytes.NewReader(body))
			if err != nil {
				return nil, err
			}
			req.Header = h
			return client.Do(req)
		}
	case "raw":
		conn, err := net.Dial("tcp", u.Host)
		if err != nil {
			return err
		}
		defer conn.Close()
		br := bufio.NewReaderSize(conn, 64<<10)
		var head bytes.Buffer
		post = func(body []byte, h http.Header) (*http.Response, error) {
			head.Reset()
			fmt.Fprintf(&head, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n", u.RequestURI(), u.Host, len(body))
			if err := h.Write(&head); err != nil {
				return nil, err
			}
			head.WriteString("\r\n")
			head.Write(body)
			if _, err := conn.Write(head.Bytes()); err != nil {
				return nil, err
			}
			return http.ReadResponse(br, nil)
		}
	default:
		return fmt.Errorf("%s=%q: want nethttp or raw", envPump, kind)
	}
	lines := bufio.NewReaderSize(in, 64<<10)
	var session, version string
	for {
		line, err := lines.ReadBytes('\n')
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		h := http.Header{}
		h.Set("Content-Type", "application/json")
		h.Set("Accept", "application/json, text/event-stream")
		if session != "" {
			h.Set("Mcp-Session-Id", session)
			h.Set("Mcp-Protocol-Version", version)
		}
		resp, err := post(line, h)
		if err != nil {
			return err
		}
		if s := resp.Header.Get("Mcp-Session-Id"); s != "" && session == "" {
			session, version = s, "2025-11-25"
		}
		body := bufio.NewReaderSize(resp.Body, 64<<10)
		for {
			l, err := body.ReadBytes('\n')
			l = bytes.TrimRight(l, "\r\n")
			switch {
			case bytes.HasPrefix(l, []byte("data: ")):
				l = l[len("data: "):]
			case !bytes.HasPrefix(l, []byte("{")):
				l = nil
			}
			if len(l) > 0 {
				if _, werr := out.Write(append(l, '\n')); werr != nil {
					return werr
				}
			}
			if err != nil {
				break
			}
		}
		resp.Body.Close()
	}
}

// BenchmarkPairedRemoteFloor is BenchmarkPairedRemoteTrivial and
// BenchmarkPairedRemoteCall1MiB with floorPump in bouncer's place: the
// ratio a stdio-to-HTTP relay costs before any of bouncer's work.
func BenchmarkPairedRemoteFloor(b *testing.B) {
	for _, kind := range []string{"nethttp", "raw"} {
		for _, c := range []struct {
			name string
			tool string
			args map[string]any
		}{{"trivial", "echo", trivialArgs}, {"1MiB", "big", bigArgs}} {
			b.Run(kind+"/"+c.name, func(b *testing.B) {
				url, _ := startHTTPServer(b, b.TempDir(), "streamable", "")
				direct := remoteBenchSession(b, url, false)
				exe, err := os.Executable()
				if err != nil {
					b.Fatal(err)
				}
				cmd := exec.Command(exe, url)
				cmd.Env = append(os.Environ(), envPump+"="+kind)
				pumped := commandBenchSession(b, cmd)
				pairedCalls(b, direct, pumped, c.tool, c.args)
			})
		}
	}
}
