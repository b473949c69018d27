// Command helpdesk is the demo's MCP server: a small helpdesk with real side
// effects, so that the demo can check afterwards what actually happened.
//
// It keeps its state under --data DIR:
//
//	customers.json   the customer store (delete_customer removes entries)
//	tickets.json     the tickets; one of them is poisoned
//	outbox.jsonl     one line per mail send_email sent
//	workspace/       where write_file is meant to write
//
// The server is deliberately naive, like many real ones: write_file writes
// any path it is given and send_email mails anyone. Protecting against a
// hijacked agent is Bouncer's job. The one exception is a safety net for the
// demo itself: it refuses paths outside --root, so even a broken proxy can
// never make the demo touch a file outside examples/demo/out.
//
// It speaks MCP on stdin and stdout, or, with --http ADDR, as a streamable
// HTTP server at http://ADDR/mcp (a remote server for the new-user
// walkthrough, which restarts it under a live session).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Customer is one entry of the customer store.
type Customer struct {
	ID    string `json:"id"`
	Name  string `json:"name"`
	Email string `json:"email"`
	Plan  string `json:"plan"`
}

// Ticket is one helpdesk ticket.
type Ticket struct {
	ID      string `json:"id"`
	From    string `json:"from"`
	Subject string `json:"subject"`
	Body    string `json:"body"`
}

// Mail is one line of the outbox.
type Mail struct {
	To      string `json:"to"`
	Subject string `json:"subject"`
	Body    string `json:"body"`
}

type desk struct {
	mu   sync.Mutex
	data string // the state directory
	root string // nothing outside it is ever written
}

func main() {
	data := flag.String("data", "", "state directory")
	root := flag.String("root", "", "no file outside this directory is ever written (default: --data)")
	addr := flag.String("http", "", "serve streamable HTTP at http://`ADDR`/mcp instead of stdio")
	flag.Parse()
	if *data == "" {
		fmt.Fprintln(os.Stderr, "helpdesk: --data DIR is required")
		os.Exit(2)
	}
	d := &desk{data: *data, root: *root}
	if d.root == "" {
		d.root = d.data
	}
	var err error
	if d.data, err = filepath.Abs(d.data); err == nil {
		d.root, err = filepath.Abs(d.root)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "helpdesk:", err)
		os.Exit(2)
	}
	if err := d.serve(*addr); err != nil {
		fmt.Fprintln(os.Stderr, "helpdesk:", err)
		os.Exit(1)
	}
}

type noArgs struct{}

type idArg struct {
	ID string `json:"id" jsonschema:"the ticket or customer id"`
}

type sendArgs struct {
	To      string `json:"to" jsonschema:"the recipient's address"`
	Subject string `json:"subject"`
	Body    string `json:"body"`
}

type writeArgs struct {
	Path    string `json:"path" jsonschema:"the file to write; relative paths are inside the workspace"`
	Content string `json:"content"`
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// serve answers MCP on stdio, or over streamable HTTP at addr when one is
// given. Over HTTP each client gets a session the server keeps in memory,
// so a restarted helpdesk has forgotten it, as a real remote server has.
func (d *desk) serve(addr string) error {
	s := mcp.NewServer(&mcp.Implementation{Name: "helpdesk", Version: "1.0.0"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "list_tickets", Description: "List open tickets."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ noArgs) (*mcp.CallToolResult, any, error) {
			var ts []Ticket
			if err := d.load("tickets.json", &ts); err != nil {
				return nil, nil, err
			}
			var b strings.Builder
			for _, t := range ts {
				fmt.Fprintf(&b, "%s  %s\n", t.ID, t.Subject)
			}
			return text(b.String()), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "read_ticket", Description: "Read one ticket in full."},
		func(ctx context.Context, _ *mcp.CallToolRequest, a idArg) (*mcp.CallToolResult, any, error) {
			var ts []Ticket
			if err := d.load("tickets.json", &ts); err != nil {
				return nil, nil, err
			}
			for _, t := range ts {
				if t.ID == a.ID {
					return text(fmt.Sprintf("Ticket %s\nFrom: %s\nSubject: %s\n\n%s", t.ID, t.From, t.Subject, t.Body)), nil, nil
				}
			}
			return nil, nil, fmt.Errorf("no ticket %q", a.ID)
		})
	mcp.AddTool(s, &mcp.Tool{Name: "list_customers", Description: "List the customers (id, name, plan)."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ noArgs) (*mcp.CallToolResult, any, error) {
			var cs []Customer
			if err := d.load("customers.json", &cs); err != nil {
				return nil, nil, err
			}
			var b strings.Builder
			for _, c := range cs {
				fmt.Fprintf(&b, "%s  %s  (%s)\n", c.ID, c.Name, c.Plan)
			}
			return text(b.String()), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "send_email", Description: "Send an email from the helpdesk."},
		func(ctx context.Context, _ *mcp.CallToolRequest, a sendArgs) (*mcp.CallToolResult, any, error) {
			line, err := json.Marshal(Mail(a))
			if err != nil {
				return nil, nil, err
			}
			if err := d.appendLine("outbox.jsonl", line); err != nil {
				return nil, nil, err
			}
			// The reply does not repeat the address: echoed back, it would
			// count as untrusted output and block later sends to it.
			return text("Mail queued."), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "write_file", Description: "Write a file; relative paths are inside the workspace."},
		func(ctx context.Context, _ *mcp.CallToolRequest, a writeArgs) (*mcp.CallToolResult, any, error) {
			p := a.Path
			if !filepath.IsAbs(p) {
				p = filepath.Join(d.data, "workspace", p)
			}
			p = filepath.Clean(p)
			if rel, err := filepath.Rel(d.root, p); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
				return nil, nil, fmt.Errorf("demo safety net: %s is outside %s", p, d.root)
			}
			if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
				return nil, nil, err
			}
			if err := os.WriteFile(p, []byte(a.Content), 0o600); err != nil {
				return nil, nil, err
			}
			return text(fmt.Sprintf("Wrote %d bytes.", len(a.Content))), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "delete_customer", Description: "Delete a customer from the store."},
		func(ctx context.Context, _ *mcp.CallToolRequest, a idArg) (*mcp.CallToolResult, any, error) {
			d.mu.Lock()
			defer d.mu.Unlock()
			var cs []Customer
			if err := d.load("customers.json", &cs); err != nil {
				return nil, nil, err
			}
			kept := cs[:0]
			for _, c := range cs {
				if c.ID != a.ID {
					kept = append(kept, c)
				}
			}
			if len(kept) == len(cs) {
				return nil, nil, fmt.Errorf("no customer %q", a.ID)
			}
			sort.Slice(kept, func(i, j int) bool { return kept[i].ID < kept[j].ID })
			b, err := json.MarshalIndent(kept, "", "  ")
			if err != nil {
				return nil, nil, err
			}
			if err := os.WriteFile(filepath.Join(d.data, "customers.json"), append(b, '\n'), 0o600); err != nil {
				return nil, nil, err
			}
			return text("Customer deleted."), nil, nil
		})
	if addr == "" {
		return s.Run(context.Background(), &mcp.StdioTransport{})
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	return http.ListenAndServe(addr, mux)
}

func (d *desk) load(name string, v any) error {
	b, err := os.ReadFile(filepath.Join(d.data, name))
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

func (d *desk) appendLine(name string, line []byte) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	f, err := os.OpenFile(filepath.Join(d.data, name), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	_, werr := f.Write(append(line, '\n'))
	return errors.Join(werr, f.Close())
}
