package testserver

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Environment of the helpdesk served over HTTP (Main's "helpdesk-http"):
// EnvHTTP is a comma-separated list of options, EnvToken a bearer token
// every request must carry (401 with a WWW-Authenticate challenge if not).
//
// Options:
//
//	sse        the older HTTP+SSE transport instead of streamable HTTP
//	json       streamable HTTP answering posts with JSON, not event streams
//	events     streamable HTTP with an event store, so streams resume
//	changed    echo is defined as change_echo leaves it, as a server that
//	           comes back from a restart with another tool list
//	added      the tool add_tool adds is there from the start
//	forget     the expire fault from the start: a server that forgets
//	           every session at once
//	forgetcalls  every tools/call that names a session is answered 404
//	           (the rest is served): a server that forgets a session as
//	           soon as it is used
//	getlog     the Mcp-Session-Id of every GET (the event stream) is
//	           appended to gets.txt in the helpdesk's directory
//
// The mcp-go helpdesk (Main's "mcpgo-http", see ServeMCPGoHTTP) takes
// changed, forget, forgetcalls and getlog too.
const (
	EnvHTTP  = "BOUNCER_TESTSERVER_HTTP"
	EnvToken = "BOUNCER_TESTSERVER_TOKEN"
	// EnvAddr, if set, is the host:port the server listens on (default: a
	// free loopback port), so that a test can start it again where it was,
	// as a server restarts.
	EnvAddr = "BOUNCER_TESTSERVER_ADDR"
)

// Faults the HTTP helpdesk can be told to show, by its tool http_fault
// (argument "fault"):
//
//	503        the next post is answered 503 Service Unavailable
//	hangup     the next post is read whole and its connection closed,
//	           unanswered (as a server that crashed on it, or one whose
//	           kept-alive connection closed as the post was sent)
//	expire     the session is gone: every request naming it gets 404
//	drop       the open event streams (GETs) are cut off
//	cut        the next post answered with an event stream loses its
//	           messages: the stream carries only the priming event (with
//	           the events option, an id to resume from) and ends; the
//	           answer is left in the event store, if any, for a GET with
//	           Last-Event-ID
const faultTool = "http_fault"

// pingTool is the HTTP helpdesk's tool ping_client, which pings the client
// (a request of the server's) and answers "pong" once the client answered.
const pingTool = "ping_client"

// faults is the HTTP helpdesk's state of misbehaviour.
type faults struct {
	mu          sync.Mutex
	fail503     int            // posts still to answer 503
	hangup      int            // posts still to hang up on
	expired     bool           // the session is gone
	forgetCalls bool           // every tools/call naming a session gets 404
	getLog      string         // where each GET's session id is appended, if set
	streams     map[int]func() // cancels the open GETs
	nextID      int
	cut         int // event streams still to cut after their first event
}

// newFaults returns the faults the options (EnvHTTP) set from the start;
// dir is the helpdesk's.
func newFaults(opts map[string]bool, dir string) *faults {
	f := &faults{streams: map[int]func(){}, expired: opts["forget"], forgetCalls: opts["forgetcalls"]}
	if opts["getlog"] {
		f.getLog = filepath.Join(dir, "gets.txt")
	}
	return f
}

// options parses EnvHTTP's list.
func options(list []string) map[string]bool {
	opts := map[string]bool{}
	for _, o := range list {
		opts[strings.TrimSpace(o)] = true
	}
	return opts
}

func (f *faults) set(fault string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch fault {
	case "503":
		f.fail503++
	case "hangup":
		f.hangup++
	case "expire":
		f.expired = true
	case "cut":
		f.cut++
	case "drop":
		for id, cancel := range f.streams {
			cancel()
			delete(f.streams, id)
		}
	default:
		return fmt.Errorf("unknown fault %q", fault)
	}
	return nil
}

// wrap serves h with the faults and the token check.
func (f *faults) wrap(h http.Handler, token string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if token != "" && req.Header.Get("Authorization") != "Bearer "+token {
			w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="http://`+req.Host+`/.well-known/oauth-protected-resource"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		f.mu.Lock()
		expired := f.expired && req.Header.Get("Mcp-Session-Id") != ""
		if f.forgetCalls && req.Method == http.MethodPost && req.Header.Get("Mcp-Session-Id") != "" {
			body, _ := io.ReadAll(req.Body)
			req.Body = io.NopCloser(bytes.NewReader(body))
			expired = bytes.Contains(body, []byte(`"method":"tools/call"`))
		}
		fail := req.Method == http.MethodPost && f.fail503 > 0
		if fail {
			f.fail503--
		}
		hangup := req.Method == http.MethodPost && !fail && f.hangup > 0
		if hangup {
			f.hangup--
		}
		var id int
		if req.Method == http.MethodGet && f.getLog != "" {
			if lf, err := os.OpenFile(f.getLog, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600); err == nil {
				fmt.Fprintln(lf, req.Header.Get("Mcp-Session-Id"))
				lf.Close()
			}
		}
		if req.Method == http.MethodGet {
			ctx, cancel := context.WithCancel(req.Context())
			req = req.WithContext(ctx)
			f.nextID++
			id = f.nextID
			f.streams[id] = cancel
		}
		f.mu.Unlock()
		if req.Method == http.MethodGet {
			defer func() {
				f.mu.Lock()
				delete(f.streams, id)
				f.mu.Unlock()
			}()
		}
		switch {
		case expired:
			http.Error(w, "session not found", http.StatusNotFound)
		case fail:
			http.Error(w, "overloaded", http.StatusServiceUnavailable)
		case hangup:
			_, _ = io.Copy(io.Discard, req.Body)
			if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
				conn.Close()
			}
		case req.Method == http.MethodPost:
			// Only a post that came after the fault was set can be cut
			// (not the http_fault call's own).
			f.mu.Lock()
			due := f.cut > 0
			f.mu.Unlock()
			h.ServeHTTP(&cutWriter{ResponseWriter: w, f: f, decided: !due}, req)
		default:
			h.ServeHTTP(w, req)
		}
	})
}

// cutWriter carries out the cut fault on a post's answer: if one is due
// and the answer is an event stream, its message events are dropped (the
// go-sdk writes each event in one Write), and the stream ends when the
// handler returns.
type cutWriter struct {
	http.ResponseWriter
	f       *faults
	decided bool
	cut     bool
}

func (w *cutWriter) Write(p []byte) (int, error) {
	if !w.decided {
		w.decided = true
		if strings.HasPrefix(w.Header().Get("Content-Type"), "text/event-stream") {
			w.f.mu.Lock()
			if w.f.cut > 0 {
				w.f.cut--
				w.cut = true
			}
			w.f.mu.Unlock()
		}
	}
	if w.cut && bytes.HasPrefix(p, []byte("event: message\n")) {
		return len(p), nil
	}
	return w.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController flush the stream.
func (w *cutWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// ServeHelpdeskHTTP serves the helpdesk (see Helpdesk) over HTTP on a
// loopback port, with the options of EnvHTTP and the token of EnvToken,
// and writes its URL as the first line of stdout. It serves until killed,
// so the helpdesk's crash tool takes the whole server away.
func ServeHelpdeskHTTP(dir string) error {
	return serveHTTP(HelpdeskHandler(dir, strings.Split(os.Getenv(EnvHTTP), ","), os.Getenv(EnvToken)))
}

// serveHTTP serves h on EnvAddr (default: a free loopback port) and writes
// the URL of path as the first line of stdout.
func serveHTTP(h http.Handler, path string) error {
	addr := os.Getenv(EnvAddr)
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	fmt.Printf("http://%s%s\n", ln.Addr(), path)
	return http.Serve(ln, h)
}

// HelpdeskHandler is the helpdesk (with its tools http_fault and
// ping_client) as an HTTP handler, with the options of EnvHTTP and, when
// token is set, demanding it as a bearer token; path is where its
// endpoint is to be served.
func HelpdeskHandler(dir string, list []string, token string) (h http.Handler, path string) {
	opts := options(list)
	f := newFaults(opts, dir)
	srv := NewHelpdesk(dir)
	srv.AddTool(&mcp.Tool{Name: faultTool, Description: "Make the HTTP server misbehave", InputSchema: schema("fault")},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if err := f.set(parseArgs(req).str("fault")); err != nil {
				return nil, err
			}
			return textResult("ok"), nil
		})
	srv.AddTool(&mcp.Tool{Name: pingTool, Description: "Ping the client", InputSchema: schema()},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if err := req.Session.Ping(ctx, nil); err != nil {
				return nil, err
			}
			return textResult("pong"), nil
		})
	if opts["changed"] {
		srv.AddTool(changedEcho, echoHandler)
	}
	if opts["added"] {
		srv.AddTool(lateTool, echoHandler)
	}
	get := func(*http.Request) *mcp.Server { return srv }
	path = "/mcp"
	if opts["sse"] {
		h = mcp.NewSSEHandler(get, nil)
		path = "/sse"
	} else {
		o := &mcp.StreamableHTTPOptions{JSONResponse: opts["json"]}
		if opts["events"] {
			o.EventStore = mcp.NewMemoryEventStore(nil)
		}
		h = mcp.NewStreamableHTTPHandler(get, o)
	}
	return f.wrap(h, token), path
}
