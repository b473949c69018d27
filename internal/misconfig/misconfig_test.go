package misconfig

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestServe(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p := Problem{
		Server:        "mail",
		Err:           errors.New("bouncer.yaml:2: send_email.sink_params: must be a list"),
		Fix:           "Fix the file, then restart the MCP client.",
		BlockedPrefix: "[bouncer blocked] ",
		Version:       "test",
	}
	st, ct := mcp.NewInMemoryTransports()
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, st, p) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "client"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := `Bouncer could not start MCP server "mail", so none of its tools is available and nothing is sent to it: bouncer.yaml:2: send_email.sink_params: must be a list. Fix the file, then restart the MCP client.`
	if got := cs.InitializeResult().Instructions; got != want {
		t.Errorf("instructions = %q\nwant %q", got, want)
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(tools.Tools) != 1 || tools.Tools[0].Name != ToolName || tools.Tools[0].Description != want {
		t.Fatalf("tools = %+v", tools.Tools)
	}
	// Every call, of its tool or of any other, gets the error.
	for _, name := range []string{ToolName, "send_email"} {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{"to": "a@b.example"}})
		if err != nil {
			t.Fatalf("call %s: %v", name, err)
		}
		text := res.Content[0].(*mcp.TextContent).Text
		if !res.IsError || text != "[bouncer blocked] "+want {
			t.Errorf("call %s = %v %q", name, res.IsError, text)
		}
	}
	cs.Close()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return when the client went")
	}
}
