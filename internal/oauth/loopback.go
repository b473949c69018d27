package oauth

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"html"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// callbackPath is the path of the loopback redirect URI.
const callbackPath = "/callback"

// callback is what the authorization server's redirect brought.
type callback struct {
	code string
	iss  string
	err  error
}

// receiver takes the one redirect of one authorization request on a
// loopback address (RFC 8252 §7.3): 127.0.0.1, never "localhost", whose
// resolution a hostile resolver or hosts file could change.
type receiver struct {
	ln    net.Listener
	srv   *http.Server
	state string
	once  sync.Once
	got   chan callback
}

// listenLoopback binds 127.0.0.1:port (0: a free port the kernel picks).
func listenLoopback(port int) (*receiver, error) {
	// Plain TCP: a proxy may later be confined by Landlock, which does not
	// see MPTCP sockets.
	lc := net.ListenConfig{}
	lc.SetMultipathTCP(false)
	ln, err := lc.Listen(context.Background(), "tcp4", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return nil, err
	}
	r := &receiver{ln: ln, got: make(chan callback, 1)}
	r.srv = &http.Server{
		Handler:           http.HandlerFunc(r.serve),
		ReadHeaderTimeout: 10 * time.Second,
	}
	return r, nil
}

// redirectURI is the redirect URI for the bound port.
func (r *receiver) redirectURI() string {
	return fmt.Sprintf("http://127.0.0.1:%d%s", r.ln.Addr().(*net.TCPAddr).Port, callbackPath)
}

func (r *receiver) port() int { return r.ln.Addr().(*net.TCPAddr).Port }

// start serves redirects for an authorization request with this state.
func (r *receiver) start(state string) {
	r.state = state
	go r.srv.Serve(r.ln)
}

// close stops listening; the one redirect has been answered by then.
func (r *receiver) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = r.srv.Shutdown(ctx)
	_ = r.ln.Close()
}

// wait returns the redirect's result, or an error when ctx ends first.
func (r *receiver) wait(ctx context.Context) callback {
	select {
	case c := <-r.got:
		return c
	case <-ctx.Done():
		return callback{err: ctx.Err()}
	}
}

func (r *receiver) deliver(c callback) bool {
	delivered := false
	r.once.Do(func() {
		r.got <- c
		delivered = true
	})
	return delivered
}

// serve answers the redirect. It is one-shot: the first request to the
// callback path decides the sign-in, whether it brings a code, an error,
// or a state that is not ours (refused, and the sign-in fails: a redirect
// with a foreign state is a forged or mixed-up response, RFC 6749 §10.12).
// Other paths (a browser's favicon request) get 404 and decide nothing.
func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	w.Header().Set("Content-Security-Policy", "default-src 'none'")
	if req.URL.Path != callbackPath {
		http.NotFound(w, req)
		return
	}
	if req.Method != http.MethodGet {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	q := req.URL.Query()
	var c callback
	status := http.StatusOK
	msg := "Bouncer is signed in. You can close this tab."
	state := q.Get("state")
	switch {
	case subtle.ConstantTimeCompare([]byte(state), []byte(r.state)) != 1:
		c.err = errors.New("the redirect to Bouncer carried a state that is not the one it sent; it was refused as a possible forgery (nothing was signed in)")
		status, msg = http.StatusBadRequest, "Bouncer refused this sign-in: the state parameter does not match. Start the sign-in again."
	case q.Get("error") != "":
		desc := q.Get("error_description")
		text := "the authorization server refused the sign-in: " + clip(q.Get("error"), 100)
		if desc != "" {
			text += " (" + clip(desc, 300) + ")"
		}
		c.err = errors.New(text)
		status, msg = http.StatusBadRequest, "The sign-in did not succeed: "+clip(q.Get("error"), 100)+". Bouncer says why on its terminal."
	case q.Get("code") == "":
		c.err = errors.New("the redirect to Bouncer carried no authorization code")
		status, msg = http.StatusBadRequest, "The redirect carried no authorization code."
	default:
		c.code, c.iss = q.Get("code"), q.Get("iss")
	}
	if !r.deliver(c) {
		status, msg = http.StatusGone, "This sign-in has already been answered."
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	fmt.Fprintf(w, "<!doctype html><title>Bouncer</title><p>%s</p>\n", html.EscapeString(msg))
}
