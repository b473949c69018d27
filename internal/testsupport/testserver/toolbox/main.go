// Command toolbox is an MCP test server in Go with the Gmail server's
// download_attachment, so that end-to-end tests can check what reaches the
// file system when a Go server, not Bouncer, decides the path:
//
//	download_attachment  {messageId, attachmentId, savePath, filename}
//	                     writes the attachment to filepath.Join(savePath,
//	                     filename), making savePath first, as the Gmail
//	                     server (@gongrzhe/server-gmail-autoauth-mcp) does
//	                     with path.join; savePath defaults to the working
//	                     directory
//
// testdata/servers/builder-server.mjs is the same tool in node, with a
// shell and a Python tool. It is built on github.com/mark3labs/mcp-go, as
// the mcpgo test server is.
package main

import (
	"context"
	"fmt"
	"os"
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
	if err := server.ServeStdio(s); err != nil {
		fmt.Fprintln(os.Stderr, "toolbox:", err)
		os.Exit(1)
	}
}
