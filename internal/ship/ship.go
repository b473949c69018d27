// Package ship sends the audit log to a team's log pipeline: an
// OpenTelemetry collector over OTLP/HTTP, a syslog receiver over TCP or
// TLS, or both. It runs as a process of its own (`bouncer audit ship`) and
// only reads the hash-chained audit file, from a cursor per destination: it
// never sits between a verdict and its audit line, and a proxy never waits
// for the network because of it.
//
// Delivery is at least once and in order. A destination's cursor (a small
// JSON file in the state directory, replaced atomically) moves only past
// lines that destination accepted: an OTLP batch answered 2xx (a partial
// success too, which OTLP forbids sending again; the shipper says so and
// counts it), a syslog batch the receiver read to the end. A restart resumes from the cursor; a
// collector that is down only delays the lines. Every record carries the
// line's chain hash, so a receiver that saw a line twice can drop the copy.
package ship

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/bouncer-mcp/bouncer/internal/bundle"
	"github.com/bouncer-mcp/bouncer/internal/envexpand"
	"github.com/bouncer-mcp/bouncer/internal/secret"
)

// Destination is one place the log is shipped to.
type Destination interface {
	// Name is the destination as messages name it ("otlp URL", "syslog URL");
	// it also keys the destination's cursor.
	Name() string
	// Send delivers lines, in order; nil means the destination accepted all
	// of them, and only then does the cursor move past them. A *Rejected
	// means it took them and said it rejected some: they count as
	// delivered, and the shipper says so.
	Send(ctx context.Context, lines []Line) error
	// Flush sends what the destination keeps besides lines (the OTLP
	// verdict counts), when it is due; it is called when the log has
	// nothing new.
	Flush(ctx context.Context) error
	Close()
}

// recounter is a destination that keeps counts over the lines shipped from
// the start of the log (OTLP's bouncer.verdicts).
type recounter interface {
	Recount(r *reader) error
}

// Rejected is what Send or Flush returns when the destination took what
// was sent (an OTLP 2xx answer) but said it rejected some of it, or its
// answer could not be read. What was sent counts as delivered: OTLP
// forbids sending a partial success again (the collector would only
// refuse it again), and the lines stay in the audit log. The shipper says
// so on stderr.
type Rejected struct {
	What    string // "records" or "data points"
	N, Of   int64  // rejected, of how many sent
	Message string // the collector's error_message, redacted
	Unread  string // why the answer could not be read, if it could not
}

func (e *Rejected) Error() string {
	switch {
	case e.Unread != "":
		return fmt.Sprintf("the collector answered 2xx, but its answer could not be read (%s), so whether it rejected any of the %d %s is not known", e.Unread, e.Of, e.What)
	case e.N == 0:
		return fmt.Sprintf("the collector took the %d %s with a warning: %q", e.Of, e.What, e.Message)
	case e.N == e.Of:
		return fmt.Sprintf("the collector rejected all %d %s: %q", e.N, e.What, e.Message)
	}
	return fmt.Sprintf("the collector rejected %d of the %d %s (it does not say which): %q", e.N, e.Of, e.What, e.Message)
}

// fate is what becomes of what was rejected, for the message after e.
func (e *Rejected) fate(what string) string {
	if e.N == 0 {
		return ""
	}
	return "; " + what + "; " + RejectedMetricName + " counts them"
}

// ConfigError is a problem in the audit_ship configuration: exit 2.
type ConfigError struct{ Msg string }

func (e *ConfigError) Error() string { return e.Msg }

// Destinations makes the destinations the trust configuration's audit_ship
// sections name, in order, each once (the first section that names a URL
// gives its headers and ca). ${VAR} in header values is read with lookup,
// by envexpand's rule (the one `bouncer run --header` follows). An unset
// variable is a *ConfigError naming the file, line and header.
func Destinations(sections []bundle.AuditShip, lookup func(string) (string, bool), host string) ([]Destination, error) {
	var out []Destination
	seen := map[string]bool{}
	for _, s := range sections {
		tlsConf := &tls.Config{MinVersion: tls.VersionTLS12}
		if len(s.CAPEM) > 0 {
			pool := x509.NewCertPool()
			pool.AppendCertsFromPEM(s.CAPEM)
			tlsConf.RootCAs = pool
		}
		if s.OTLP != "" && !seen["otlp "+s.OTLP] {
			seen["otlp "+s.OTLP] = true
			headers := map[string]string{}
			var secrets []string
			keep := func(v string) { secrets = append(secrets, secret.HeaderParts(v)...) }
			for _, name := range s.HeaderNames() {
				where := fmt.Sprintf("%s:%d: audit_ship.headers.%s", s.File, s.HeaderLines[name], name)
				v, err := envexpand.Expand(where, s.Headers[name], func(k string) (string, bool) {
					v, ok := lookup(k)
					keep(v)
					return v, ok
				})
				if err != nil {
					return nil, &ConfigError{err.Error()}
				}
				keep(v)
				headers[name] = v
			}
			d, err := newOTLPDest(s.OTLP, headers, secrets, tlsConf, host)
			if err != nil {
				return nil, &ConfigError{fmt.Sprintf("%s:%d: audit_ship.otlp: %v", s.File, s.OTLPLine, err)}
			}
			out = append(out, d)
		}
		if s.Syslog != "" && !seen["syslog "+s.Syslog] {
			seen["syslog "+s.Syslog] = true
			d, err := newSyslogDest(s.Syslog, tlsConf, host)
			if err != nil {
				return nil, &ConfigError{fmt.Sprintf("%s:%d: audit_ship.syslog: %v", s.File, s.SyslogLine, err)}
			}
			out = append(out, d)
		}
	}
	return out, nil
}

// Config is one run of the shipper.
type Config struct {
	Log      string        // the audit log
	StateDir string        // cursors go in StateDir/ship/
	Dests    []Destination //
	Once     bool          // ship what is there, then return
	// Poll is how often the log is looked at for new lines when there
	// were none (default 250ms).
	Poll time.Duration
	// MinBackoff and MaxBackoff bound the wait before a failed batch is
	// sent again (default 1s and 1 minute; doubling, with jitter).
	MinBackoff, MaxBackoff time.Duration
	// OnceAttempts is how often --once tries a batch before it calls the
	// destination unreachable (default 3).
	OnceAttempts int
	// MaxLines and MaxBytes bound a batch (default 500 lines, 1 MiB; a
	// longer line goes alone).
	MaxLines, MaxBytes int
	// Logf says what the shipper does and what went wrong (stderr).
	Logf func(format string, a ...any)
}

func (c *Config) defaults() {
	if c.Poll <= 0 {
		c.Poll = 250 * time.Millisecond
	}
	if c.MinBackoff <= 0 {
		c.MinBackoff = time.Second
	}
	if c.MaxBackoff < c.MinBackoff {
		c.MaxBackoff = max(time.Minute, c.MinBackoff)
	}
	if c.OnceAttempts <= 0 {
		c.OnceAttempts = 3
	}
	if c.MaxLines <= 0 {
		c.MaxLines = 500
	}
	if c.MaxBytes <= 0 {
		c.MaxBytes = 1 << 20
	}
	if c.Logf == nil {
		c.Logf = func(string, ...any) {}
	}
}

// Result is what one destination did in a run.
type Result struct {
	Dest    string
	Shipped int64 // lines accepted in this run
	// Rejected is how many records of those lines the destination took
	// and then said it rejected (an OTLP partial success).
	Rejected int64
	Err      error // why it stopped early (--once: could not reach it)
}

// Run ships the log to every destination, each on its own from its own
// cursor, and returns one Result per destination. With Once it returns when
// each destination has everything that was in the log, or has failed
// OnceAttempts times in a row; otherwise it follows the log and retries
// until ctx ends, and then returns with every Err nil unless a cursor could
// not be written.
func Run(ctx context.Context, cfg Config) []Result {
	cfg.defaults()
	results := make([]Result, len(cfg.Dests))
	var wg sync.WaitGroup
	for i, d := range cfg.Dests {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = runDest(ctx, &cfg, d)
		}()
	}
	wg.Wait()
	return results
}

func orCtx(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

func runDest(ctx context.Context, cfg *Config, d Destination) (res Result) {
	name := d.Name()
	res.Dest = name
	cpath := cursorPath(cfg.StateDir, name)
	cur, err := loadCursor(cpath)
	if err != nil {
		cfg.Logf("%s: %v; shipping the log again from the start", name, err)
	}
	cur.Dest = name
	r := &reader{path: cfg.Log, cur: cur, note: cfg.Logf, maxLines: cfg.MaxLines, maxBytes: cfg.MaxBytes}
	defer r.close()
	counted := 0 // r.opened when the destination last recounted
	var pending []Line
	failures := 0
	// fail counts a failed attempt and waits before the next one; it
	// returns the error to stop with (--once, after the last attempt).
	fail := func(what string, err error) error {
		failures++
		if cfg.Once && failures >= cfg.OnceAttempts {
			return fmt.Errorf("%s: %w", what, err)
		}
		wait := backoff(cfg.MinBackoff, cfg.MaxBackoff, failures)
		if !cfg.Once {
			cfg.Logf("%s: %s: %v; trying again in %s", name, what, err, roundWait(wait))
		}
		sleep(ctx, wait)
		return nil
	}
	for ctx.Err() == nil {
		if pending == nil {
			lines, err := r.next()
			if err != nil {
				// The log can't be read (permissions, I/O): nothing to
				// send; say so and try again, or give up with --once.
				if stop := fail("reading "+cfg.Log, err); stop != nil {
					res.Err = stop
					return res
				}
				continue
			}
			if rc, ok := d.(recounter); ok && r.opened != counted {
				if err := rc.Recount(r); err != nil {
					if stop := fail("counting verdicts in "+cfg.Log, err); stop != nil {
						res.Err = stop
						return res
					}
					continue
				}
				counted = r.opened
			}
			pending = lines
		}
		if len(pending) == 0 {
			pending = nil
			err := d.Flush(ctx)
			var rej *Rejected
			if errors.As(err, &rej) {
				cfg.Logf("%s: the verdict counts: %v%s", name, rej, rej.fate("the sum is cumulative and goes again with the next change, or in a minute"))
				err = nil
			}
			if err != nil {
				if ctx.Err() != nil {
					break
				}
				if stop := fail("sending", err); stop != nil {
					res.Err = stop
					return res
				}
				continue
			}
			failures = 0
			if cfg.Once {
				return res
			}
			sleep(ctx, cfg.Poll)
			continue
		}
		err := d.Send(ctx, pending)
		var rej *Rejected
		if errors.As(err, &rej) {
			cfg.Logf("%s: lines %d-%d: %v%s", name, pending[0].Num, pending[len(pending)-1].Num, rej,
				rej.fate("the cursor moves past them all the same, as OTLP forbids sending a partial success again; they stay in "+cfg.Log))
			res.Rejected += rej.N
			err = nil
		}
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			if stop := fail(fmt.Sprintf("sending lines %d-%d", pending[0].Num, pending[len(pending)-1].Num), err); stop != nil {
				res.Err = stop
				return res
			}
			continue
		}
		if failures > 0 && !cfg.Once {
			cfg.Logf("%s: delivered again, from line %d", name, pending[0].Num)
		}
		failures = 0
		r.commit(pending)
		res.Shipped += int64(len(pending))
		pending = nil
		if err := saveCursor(cpath, r.cur); err != nil {
			// Lines were delivered but the cursor can't be kept: going on
			// would resend everything after a restart, and a full state
			// directory is for a person to fix.
			res.Err = fmt.Errorf("saving the cursor %s: %w", cpath, err)
			return res
		}
	}
	return res
}

// backoff is the wait before attempt n+1: min doubled per failure, capped
// at max, with up to a fifth taken off at random so that many shippers
// whose collector came back don't all retry at the same moment.
func backoff(lo, hi time.Duration, n int) time.Duration {
	d := lo
	for i := 1; i < n && d < hi; i++ {
		d *= 2
	}
	d = min(d, hi)
	return d - time.Duration(rand.Int64N(int64(d)/5+1))
}

func roundWait(d time.Duration) time.Duration {
	if d < time.Second {
		return d.Round(time.Millisecond)
	}
	return d.Round(100 * time.Millisecond)
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// Unreachable formats the destinations of results that failed, for the
// --once exit message.
func Unreachable(results []Result) []string {
	var out []string
	for _, r := range results {
		if r.Err != nil {
			out = append(out, r.Dest+": "+r.Err.Error())
		}
	}
	return out
}

// Hostname is the HOSTNAME / host.name the shipper reports.
func Hostname() string {
	h, err := os.Hostname()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(h)
}
