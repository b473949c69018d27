package testserver

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"

	mgmcp "github.com/mark3labs/mcp-go/mcp"
	mgserver "github.com/mark3labs/mcp-go/server"
)

// ServeMCPGoHTTP serves a small helpdesk built on mark3labs/mcp-go, the
// other Go MCP server library in wide use, over streamable HTTP, as
// ServeHelpdeskHTTP serves the go-sdk one (EnvAddr, the URL on stdout,
// EnvToken, and the options changed, forget, forgetcalls and getlog of
// EnvHTTP). Its tools are get_ticket, send_email (appending its arguments to
// dir/mails.jsonl, as the helpdesk does) and echo.
//
// Its session ids are mcp-go's stateful ones (server.WithStateful): a
// request naming an id this process did not issue, as after a restart, is
// answered 404. (mcp-go's default accepts any well-formed id, so a restart
// goes unnoticed by the client; there is then no lost session to replace.)
func ServeMCPGoHTTP(dir string) error {
	opts := options(strings.Split(os.Getenv(EnvHTTP), ","))
	s := mgserver.NewMCPServer("helpdesk-mcpgo", "1", mgserver.WithToolCapabilities(false))
	s.AddTool(mgmcp.NewTool("get_ticket", mgmcp.WithDescription("Read a ticket"), mgmcp.WithString("id")),
		func(ctx context.Context, req mgmcp.CallToolRequest) (*mgmcp.CallToolResult, error) {
			return mgmcp.NewToolResultText(Ticket), nil
		})
	var mailMu sync.Mutex
	s.AddTool(mgmcp.NewTool("send_email", mgmcp.WithDescription("Send an email"),
		mgmcp.WithString("to"), mgmcp.WithString("subject"), mgmcp.WithString("body")),
		func(ctx context.Context, req mgmcp.CallToolRequest) (*mgmcp.CallToolResult, error) {
			mailMu.Lock()
			defer mailMu.Unlock()
			line, err := json.Marshal(req.GetArguments())
			if err != nil {
				return nil, err
			}
			f, err := os.OpenFile(filepath.Join(dir, "mails.jsonl"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
			if err != nil {
				return nil, err
			}
			defer f.Close()
			if _, err := f.Write(append(line, '\n')); err != nil {
				return nil, err
			}
			return mgmcp.NewToolResultText("sent"), nil
		})
	echo := "Echo the text"
	if opts["changed"] {
		echo = changedEcho.Description
	}
	s.AddTool(mgmcp.NewTool("echo", mgmcp.WithDescription(echo), mgmcp.WithString("text")),
		func(ctx context.Context, req mgmcp.CallToolRequest) (*mgmcp.CallToolResult, error) {
			return mgmcp.NewToolResultText(req.GetString("text", "")), nil
		})
	h := mgserver.NewStreamableHTTPServer(s, mgserver.WithStateful(true))
	return serveHTTP(newFaults(opts, dir).wrap(h, os.Getenv(EnvToken)), "/mcp")
}
