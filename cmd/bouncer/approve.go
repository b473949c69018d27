package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/bouncer-mcp/bouncer/internal/approval"
	"github.com/bouncer-mcp/bouncer/internal/display"
	"github.com/bouncer-mcp/bouncer/internal/session"
)

// cmdApprove lets a human approve one blocked destination by its code. It
// insists on a terminal on stdin and always asks: the point is that the
// agent, which sees the code, cannot approve it by itself.
func cmdApprove(args []string) error {
	fs, home := newFlags("approve", "bouncer approve [--home DIR] [--remember] CODE\n\n"+
		"Shows what the one-time CODE from a blocked call would allow and asks you to confirm.\n"+
		"Run it yourself, in your own terminal; it refuses to run without one. With --remember, a yes\n"+
		"also vouches for the destination on that server from now on (bouncer trust list shows it).")
	remember := fs.Bool("remember", false, "also allow this destination through this server from now on, even when a server's output holds it")
	ops, done, err := parseOperands(fs, args)
	if done {
		return err
	}
	if len(ops) != 1 {
		return usageErr("%s", "approve: give exactly one CODE, as printed in the blocked call (like K7Q-F2M)")
	}
	if !term.IsTerminal(int(os.Stdin.Fd())) {
		return failed(fmt.Errorf("approve: stdin is not a terminal; a human must run 'bouncer approve' in their own terminal, not through the agent or a script"))
	}
	dir, err := stateDir(*home)
	if err != nil {
		return badInput(fmt.Errorf("approve: %v", err))
	}
	store := approval.Open(filepath.Join(dir, "pending.json"), nil)
	code := approval.Normalize(ops[0])
	shown, _ := display.Printable(code)
	c, err := store.Lookup(code)
	if err := codeProblem(code, shown, c, err); err != nil {
		return err
	}
	if c.Approved {
		fmt.Printf("Code %s is already approved; the agent may retry the call once before %s.\n", code, clock(c.Expires()))
		return nil
	}
	showCode(os.Stdout, c, time.Now())
	if *remember {
		if c.NoDestination() {
			return badInput(fmt.Errorf("approve: --remember needs a destination, and this call names none; approve it without --remember"))
		}
		fmt.Printf("With --remember, a yes also allows this destination through server %s from now on,\n"+
			"even when a server's output holds it. Do so only for a recipient you know.\n", show(c.Server))
	}
	// Drop anything typed before the question was on screen: only an
	// answer to this question counts.
	flushTypeAhead(os.Stdin)
	// The contract's prompt; s is the one other yes, said on the line
	// before it.
	fmt.Println("y allows this one call; s allows it for the rest of the agent's session (this server,")
	fmt.Println("tool, argument and destination only); anything else refuses.")
	fmt.Print("Approve? [y/N] ")
	answer, err := bufio.NewReader(os.Stdin).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return failed(fmt.Errorf("approve: reading the answer: %v", err))
	}
	forSession := false
	switch strings.ToLower(strings.TrimSpace(answer)) {
	case "y", "yes":
	case "s", "session":
		forSession = true
	default:
		if errors.Is(err, io.EOF) {
			fmt.Println()
		}
		return failed(fmt.Errorf("approve: not approved"))
	}
	// The prompt may have been up for minutes: re-check, and approve only
	// what was on the screen.
	err = store.ApproveShown(c, forSession)
	if errors.Is(err, approval.ErrChanged) {
		return failed(fmt.Errorf("approve: code %s changed while it was shown; nothing approved. Run bouncer approve again to see it as it is now", code))
	}
	if err := codeProblem(code, shown, c, err); err != nil {
		return err
	}
	if forSession {
		fmt.Printf("Approved %s for the session. The agent may now retry the call before %s; from then on, the same\n"+
			"destination through the same tool and argument of server %s is allowed until the session ends.\n", code, clock(c.Expires()), show(c.Server))
	} else {
		fmt.Printf("Approved %s. The agent may now retry the same call, once, before %s.\n", code, clock(c.Expires()))
	}
	if *remember {
		if err := session.OpenRemembered(dir).Add(c.Server, c.Destination, "approve", time.Now()); err != nil {
			return failed(fmt.Errorf("approve: the code is approved, but the destination could not be remembered: %v", err))
		}
		fmt.Printf("Remembered %s for server %s (bouncer trust remove forgets it).\n", show(c.Destination), show(c.Server))
	}
	return nil
}

// show is display.Show without its second result: a value as it is safe
// to print.
func show(v string) string { s, _ := display.Show(v); return s }

// codeProblem says why a code can't be approved, or nil when it can.
func codeProblem(code, shown string, c approval.Code, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, approval.ErrUnknown):
		if !approval.ValidCode(code) {
			return failed(fmt.Errorf("approve: %q is not a code; codes look like K7Q-F2M", shown))
		}
		return failed(fmt.Errorf("approve: unknown code %s: it was never issued here, or it was used or expired long enough ago to be forgotten (bouncer pending lists open codes)", shown))
	case errors.Is(err, approval.ErrInvalid):
		// The entry is in the file but breaks the rules (an older bouncer
		// wrote it, or it was edited): it approves nothing.
		return failed(fmt.Errorf("approve: code %s can't be approved: its entry is invalid (%v), so nothing was approved; "+
			"have the agent retry the call to get a new code", code, printable(err.Error())))
	case errors.Is(err, approval.ErrUsed):
		return failed(fmt.Errorf("approve: code %s was already used; each code allows one call. Have the agent retry to get a new code", code))
	case errors.Is(err, approval.ErrExpired) && c.Issued.After(time.Now()):
		return failed(fmt.Errorf("approve: code %s was issued at %s, in the future: this clock did not issue it, so it is not valid", code, clock(c.Issued)))
	case errors.Is(err, approval.ErrExpired):
		return failed(fmt.Errorf("approve: code %s expired at %s (codes last %v); have the agent retry the call to get a new one", code, clock(c.Expires()), approval.TTL))
	}
	return badInput(fmt.Errorf("approve: %v", err))
}

// showCode prints what a code would allow. Every value is escaped and, if
// need be, quoted (display.Show), so that one chosen by an attacker can't
// redraw the screen or the prompt, hide part of itself, or pass for the
// program's own words such as "(none)".
func showCode(w io.Writer, c approval.Code, now time.Time) {
	hiddenChars := false
	row := func(name, shown string) { fmt.Fprintf(w, "  %-12s %s\n", name, shown) }
	field := func(name, value string) {
		v, changed := display.Show(value)
		hiddenChars = hiddenChars || changed
		row(name, v)
	}
	if c.NoDestination() {
		fmt.Fprintln(w, "A blocked call of a tool that sends data names no destination Bouncer could check:")
	} else {
		fmt.Fprintln(w, "A blocked call asks to send to a destination Bouncer could not vouch for:")
	}
	field("code", c.Code)
	field("server", c.Server)
	field("tool", c.Tool)
	if c.NoDestination() {
		row("argument", "(none)")
		row("destination", "(none: the call names no destination)")
	} else {
		field("argument", c.Param)
		field("destination", c.Destination)
		// Lookalike letters (a Cyrillic а in "pаrtner") read as ASCII ones:
		// show every non-ASCII character as its code point too.
		if a, p := display.ASCII(c.Destination), printable(c.Destination); a != p {
			if shown, _ := display.Show(c.Destination); strings.HasPrefix(shown, `"`) {
				a = `"` + strings.ReplaceAll(a, `"`, `\"`) + `"`
			}
			row("as ASCII", a)
		}
		if n := len(c.Destination); n > longDestination {
			row("length", fmt.Sprintf("%d bytes, longer than an ordinary address: read all of it", n))
		}
		if c.Seen != nil {
			// A hint: the address may be the injection's, spelled another
			// way. It allows and denies nothing.
			row("note", fmt.Sprintf("the domain %s appeared in the output of server %s this session:", show(c.Seen.Domain), show(c.Seen.Server)))
			row("", "this destination may come from there, spelled another way")
		}
	}
	fmt.Fprintf(w, "  %-12s %s ago; expires in %s (%s)\n", "issued", age(now.Sub(c.Issued)), age(c.Expires().Sub(now)), clock(c.Expires()))
	if hiddenChars {
		fmt.Fprintln(w, "  WARNING: these fields hold control, invisible or repeated space characters, shown escaped (\\x1b, \\u202e).")
		fmt.Fprintln(w, "  Real addresses rarely do; this may be an attempt to disguise the destination.")
	}
	if c.NoDestination() {
		fmt.Fprintln(w, "Approving allows one call of this tool on this server that names no destination,")
		fmt.Fprintln(w, "before the code expires, or, with s, every such call of the session. The call's")
		fmt.Fprintln(w, "arguments are not checked.")
		return
	}
	fmt.Fprintln(w, "Approving allows one call of this tool on this server with this argument and destination,")
	fmt.Fprintln(w, "before the code expires, or, with s, every such call of the session. The call's other")
	fmt.Fprintln(w, "arguments (a subject, a body) are not checked.")
}

func printable(s string) string { p, _ := display.Printable(s); return p }

// longDestination is the length past which approve points out that a
// destination is long: the start of it may have scrolled out of view.
const longDestination = 256

// age formats a duration to the second: 42s, 3m05s, 26h00m00s.
func age(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	d = d.Round(time.Second)
	h, m, s := int(d.Hours()), int(d.Minutes())%60, int(d.Seconds())%60
	switch {
	case h > 0:
		return fmt.Sprintf("%dh%02dm%02ds", h, m, s)
	case m > 0:
		return fmt.Sprintf("%dm%02ds", m, s)
	}
	return fmt.Sprintf("%ds", s)
}

// clock formats a time in UTC, as the audit log does: the time of day when
// it is within a day of now, else with the date.
func clock(t time.Time) string {
	if d := time.Since(t); d < 24*time.Hour && d > -24*time.Hour {
		return t.UTC().Format("15:04:05 UTC")
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

// parseOperands parses flags that may come before or after the operands
// (bouncer approve CODE --home DIR), returning the operands. After "--"
// everything is an operand.
func parseOperands(fs *flag.FlagSet, args []string) (ops []string, done bool, err error) {
	for {
		if done, err := parseFlags(fs, args); done {
			return nil, true, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return ops, false, nil
		}
		if i := len(args) - len(rest) - 1; i >= 0 && args[i] == "--" {
			return append(ops, rest...), false, nil
		}
		ops = append(ops, rest[0])
		args = rest[1:]
	}
}
