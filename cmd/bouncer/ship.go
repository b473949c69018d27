package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/bouncer-mcp/bouncer/internal/bundle"
	"github.com/bouncer-mcp/bouncer/internal/ship"
)

const shipSynopsis = "bouncer audit ship [--once] [--trust FILE] [--home DIR]"

// cmdAuditShip sends the audit log to the destinations of audit_ship in the
// trust configuration. It is a process of its own, run by a systemd unit or
// a launchd agent: the proxies never open a socket for it.
func cmdAuditShip(args []string) error {
	fs, home := newFlags("audit ship", shipSynopsis+"\n\n"+
		"Sends every line of the audit log that a destination has not yet accepted, in order, to the\n"+
		"destinations that audit_ship in the trust configuration names: an OpenTelemetry collector\n"+
		"(OTLP/HTTP) and/or a syslog receiver (RFC 5424 over TCP or TLS). A cursor per destination in\n"+
		"the state directory moves only past what that destination accepted. Without --once it\n"+
		"follows the log, retries with backoff, and exits 0 on SIGTERM.")
	once := fs.Bool("once", false, "ship what is in the log now and exit: 0 when every destination took it, 1 naming each that could not be reached")
	trust := fs.String("trust", "", "trust configuration `FILE` (default $BOUNCER_HOME/trust.yaml, with /etc/bouncer/trust.yaml always applied when present)")
	ops, done, err := parseOperands(fs, args)
	if done {
		return err
	}
	if len(ops) != 0 {
		return usageErr("%s", fmt.Sprintf("audit ship: unexpected argument %q", ops[0]))
	}
	dir, err := stateDir(*home)
	if err != nil {
		return badInput(fmt.Errorf("audit ship: %v", err))
	}
	t, err := bundle.LoadTrust(*trust, dir)
	if errors.Is(err, bundle.ErrNoTrust) {
		return badInput(fmt.Errorf("audit ship: no destinations: audit_ship is not set, as there is no trust configuration (%v)", err))
	}
	if err != nil {
		return badInput(fmt.Errorf("%v", err))
	}
	sections := t.AuditShip()
	if len(sections) == 0 {
		return badInput(fmt.Errorf("audit ship: no destinations: %s sets no audit_ship (otlp: URL and/or syslog: tcp:// or tls://)", joinFiles(t.Files())))
	}
	dests, err := ship.Destinations(sections, os.LookupEnv, ship.Hostname())
	if err != nil {
		return badInput(fmt.Errorf("%v", err))
	}
	defer func() {
		for _, d := range dests {
			d.Close()
		}
	}()
	if err := ensureStateDir(dir); err != nil {
		return badInput(fmt.Errorf("audit ship: %v", err))
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	logf := func(format string, a ...any) { errorf("audit ship: "+format, a...) }
	cfg := ship.Config{
		Log:      filepath.Join(dir, "audit.jsonl"),
		StateDir: dir,
		Dests:    dests,
		Once:     *once,
		Logf:     logf,
	}
	if !*once {
		names := ""
		for i, d := range dests {
			if i > 0 {
				names += ", "
			}
			names += d.Name()
		}
		logf("shipping %s to %s", cfg.Log, names)
	}
	results := ship.Run(ctx, cfg)
	unreached := ship.Unreachable(results)
	for _, f := range unreached {
		errorf("audit ship: could not reach %s", f)
	}
	if *once {
		for _, r := range results {
			if r.Err == nil && r.Rejected > 0 {
				fmt.Printf("%s: %d new lines delivered; the collector rejected %d records of them (said above)\n", r.Dest, r.Shipped, r.Rejected)
			} else if r.Err == nil {
				fmt.Printf("%s: %d new lines delivered\n", r.Dest, r.Shipped)
			}
		}
	}
	if len(unreached) > 0 {
		return silently(exitFail) // each one is named above
	}
	return nil
}
