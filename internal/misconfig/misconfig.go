// Package misconfig is the MCP server bouncer run serves in place of the
// upstream when its own configuration is broken (a policy or trust file
// that does not load, a config entry it can't launch). An MCP client shows
// a server whose process exits at once as "Failed to connect", for every
// server that shares the broken file, and keeps its stderr out of sight;
// this server connects instead and says what is wrong where the user
// looks: in the answer to initialize (its instructions), in the one tool
// it offers, whose description is the error and the fix, and in the
// result of every tools/call.
//
// It fails closed by construction: it starts no upstream and reaches
// none, so nothing is forwarded, and every call, whatever its tool, gets
// the error as its result.
package misconfig

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ToolName is the one tool the server offers.
const ToolName = "bouncer_config_error"

// Problem is what went wrong, for the user.
type Problem struct {
	// Server is the wrapped server's name (run's --name).
	Server string
	// Err is the error that stopped bouncer run, as it printed it.
	Err error
	// Fix says what to do about it, after the error's own advice.
	Fix string
	// BlockedPrefix starts every call's result, as the proxy's blocked
	// calls start (proxy.BlockedPrefix).
	BlockedPrefix string
	// Version is bouncer's, for serverInfo.
	Version string
}

// Text is the problem as the user reads it, in the instructions, the
// tool's description and every call's result.
func (p Problem) Text() string {
	return fmt.Sprintf("Bouncer could not start MCP server %q, so none of its tools is available and nothing is sent to it: %v. %s", p.Server, p.Err, p.Fix)
}

// Serve answers the MCP client on t until it goes: initialize, the one
// tool, and the error for every tools/call. It starts nothing and
// forwards nothing.
func Serve(ctx context.Context, t mcp.Transport, p Problem) error {
	text := p.Text()
	srv := mcp.NewServer(&mcp.Implementation{Name: "bouncer", Version: p.Version}, &mcp.ServerOptions{Instructions: text})
	refuse := func() *mcp.CallToolResult {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: p.BlockedPrefix + text}}}
	}
	srv.AddTool(&mcp.Tool{Name: ToolName, Description: text, InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return refuse(), nil })
	// A call of any other tool (one the client remembers from an earlier
	// start) gets the same answer, not the SDK's "unknown tool".
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/call" {
				return refuse(), nil
			}
			return next(ctx, method, req)
		}
	})
	return srv.Run(ctx, t)
}
