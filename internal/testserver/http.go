package testserver

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
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
const (
	EnvHTTP  = "BOUNCER_TESTSERVER_HTTP"
	EnvToken = "BOUNCER_TESTSERVER_TOKEN"
)

// Faults the HTTP helpdesk can be told to show, by its tool http_fault
// (argument "fault"):
//
//	503        the next post is answered 503 Service Unavailable
//	expire     the session is gone: every request naming it gets 404
//	drop       the open event streams (GETs) are cut off
//	cut        the next post answered with an event stream loses its
//	           messages: the stream carries only the priming event (with
//	           the events option, an id to resume from) and ends; the
//	           answer is left in the event store, if any, for a GET with
//	           Last-Event-ID
const faultTool = "http_fault"

// faults is the HTTP helpdesk's state of misbehaviour.
type faults struct {
	mu      sync.Mutex
	fail503 int            // posts still to answer 503
	expired bool           // the session is gone
	streams map[int]func() // cancels the open GETs
	nextID  int
	cut     int // event streams still to cut after their first event
}

func (f *faults) set(fault string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch fault {
	case "503":
		f.fail503++
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
		fail := req.Method == http.MethodPost && f.fail503 > 0
		if fail {
			f.fail503--
		}
		var id int
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
	h, path := HelpdeskHandler(dir, strings.Split(os.Getenv(EnvHTTP), ","), os.Getenv(EnvToken))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fmt.Printf("http://%s%s\n", ln.Addr(), path)
	return http.Serve(ln, h)
}

// HelpdeskHandler is the helpdesk (with its tool http_fault) as an HTTP
// handler, with the options of EnvHTTP and, when token is set, demanding
// it as a bearer token; path is where its endpoint is to be served.
func HelpdeskHandler(dir string, options []string, token string) (h http.Handler, path string) {
	opts := map[string]bool{}
	for _, o := range options {
		opts[strings.TrimSpace(o)] = true
	}
	f := &faults{streams: map[int]func(){}}
	srv := NewHelpdesk(dir)
	srv.AddTool(&mcp.Tool{Name: faultTool, Description: "Make the HTTP server misbehave", InputSchema: schema("fault")},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if err := f.set(parseArgs(req).str("fault")); err != nil {
				return nil, err
			}
			return textResult("ok"), nil
		})
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
