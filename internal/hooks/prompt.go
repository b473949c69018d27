package hooks

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// A client's prompt-submit hook hands `bouncer hook prompt` a JSON event on
// stdin, whose shape is the client's own. The event names itself, in a
// member whose name is the client's own too (Claude Code, Cursor and
// Gemini CLI write hook_event_name, VS Code hookEventName, Windsurf
// agent_action_name), and the two pick the one reader of that client's
// shape: a field another client uses is never taken for the prompt, and an
// event bouncer has no reader for records nothing. What is recorded
// vouches for the destinations in it, so each reader takes only what the
// user typed.

// PromptEvent is what a prompt-submit hook event says.
type PromptEvent struct {
	// Name is the event's name (UserPromptSubmit, beforeSubmitPrompt,
	// BeforeAgent, pre_user_prompt).
	Name string
	// Prompt is what the user typed.
	Prompt string
}

// eventNames are the members in which the clients name their events.
var eventNames = []string{"hook_event_name", "hookEventName", "agent_action_name"}

// promptReaders read the events of each client's prompt-submit hook, by
// the member that names the event and that name, from the members of the
// event's JSON object.
var promptReaders = map[[2]string]func(event map[string]json.RawMessage) (string, error){
	{"hook_event_name", "UserPromptSubmit"}:   topPrompt,      // Claude Code
	{"hook_event_name", "beforeSubmitPrompt"}: topPrompt,      // Cursor
	{"hook_event_name", "BeforeAgent"}:        geminiPrompt,   // Gemini CLI
	{"hookEventName", "UserPromptSubmit"}:     topPrompt,      // VS Code
	{"agent_action_name", "pre_user_prompt"}:  windsurfPrompt, // Windsurf
}

// members reads a JSON object's members by their exact names (a client's
// JSON.parse matches a name exactly, where encoding/json's struct fields
// would also take another case), the last of a name given twice, as
// JSON.parse keeps it.
func members(b []byte) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	if m == nil {
		return nil, fmt.Errorf("null")
	}
	return m, nil
}

// str reads member name of m as a string; ok is false when it is absent.
func str(m map[string]json.RawMessage, name string) (s string, ok bool, err error) {
	raw, ok := m[name]
	if !ok {
		return "", false, nil
	}
	if err := json.Unmarshal(raw, &s); err != nil || string(raw) == "null" {
		return "", true, fmt.Errorf("has a %s that is not a string", name)
	}
	return s, true, nil
}

// Prompt reads a prompt-submit hook's event: the client's name for it and
// the prompt, or why it can't.
func Prompt(event []byte) (PromptEvent, error) {
	var ev PromptEvent
	m, err := members(event)
	if err != nil {
		return ev, fmt.Errorf("the event is not a JSON object: %v", err)
	}
	var named []string
	var by string
	for _, f := range eventNames {
		n, ok, err := str(m, f)
		if err != nil {
			return PromptEvent{}, fmt.Errorf("the event %v", err)
		}
		if ok {
			named, by, ev.Name = append(named, f), f, n
		}
	}
	switch len(named) {
	case 0:
		return ev, fmt.Errorf("the event has none of %s to name it", strings.Join(eventNames, ", "))
	case 1:
	default:
		return PromptEvent{}, fmt.Errorf("the event is named by both %s, so whose event it is is not clear", strings.Join(named, " and "))
	}
	read, ok := promptReaders[[2]string{by, ev.Name}]
	if !ok {
		known := make([]string, 0, len(promptReaders))
		for k := range promptReaders {
			known = append(known, k[0]+" "+k[1])
		}
		sort.Strings(known)
		return ev, fmt.Errorf("the event %s %q is not a prompt-submit event bouncer reads (%s)", by, ev.Name, strings.Join(known, ", "))
	}
	p, err := read(m)
	if err != nil {
		return ev, fmt.Errorf("the %q event %v", ev.Name, err)
	}
	ev.Prompt = p
	return ev, nil
}

// topPrompt reads the event's "prompt" string.
func topPrompt(m map[string]json.RawMessage) (string, error) {
	p, ok, err := str(m, "prompt")
	if err == nil && !ok {
		err = fmt.Errorf("has no prompt field")
	}
	return p, err
}

// geminiReferences is where Gemini CLI's BeforeAgent prompt stops being
// what the user typed: for an @path in the prompt, Gemini CLI appends the
// file's content after this line (its REFERENCE_CONTENT_START), and the
// event's prompt is that whole request. A file's content is no one's
// typing, so the prompt is cut there; a user who typed the line
// themselves loses what follows it, which can only ask more.
const geminiReferences = "\n--- Content from referenced files ---"

// geminiPrompt reads Gemini CLI's BeforeAgent event: its "prompt", up to
// the content of the files it references.
func geminiPrompt(m map[string]json.RawMessage) (string, error) {
	p, err := topPrompt(m)
	if err != nil {
		return "", err
	}
	if i := strings.Index(p, geminiReferences); i >= 0 {
		p = p[:i]
	}
	return p, nil
}

// windsurfPrompt reads Windsurf's pre_user_prompt event:
// tool_info.user_prompt.
func windsurfPrompt(m map[string]json.RawMessage) (string, error) {
	raw, ok := m["tool_info"]
	if !ok {
		return "", fmt.Errorf("has no tool_info field")
	}
	info, err := members(raw)
	if err != nil {
		return "", fmt.Errorf("has a tool_info that is not an object")
	}
	p, ok, err := str(info, "user_prompt")
	if err == nil && !ok {
		err = fmt.Errorf("has no tool_info.user_prompt field")
	}
	return p, err
}
