package oauth

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"sync"
	"time"
)

// HelperName is the hidden subcommand that runs [RunHelper].
const HelperName = "__oauth-signin"

// A sandboxed proxy can't sign in: it may not listen for the redirect,
// start a browser, look a name up or reach the authorization server.
// Yet a server may ask for a new sign-in during the session: a 403 with
// error="insufficient_scope" asks for more scope (step-up), and a refresh
// token may be refused. So before it confines itself, bouncer run starts
// itself once more as a sign-in helper that stays outside the sandbox,
// and a sealed Authorizer hands such a sign-in to it.
//
// The helper is bound to the one server it was started for. It takes no
// URL from the proxy: on a request it asks the server itself for its
// challenge (the unauthenticated probe) and discovers as at startup; all
// the proxy says is whether to step up and, if so, the scope names the
// server's 403 asked for, each checked to be an RFC 6749 scope token. It
// runs one sign-in at a time, keeps the result in the state directory
// (where the proxy reads it), and ends when the proxy closes its stdin.
// A proxy that was taken over can make it start a sign-in to that server
// (which the user sees, and must complete in the browser), nothing else.

// helperConfig is the first line the helper reads: the part of Config
// that can cross a pipe.
type helperConfig struct {
	ServerURL         string        `json:"server_url"`
	StateDir          string        `json:"state_dir"`
	ServerAddrs       []netip.Addr  `json:"server_addrs,omitempty"`
	Name              string        `json:"name,omitempty"`
	ClientID          string        `json:"client_id,omitempty"`
	ClientSecret      string        `json:"client_secret,omitempty"`
	ClientIssuer      string        `json:"client_issuer,omitempty"`
	ClientMetadataURL string        `json:"client_metadata_url,omitempty"`
	ClientName        string        `json:"client_name,omitempty"`
	RedirectPort      int           `json:"redirect_port,omitempty"`
	Timeout           time.Duration `json:"timeout,omitempty"`
}

// helperRequest asks for a sign-in; helperAnswer says how it went ("" is
// success: the new tokens are in the state directory).
type helperRequest struct {
	ID     int      `json:"id"`
	StepUp bool     `json:"step_up,omitempty"`
	Scopes []string `json:"scopes,omitempty"`
}

type helperAnswer struct {
	ID    int    `json:"id"`
	Error string `json:"error,omitempty"`
}

// Limits on what the helper reads from the proxy.
const (
	helperLineMax  = 64 << 10
	helperScopeMax = 64
	scopeTokenMax  = 256
)

// Helper is the proxy's end of a sign-in helper process.
type Helper struct {
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	answers chan helperAnswer
	exited  chan struct{}

	mu     sync.Mutex // one request at a time
	nextID int
}

// StartHelper starts this very binary as the sign-in helper of cfg's
// server (cfg is checked as New checks it). Call it before the sandbox:
// the sandboxed proxy can execute nothing. Its stderr is cfg.Stderr (the
// URL to open is printed there, as at startup).
func StartHelper(cfg Config) (*Helper, error) {
	if _, err := New(cfg); err != nil {
		return nil, err
	}
	// This binary even if it was replaced on disk since it started.
	exe := "/proc/self/exe"
	if _, err := os.Stat(exe); err != nil {
		if exe, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("oauth: starting the sign-in helper: %v", err)
		}
	}
	cmd := exec.Command(exe)
	// argv[0] as ours: a test binary playing bouncer dispatches on it.
	cmd.Args = []string{os.Args[0], HelperName}
	if cfg.Stderr != nil {
		cmd.Stderr = cfg.Stderr
	} else {
		cmd.Stderr = os.Stderr
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("oauth: starting the sign-in helper: %v", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("oauth: starting the sign-in helper: %v", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("oauth: starting the sign-in helper: %v", err)
	}
	h := &Helper{cmd: cmd, stdin: stdin, answers: make(chan helperAnswer, 1), exited: make(chan struct{})}
	go func() {
		defer close(h.exited)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 0, 4096), helperLineMax)
		for sc.Scan() {
			var ans helperAnswer
			if json.Unmarshal(sc.Bytes(), &ans) == nil {
				h.answers <- ans
			}
		}
		_ = cmd.Wait()
	}()
	line, _ := json.Marshal(helperConfig{
		ServerURL: cfg.ServerURL, StateDir: cfg.StateDir, ServerAddrs: cfg.ServerAddrs, Name: cfg.Name,
		ClientID: cfg.ClientID, ClientSecret: cfg.ClientSecret, ClientIssuer: cfg.ClientIssuer,
		ClientMetadataURL: cfg.ClientMetadataURL, ClientName: cfg.ClientName,
		RedirectPort: cfg.RedirectPort, Timeout: cfg.Timeout,
	})
	if _, err := stdin.Write(append(line, '\n')); err != nil {
		h.Close()
		return nil, fmt.Errorf("oauth: starting the sign-in helper: %v", err)
	}
	return h, nil
}

// Close ends the helper (it exits when its stdin closes, abandoning a
// sign-in in progress).
func (h *Helper) Close() error {
	err := h.stdin.Close()
	<-h.exited
	return err
}

// signIn asks the helper for a sign-in and waits for it to end.
func (h *Helper) signIn(ctx context.Context, stepUp bool, scopes []string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.nextID++
	id := h.nextID
	line, _ := json.Marshal(helperRequest{ID: id, StepUp: stepUp, Scopes: scopes})
	if _, err := h.stdin.Write(append(line, '\n')); err != nil {
		return errors.New("the sign-in helper is gone")
	}
	for {
		select {
		case ans := <-h.answers:
			if ans.ID != id {
				continue // the answer to a request its caller gave up on
			}
			if ans.Error != "" {
				return errors.New(ans.Error)
			}
			return nil
		case <-h.exited:
			return errors.New("the sign-in helper is gone")
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// RunHelper is the helper process (the hidden subcommand HelperName):
// it reads its configuration and then sign-in requests on stdin, one
// JSON line each, and answers each on stdout. It returns the exit status
// once stdin closes.
func RunHelper(args []string) int {
	if len(args) != 0 {
		fmt.Fprintln(os.Stderr, "bouncer: "+HelperName+" is started by bouncer run, with no arguments")
		return 2
	}
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 0, 4096), helperLineMax)
	if !sc.Scan() {
		return 2
	}
	var hc helperConfig
	if err := json.Unmarshal(sc.Bytes(), &hc); err != nil {
		fmt.Fprintln(os.Stderr, "bouncer: the sign-in helper got no configuration")
		return 2
	}
	a, err := New(Config{
		ServerURL: hc.ServerURL, StateDir: hc.StateDir, ServerAddrs: hc.ServerAddrs, Name: hc.Name,
		ClientID: hc.ClientID, ClientSecret: hc.ClientSecret, ClientIssuer: hc.ClientIssuer,
		ClientMetadataURL: hc.ClientMetadataURL, ClientName: hc.ClientName,
		RedirectPort: hc.RedirectPort, Timeout: hc.Timeout,
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "bouncer: the sign-in helper: %v\n", err)
		return 2
	}
	// Requests are read apart from the sign-in, so that the proxy going
	// away (stdin closing) ends a sign-in that waits for the browser.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reqs := make(chan helperRequest)
	go func() {
		defer close(reqs)
		defer cancel()
		for sc.Scan() {
			var r helperRequest
			if json.Unmarshal(sc.Bytes(), &r) != nil {
				return // not the proxy speaking: stop
			}
			select {
			case reqs <- r:
			case <-ctx.Done():
				return
			}
		}
	}()
	out := json.NewEncoder(os.Stdout)
	for r := range reqs {
		ans := helperAnswer{ID: r.ID}
		if err := a.signInFor(ctx, r); err != nil {
			ans.Error = err.Error()
		}
		if out.Encode(ans) != nil {
			return 1
		}
	}
	return 0
}

// signInFor runs the sign-in the proxy asked for.
func (a *Authorizer) signInFor(ctx context.Context, r helperRequest) error {
	if err := checkScopes(r.Scopes); err != nil {
		return a.fail(ErrSignInFailed, err)
	}
	// What is kept now: the proxy may have refreshed since this process
	// started, and a step-up adds to the scopes granted.
	rec, err := a.store.load(a.server)
	if err != nil {
		return a.fail(ErrSignInFailed, err)
	}
	a.mu.Lock()
	a.adopt(rec)
	a.mu.Unlock()
	// Where to sign in is the server's word, not the proxy's.
	ch, err := a.probe(ctx)
	if err != nil {
		return a.fail(ErrSignInFailed, err)
	}
	if ch == nil {
		ch = &challenge{status: http.StatusUnauthorized}
	}
	if r.StepUp {
		ch.status, ch.errCode, ch.scopes = http.StatusForbidden, "insufficient_scope", r.Scopes
	}
	return a.renew(ctx, renewal{ch: ch, force: true})
}

// checkScopes accepts RFC 6749 §3.3 scope tokens only (printable ASCII
// but space, '"' and '\'), a bounded number of bounded length.
func checkScopes(scopes []string) error {
	if len(scopes) > helperScopeMax {
		return fmt.Errorf("the server asks for %d scopes; Bouncer takes at most %d", len(scopes), helperScopeMax)
	}
	for _, s := range scopes {
		if s == "" || len(s) > scopeTokenMax {
			return errors.New("the server asks for a scope that is empty or too long")
		}
		for i := 0; i < len(s); i++ {
			if c := s[i]; c <= 0x20 || c >= 0x7f || c == '"' || c == '\\' {
				return errors.New("the server asks for a scope that is not an RFC 6749 scope token")
			}
		}
	}
	return nil
}
