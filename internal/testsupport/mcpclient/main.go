// Command mcpclient is a real MCP client for scripted checks: it starts a
// server the way a client starts it (the command, args, env and cwd of an
// entry of a client config file, JSON or Goose's YAML), speaks MCP to it with the go-sdk client,
// and prints what it sees, one line a step. It exists for the new-user
// walkthrough (.ci/checks/newuser.sh) and is not part of Bouncer.
//
//	mcpclient [-elicit accept|remember|decline|none] CONFIG SERVER STEP...
//
// A step is "tools" (prints the tool names), "call TOOL JSON" given as
// three words: call, the tool, its arguments, or "wait FILE": print
// "waiting: FILE" and go on once FILE exists (the script changes something
// under the live session, a server restart, then creates FILE). Each call prints
// "TOOL: ok: TEXT" or "TOOL: blocked: TEXT" (the first 300 bytes of its
// first text block, one line). With -elicit other than none, the client
// declares elicitation and answers every question so, printing
// "asked: MESSAGE" first (whole, its line breaks as \n).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"gopkg.in/yaml.v3"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "mcpclient:", err)
		os.Exit(1)
	}
}

type entry struct {
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
	Cwd     string            `json:"cwd"`
}

func run() error {
	elicit := flag.String("elicit", "none", "how to answer the server's questions: accept, remember, decline, or none (do not declare elicitation)")
	flag.Parse()
	if flag.NArg() < 3 {
		return fmt.Errorf("usage: mcpclient [-elicit accept|remember|decline|none] CONFIG SERVER STEP [STEP]")
	}
	config, server, steps := flag.Arg(0), flag.Arg(1), flag.Args()[2:]
	e, err := readEntry(config, server)
	if err != nil {
		return err
	}
	// The client starts the command as it is written: a bare name through
	// PATH, as the client's own environment has it.
	cmd := exec.Command(e.Command, e.Args...)
	cmd.Dir = filepath.Dir(config)
	if e.Cwd != "" {
		cmd.Dir = e.Cwd
	}
	cmd.Env = os.Environ()
	for k, v := range e.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stderr = os.Stderr

	opts := &mcp.ClientOptions{}
	if *elicit != "none" {
		answer := *elicit
		opts.ElicitationHandler = func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			// One line, its line breaks shown as \n, so a check can
			// see the question apart from the details below it.
			fmt.Printf("asked: %s\n", strings.Join(strings.Fields(strings.ReplaceAll(req.Params.Message, "\n", `\n`)), " "))
			switch answer {
			case "decline":
				return &mcp.ElicitResult{Action: "decline"}, nil
			case "remember":
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"remember": true}}, nil
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{}}, nil
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "walkthrough", Version: "1"}, opts)
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		return fmt.Errorf("connecting to %s %v: %w", e.Command, e.Args, err)
	}
	defer cs.Close()
	for i := 0; i < len(steps); i++ {
		switch steps[i] {
		case "tools":
			res, err := cs.ListTools(ctx, nil)
			if err != nil {
				return err
			}
			var names []string
			for _, t := range res.Tools {
				names = append(names, t.Name)
			}
			fmt.Printf("tools: %s\n", strings.Join(names, " "))
		case "call":
			if i+2 >= len(steps) {
				return fmt.Errorf("call needs a tool and its JSON arguments")
			}
			tool, raw := steps[i+1], steps[i+2]
			i += 2
			var args map[string]any
			if err := json.Unmarshal([]byte(raw), &args); err != nil {
				return fmt.Errorf("call %s: arguments: %w", tool, err)
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
			if err != nil {
				fmt.Printf("%s: error: %s\n", tool, oneLine(err.Error()))
				continue
			}
			text := ""
			for _, c := range res.Content {
				if t, ok := c.(*mcp.TextContent); ok {
					text = t.Text
					break
				}
			}
			state := "ok"
			if res.IsError {
				state = "error"
				if strings.HasPrefix(text, "[bouncer blocked] ") {
					state = "blocked"
				}
			}
			fmt.Printf("%s: %s: %s\n", tool, state, oneLine(text))
		case "wait":
			if i+1 >= len(steps) {
				return fmt.Errorf("wait needs a file")
			}
			i++
			fmt.Printf("waiting: %s\n", steps[i])
			for {
				if _, err := os.Stat(steps[i]); err == nil {
					break
				}
				select {
				case <-ctx.Done():
					return fmt.Errorf("wait %s: %w", steps[i], ctx.Err())
				case <-time.After(50 * time.Millisecond):
				}
			}
		default:
			return fmt.Errorf("unknown step %q (tools, call TOOL JSON, or wait FILE)", steps[i])
		}
	}
	return nil
}

// readEntry reads one server entry of a client config, as the client
// does (plain JSON: .mcp.json, Cursor's mcp.json, Claude Desktop's file).
func readEntry(path, name string) (entry, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return entry{}, err
	}
	if strings.HasSuffix(path, ".yaml") {
		// Goose's config.yaml: an extension's cmd, args and envs.
		var goose struct {
			Extensions map[string]struct {
				Cmd  string            `yaml:"cmd"`
				Args []string          `yaml:"args"`
				Envs map[string]string `yaml:"envs"`
			} `yaml:"extensions"`
		}
		if err := yaml.Unmarshal(b, &goose); err != nil {
			return entry{}, fmt.Errorf("%s: %w", path, err)
		}
		if x, ok := goose.Extensions[name]; ok && x.Cmd != "" {
			return entry{Command: x.Cmd, Args: x.Args, Env: x.Envs}, nil
		}
		return entry{}, fmt.Errorf("%s: no stdio extension %q", path, name)
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(b, &doc); err != nil {
		return entry{}, fmt.Errorf("%s: %w", path, err)
	}
	for _, block := range []string{"mcpServers", "servers"} {
		var servers map[string]entry
		if raw, ok := doc[block]; ok && json.Unmarshal(raw, &servers) == nil {
			if e, ok := servers[name]; ok {
				return e, nil
			}
		}
	}
	return entry{}, fmt.Errorf("%s: no server %q", path, name)
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}
