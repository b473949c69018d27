package transport

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// postConn is Remote's connection on streamable HTTP: each message is a
// POST, and a request's answer is the POST's response, as one JSON
// message or as an event stream that carries the answer last (and,
// before it, what the server sends about the request). The event stream
// unrelated to any request (the GET) is Remote's (listen).
//
// It does what the go-sdk's streamable client connection does for a
// client that keeps the GET itself (StreamableClientTransport with
// DisableStandaloneSSE), with the same statuses, retries and errors,
// and reads what comes back as Conn reads a line: once, into the message,
// with ids read exactly (decodeMessage). The go-sdk's connection reads
// an answer into a growing buffer, copies it through a decoder that
// doubles from 32 KiB and copies the result out again, which for a large
// answer cost more than the rest of its way through bouncer listen.
type postConn struct {
	url    string
	client *http.Client
	logf   func(format string, a ...any)

	ctx    context.Context // Close's DELETE; Close cancels it
	cancel context.CancelFunc
	in     chan jsonrpc.Message
	done   chan struct{} // closed by Close

	closeOnce sync.Once
	closeErr  error

	failOnce sync.Once
	failErr  error
	failed   chan struct{} // closed once failErr is set: the connection is broken

	mu        sync.Mutex
	sessionID string
}

const (
	// answerRetries is how many times in a row a request's event stream
	// that ended before its answer is re-opened without anything new on
	// it (the go-sdk's default).
	answerRetries = 5
	// closeDeleteTimeout bounds the DELETE that ends the session.
	closeDeleteTimeout = 5 * time.Second
)

func newPostConn(url string, client *http.Client, logf func(format string, a ...any)) *postConn {
	ctx, cancel := context.WithCancel(context.Background())
	return &postConn{
		url: url, client: client, logf: logf,
		ctx: ctx, cancel: cancel,
		in:     make(chan jsonrpc.Message, 10),
		done:   make(chan struct{}),
		failed: make(chan struct{}),
	}
}

// SessionID is the session id the server gave, or "".
func (c *postConn) SessionID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sessionID
}

// fail breaks the connection: Read returns err from now on.
func (c *postConn) fail(err error) {
	c.failOnce.Do(func() {
		c.failErr = err
		close(c.failed)
	})
}

func (c *postConn) failure() error {
	select {
	case <-c.failed:
		return c.failErr
	default:
		return nil
	}
}

// Read returns the next message the server sent in answer to a POST.
func (c *postConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	if err := c.failure(); err != nil {
		return nil, err
	}
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.failed:
		return nil, c.failure()
	case <-c.done:
		return nil, io.EOF
	case m := <-c.in:
		return m, nil
	}
}

// Write posts m. It returns once the server answered the POST's headers;
// a request's answer is read afterwards, for Read. An error says the
// server did not take m (and, unless it is one a next message may not
// meet, breaks the connection).
func (c *postConn) Write(ctx context.Context, m jsonrpc.Message) error {
	if err := c.failure(); err != nil {
		return err
	}
	var summary string
	var call *jsonrpc.Request
	switch m := m.(type) {
	case *jsonrpc.Request:
		summary = fmt.Sprintf("sending %q", m.Method)
		if m.IsCall() {
			call = m
		}
	case *jsonrpc.Response:
		summary = "sending the answer to request " + IDText(m.ID)
	default:
		return fmt.Errorf("a message of type %T can't be sent", m)
	}
	data, err := EncodeMessage(m)
	if err != nil {
		return fmt.Errorf("%s: %v", summary, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("%s: %w", summary, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if sid := c.SessionID(); sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return fmt.Errorf("%s: %w", summary, err)
	}
	if err := c.check(summary, resp); err != nil {
		return err
	}
	if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" {
		c.mu.Lock()
		had := c.sessionID
		if had == "" {
			c.sessionID = sid
		}
		c.mu.Unlock()
		if had != "" && had != sid {
			resp.Body.Close()
			return fmt.Errorf("%s: the server answered with another session id than the session's", summary)
		}
	}
	if call == nil {
		// A notification or an answer: 202 Accepted, no body (a server
		// that answers 200 with one is let be, as the go-sdk lets it).
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
		resp.Body.Close()
		return nil
	}
	switch ct := mediaType(resp.Header.Get("Content-Type")); ct {
	case "application/json":
		go c.readJSON(summary, resp, call)
	case "text/event-stream":
		go c.readStream(ctx, summary, resp, call)
	default:
		resp.Body.Close()
		return fmt.Errorf("%s: unsupported content type %q", summary, ct)
	}
	return nil
}

// mediaType is a Content-Type without its parameters, in lower case.
func mediaType(ct string) string {
	t, _, _ := strings.Cut(ct, ";")
	return strings.ToLower(strings.TrimSpace(t))
}

// check turns a response's status into an error, closing its body then.
// A status a later message may not meet (a server busy or failing for a
// moment: 429, 500, 502, 503, 504; a JSON-RPC error in the body) leaves
// the connection as it is; any other breaks it: 404 for the session's id
// (mcp.ErrSessionMissing, the session is gone) and every other refusal.
func (c *postConn) check(summary string, resp *http.Response) error {
	code := resp.StatusCode
	if code >= 200 && code < 300 {
		return nil
	}
	defer resp.Body.Close()
	switch code {
	case http.StatusTooManyRequests, http.StatusInternalServerError, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return fmt.Errorf("%s: %s", summary, http.StatusText(code))
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if m, err := decodeMessage(body); err == nil {
		if r, ok := m.(*jsonrpc.Response); ok && r.Error != nil {
			return fmt.Errorf("%s: %w: %s", summary, r.Error, http.StatusText(code))
		}
	}
	var err error
	if code == http.StatusNotFound && c.SessionID() != "" {
		err = fmt.Errorf("%s: %w", summary, mcp.ErrSessionMissing)
	} else {
		err = fmt.Errorf("%s: %s", summary, http.StatusText(code))
	}
	c.fail(err)
	return err
}

// deliver passes m to Read, unless the connection is closed first.
func (c *postConn) deliver(m jsonrpc.Message) bool {
	select {
	case c.in <- m:
		return true
	case <-c.done:
		return false
	}
}

// readJSON reads a request's answer that came as the whole response. An
// answer whose id can't pass unchanged is dropped, and the call is
// answered with an error instead: nothing else will answer it.
func (c *postConn) readJSON(summary string, resp *http.Response, call *jsonrpc.Request) {
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		c.fail(fmt.Errorf("%s: failed to read the answer: %v", summary, err))
		return
	}
	m, err := decodeMessage(body)
	var bad *badIDError
	if errors.As(err, &bad) {
		c.logf("dropped a message the remote server answered a post with: %s", bad.reason)
		c.deliver(&jsonrpc.Response{ID: call.ID, Error: fmt.Errorf("its answer was dropped: %s", bad.reason)})
		return
	}
	if err != nil {
		c.fail(fmt.Errorf("%s: failed to decode response: %v", summary, err))
		return
	}
	c.deliver(m)
}

// readStream reads the event stream a call's POST was answered with,
// until the call's answer. A stream that ends before it is re-opened
// (a GET with Last-Event-ID) when its events had ids, as long as the
// server sends something new; one without ids can't be, and the call is
// answered with an error.
func (c *postConn) readStream(ctx context.Context, summary string, resp *http.Response, call *jsonrpc.Request) {
	var prev string
	stalls := 0
	for {
		lastID, retry, over := c.events(ctx, summary, resp, call)
		if over || lastID == "" {
			return
		}
		if lastID != prev {
			prev, stalls = lastID, 0
		} else if stalls++; stalls > answerRetries {
			if ctx.Err() == nil {
				c.fail(fmt.Errorf("%s: the answer's event stream was re-opened %d times without anything new", summary, answerRetries))
			}
			return
		}
		next, err := c.reopen(ctx, lastID, retry)
		if err != nil {
			if ctx.Err() == nil {
				c.fail(fmt.Errorf("%s: failed to re-open the answer's event stream: %v", summary, err))
			}
			return
		}
		resp = next
		if err := c.check(summary, resp); err != nil {
			c.fail(err)
			return
		}
	}
}

// events reads one response's event stream, delivering its messages. over
// says there is nothing left to do: the call's answer came, the connection
// broke or was closed, or the call's context ended. Otherwise the stream
// ended first: lastID is the id of its last event with one ("" when none
// had an id, and then the call has been answered with an error), retry
// the delay the server asked for before a new try.
func (c *postConn) events(ctx context.Context, summary string, resp *http.Response, call *jsonrpc.Request) (lastID string, retry time.Duration, over bool) {
	defer func() {
		_, _ = io.Copy(io.Discard, resp.Body) // the connection is kept for another request
		resp.Body.Close()
	}()
	var pos streamPos
	err := newAnswerScanner(resp.Body).messages(&pos,
		func(why string) {
			c.logf("dropped a message on the event stream of a post to the remote server: %s", why)
		},
		func(m jsonrpc.Message) bool {
			r, ok := m.(*jsonrpc.Response)
			over = !c.deliver(m) || ok && r.ID == call.ID // closed, or the call is answered
			return !over
		})
	if err != nil {
		c.fail(fmt.Errorf("%s: failed to decode event: %v", summary, err))
		return "", 0, true
	}
	if over {
		return "", 0, true
	}
	lastID, retry = pos.lastID, pos.retry
	if ctx.Err() != nil {
		return "", 0, true // the call was given up: nobody waits for it
	}
	if lastID == "" {
		// Nothing to resume from: the answer can't come. Remote says
		// that bouncer wrote this error, and why (answered).
		c.deliver(&jsonrpc.Response{ID: call.ID, Error: errors.New("request terminated without response")})
	}
	return lastID, retry, false
}

// reopen asks for the rest of a call's event stream from after lastID,
// after delay (the server's) or Remote's backoff, as Remote re-opens its
// own event stream, trying answerRetries times.
func (c *postConn) reopen(ctx context.Context, lastID string, delay time.Duration) (*http.Response, error) {
	var last error
	for try := 1; try <= answerRetries; try++ {
		d := backoff(try)
		if try == 1 && delay > 0 {
			d = delay
		}
		select {
		case <-c.done:
			return nil, errors.New("the connection was closed")
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(d):
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.url, nil)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Last-Event-ID", lastID)
		if sid := c.SessionID(); sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
		}
		resp, err := c.client.Do(req)
		if err != nil {
			last = err
			continue
		}
		return resp, nil
	}
	return nil, fmt.Errorf("%d tries failed: %w", answerRetries, last)
}

// Close ends the session with a DELETE (unless the server forgot it
// already, or gave it no id) and stops reading.
func (c *postConn) Close() error {
	c.closeOnce.Do(func() {
		if sid := c.SessionID(); sid != "" && !errors.Is(c.failure(), mcp.ErrSessionMissing) {
			ctx, stop := context.WithTimeout(c.ctx, closeDeleteTimeout)
			req, err := http.NewRequestWithContext(ctx, http.MethodDelete, c.url, nil)
			if err == nil {
				req.Header.Set("Mcp-Session-Id", sid)
				var resp *http.Response
				if resp, err = c.client.Do(req); err == nil {
					resp.Body.Close()
				}
			}
			stop()
			c.closeErr = err
		}
		c.cancel()
		close(c.done)
	})
	return c.closeErr
}
