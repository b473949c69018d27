package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/bouncer-mcp/bouncer/internal/hooks"
	"github.com/bouncer-mcp/bouncer/internal/session"
)

const hookSynopsis = `bouncer hook prompt

Run by the MCP client as its prompt-submit hook (Claude Code UserPromptSubmit,
Cursor beforeSubmitPrompt, Gemini CLI BeforeAgent, Windsurf pre_user_prompt,
VS Code UserPromptSubmit). Reads the hook's JSON event on stdin and records
what the user typed in that client's session: a destination in it is then
allowed even if a server's output holds it too. It never blocks the prompt:
on any problem it says so on stderr and exits 0.`

// maxHookEvent bounds what the hook reads: a prompt, not a disk image.
const maxHookEvent = 4 << 20

func cmdHook(args []string) error {
	fs, home := newFlags("hook", hookSynopsis)
	// The hook's name comes first; flags may stand before or after it.
	var which string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		which, args = args[0], args[1:]
	}
	if done, err := parseFlags(fs, args); done {
		return err
	}
	rest := fs.Args()
	if which == "" && len(rest) > 0 {
		which, rest = rest[0], rest[1:]
	}
	if which != "prompt" || len(rest) > 0 {
		return usageErr("%s", "hook: the only hook is 'bouncer hook prompt'")
	}
	event, err := io.ReadAll(io.LimitReader(os.Stdin, maxHookEvent+1))
	if err != nil || len(event) > maxHookEvent {
		errorf("hook prompt: could not read the event (%v); the prompt is not recorded", err)
		return nil
	}
	ev, err := hooks.Prompt(event)
	// Cursor waits for an answer on every path; Claude Code would add what
	// we print to the model's context, so it gets nothing, as does Gemini
	// CLI (which shows what we say on stderr when stdout is empty).
	if ev.Name == "beforeSubmitPrompt" {
		defer fmt.Fprintln(os.Stdout, `{"continue":true}`)
	}
	if err != nil {
		errorf("hook prompt: %v; the prompt is not recorded", err)
		return nil
	}
	dir, err := stateDir(*home)
	if err == nil {
		err = ensureStateDir(dir)
	}
	if err != nil {
		errorf("hook prompt: %v; the prompt is not recorded (set BOUNCER_HOME or --home)", err)
		return nil
	}
	sess, err := session.Join(dir, func(msg string) { errorf("hook prompt: %s", msg) })
	if err != nil || !sess.Shared() {
		errorf("hook prompt: %v; the prompt is not recorded, so destinations it names are asked about", err)
		return nil
	}
	sess.RecordPrompt(ev.Prompt)
	return nil
}
