// Command toolbox is an MCP test server with the tools that build a path
// or run code from what an agent sends, so that end-to-end tests can check
// what reaches the file system when a server, not Bouncer, decides the
// path:
//
//	download_attachment  {messageId, attachmentId, savePath, filename}
//	                     writes the attachment to filepath.Join(savePath,
//	                     filename), making savePath first, as the Gmail
//	                     server (@gongrzhe/server-gmail-autoauth-mcp) does
//	                     with path.join; savePath defaults to the working
//	                     directory
//	run_command          {command}  runs sh -c command
//	run_python           {code}     runs python3 -c code
//
// run_command and run_python answer with the program's output and exit
// status, and isError when it did not exit 0. It is built on
// github.com/mark3labs/mcp-go, as the mcpgo test server is.
package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

type attachment struct {
	MessageID    string `json:"messageId"`
	AttachmentID string `json:"attachmentId"`
	SavePath     string `json:"savePath"`
	Filename     string `json:"filename"`
}

type command struct {
	Command string `json:"command"`
}

type code struct {
	Code string `json:"code"`
}

func main() {
	s := server.NewMCPServer("toolbox-testserver", "1.0.0", server.WithToolCapabilities(false))
	s.AddTool(mcp.NewTool("download_attachment",
		mcp.WithDescription("Downloads an email attachment to a specified location"),
		mcp.WithString("messageId", mcp.Required(), mcp.Description("ID of the email message containing the attachment")),
		mcp.WithString("attachmentId", mcp.Required(), mcp.Description("ID of the attachment to download")),
		mcp.WithString("filename", mcp.Description("Filename to save the attachment as")),
		mcp.WithString("savePath", mcp.Description("Directory path to save the attachment (defaults to current directory)")),
	), mcp.NewTypedToolHandler(func(ctx context.Context, req mcp.CallToolRequest, a attachment) (*mcp.CallToolResult, error) {
		dir := a.SavePath
		if dir == "" {
			dir, _ = os.Getwd()
		}
		name := a.Filename
		if name == "" {
			name = "attachment.bin"
		}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return mcp.NewToolResultError(fmt.Sprintf("download_attachment: %v", err)), nil
		}
		full := filepath.Join(dir, name)
		body := fmt.Sprintf("attachment %s of message %s\n", a.AttachmentID, a.MessageID)
		if err := os.WriteFile(full, []byte(body), 0o600); err != nil {
			return mcp.NewToolResultError(fmt.Sprintf("download_attachment: %v", err)), nil
		}
		return mcp.NewToolResultText("Attachment saved to: " + full), nil
	}))
	s.AddTool(mcp.NewTool("run_command",
		mcp.WithDescription("Run a shell command"),
		mcp.WithString("command", mcp.Required(), mcp.Description("The command line, run by sh -c")),
	), mcp.NewTypedToolHandler(func(ctx context.Context, req mcp.CallToolRequest, a command) (*mcp.CallToolResult, error) {
		return run(ctx, "sh", "-c", a.Command), nil
	}))
	s.AddTool(mcp.NewTool("run_python",
		mcp.WithDescription("Run Python code"),
		mcp.WithString("code", mcp.Required(), mcp.Description("The program, run by python3 -c")),
	), mcp.NewTypedToolHandler(func(ctx context.Context, req mcp.CallToolRequest, a code) (*mcp.CallToolResult, error) {
		return run(ctx, "python3", "-c", a.Code), nil
	}))
	if err := server.ServeStdio(s); err != nil {
		fmt.Fprintln(os.Stderr, "toolbox:", err)
		os.Exit(1)
	}
}

// run runs a program and answers with its output and exit status.
func run(ctx context.Context, argv ...string) *mcp.CallToolResult {
	out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput()
	if err != nil {
		return mcp.NewToolResultError(fmt.Sprintf("%s\n(%v)", out, err))
	}
	return mcp.NewToolResultText(string(out) + "\n(exit status 0)")
}
