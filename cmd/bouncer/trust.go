package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/bouncer-mcp/bouncer/internal/approval"
	"github.com/bouncer-mcp/bouncer/internal/audit"
	"github.com/bouncer-mcp/bouncer/internal/display"
	"github.com/bouncer-mcp/bouncer/internal/session"
	"github.com/bouncer-mcp/bouncer/internal/statefile"
)

const trustSynopsis = `bouncer trust list [--server NAME]
       bouncer trust add [--server NAME] [DESTINATION]
       bouncer trust remove --server NAME DESTINATION

Manages remembered destinations: recipients a human vouched for on one server, allowed
through it from now on even when a server's output holds them too (as trusted_destinations
are). add needs a terminal, like approve: without DESTINATION it lists the destinations
denied lately because they came from a server's output, and you pick one, see where it
came from, and type it to vouch for it.`

func cmdTrust(args []string) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		if len(args) > 0 && (args[0] == "--help" || args[0] == "-h" || args[0] == "-help") {
			fmt.Fprintf(os.Stdout, "Usage: %s\n", trustSynopsis)
			return nil
		}
		return usageErr("%s", "trust: give list, add or remove; see bouncer trust --help")
	}
	verb := args[0]
	fs, home := newFlags("trust "+verb, trustSynopsis)
	server := fs.String("server", "", "the server `NAME` (as in audit lines: bouncer run --name)")
	ops, done, st := parseOperands(fs, args[1:])
	if done {
		return st
	}
	dir, err := stateDir(*home)
	if err != nil {
		return badInput(fmt.Errorf("trust: %v", err))
	}
	rem := session.OpenRemembered(dir)
	switch verb {
	case "list":
		if len(ops) > 0 {
			return usageErr("%s", "trust list takes no destination")
		}
		return trustList(rem, *server)
	case "remove":
		if *server == "" || len(ops) != 1 {
			return usageErr("%s", "trust remove: give --server NAME and one DESTINATION")
		}
		found, err := rem.Remove(*server, ops[0])
		if err != nil {
			return failed(fmt.Errorf("trust remove: %v", err))
		}
		if !found {
			return failed(fmt.Errorf("trust remove: %s is not remembered for server %s (bouncer trust list)", show(ops[0]), show(*server)))
		}
		fmt.Printf("Forgot %s for server %s.\n", show(ops[0]), show(*server))
		return nil
	case "add":
		if len(ops) > 1 {
			return usageErr("%s", "trust add: give at most one DESTINATION")
		}
		if len(ops) == 1 && *server == "" {
			return usageErr("%s", "trust add: a DESTINATION goes with --server NAME")
		}
		if !term.IsTerminal(int(os.Stdin.Fd())) {
			return failed(fmt.Errorf("trust add: stdin is not a terminal; a human must run 'bouncer trust add' in their own terminal, not through the agent or a script"))
		}
		return trustAdd(rem, filepath.Join(dir, "audit.jsonl"), *server, ops)
	}
	return usageErr("%s", fmt.Sprintf("trust: unknown %q; give list, add or remove", verb))
}

func trustList(rem *session.Remembered, server string) error {
	entries, err := rem.List()
	if err != nil {
		return failed(fmt.Errorf("trust list: %v", err))
	}
	n := 0
	for _, e := range entries {
		if server != "" && e.Server != server {
			continue
		}
		n++
		fmt.Printf("%s  %s  %s  (%s)\n", e.Added.UTC().Format("2006-01-02"), show(e.Server), show(e.Destination), printable(e.Via))
	}
	if n == 0 {
		fmt.Fprintln(os.Stderr, "bouncer: no remembered destinations")
	}
	return nil
}

// denial is one destination denied because a server's output held it.
type denial struct {
	when                    time.Time
	server, tool, param     string
	destination, fromServer string
	count                   int
}

// recentDenials reads the audit log for taint denies, newest first, one per
// server and destination.
func recentDenials(path string, max int) ([]denial, error) {
	f, err := statefile.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	idx := map[string]int{}
	var out []denial
	err = audit.Scan(f, func(_ int, e audit.Entry, perr error) error {
		if perr != nil || e.Verdict != "deny" || e.Taint == nil {
			return nil
		}
		key := e.Server + "\x00" + strings.ToLower(e.Taint.Destination)
		if i, ok := idx[key]; ok {
			out[i].count++
			out[i].when = e.TS
			return nil
		}
		idx[key] = len(out)
		out = append(out, denial{when: e.TS, server: e.Server, tool: e.Tool, param: e.Taint.Param,
			destination: e.Taint.Destination, fromServer: e.Taint.Source, count: 1})
		return nil
	})
	// Newest first.
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	if len(out) > max {
		out = out[:max]
	}
	return out, err
}

func trustAdd(rem *session.Remembered, auditPath, server string, ops []string) error {
	in := bufio.NewReader(os.Stdin)
	var d denial
	if len(ops) == 1 {
		d = denial{server: server, destination: ops[0]}
		if ds, err := recentDenials(auditPath, 1000); err == nil {
			for _, x := range ds {
				if x.server == server && approval.SameDestination(x.destination, ops[0]) {
					d = x
					break
				}
			}
		}
	} else {
		ds, err := recentDenials(auditPath, 20)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return failed(fmt.Errorf("trust add: reading %s: %v", auditPath, err))
		}
		var pick []denial
		for _, x := range ds {
			if server == "" || x.server == server {
				pick = append(pick, x)
			}
		}
		if len(pick) == 0 {
			return failed(fmt.Errorf("trust add: no destination was denied lately for coming from a server's output; to vouch for one anyway, give --server NAME DESTINATION"))
		}
		fmt.Println("Destinations denied lately because a server's output held them (newest first):")
		for i, x := range pick {
			fmt.Printf("  %2d. %s  server %s, %s.%s = %s  (held by %s's output; denied %d×)\n", i+1, clock(x.when),
				show(x.server), show(x.tool), show(x.param), show(x.destination), showSource(x.fromServer), x.count)
		}
		flushTypeAhead(os.Stdin)
		fmt.Print("Which one to review? [number, Enter for none] ")
		line, _ := in.ReadString('\n')
		n, err := strconv.Atoi(strings.TrimSpace(line))
		if err != nil || n < 1 || n > len(pick) {
			return failed(fmt.Errorf("trust add: nothing vouched for"))
		}
		d = pick[n-1]
	}
	fmt.Println()
	fmt.Printf("  %-12s %s\n", "server", show(d.server))
	fmt.Printf("  %-12s %s\n", "destination", show(d.destination))
	if a := display.ASCII(d.destination); a != printable(d.destination) {
		fmt.Printf("  %-12s %s\n", "as ASCII", a)
	}
	if d.count > 0 {
		fmt.Printf("  %-12s the output of server %s held it, and the agent then tried to send there\n", "came from", showSource(d.fromServer))
	}
	fmt.Println("This is what an injection looks like: an address planted in an email, ticket or page")
	fmt.Println("that the agent read. Vouch for it only if you know this recipient from outside this")
	fmt.Println("conversation. Once vouched, it is allowed through server " + show(d.server) + " from now on.")
	flushTypeAhead(os.Stdin)
	fmt.Print("Type the destination to vouch for it (Enter to cancel): ")
	typed, err := in.ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return failed(fmt.Errorf("trust add: reading the answer: %v", err))
	}
	typed = strings.TrimSpace(typed)
	if typed == "" || !approval.SameDestination(typed, d.destination) {
		return failed(fmt.Errorf("trust add: what you typed is not the destination; nothing vouched for"))
	}
	if err := rem.Add(d.server, d.destination, "trust add", time.Now()); err != nil {
		return failed(fmt.Errorf("trust add: %v", err))
	}
	fmt.Printf("Remembered %s for server %s. The agent may retry; bouncer trust remove forgets it.\n", show(d.destination), show(d.server))
	return nil
}

func showSource(s string) string {
	if s == "" {
		return "a server"
	}
	return show(s)
}
