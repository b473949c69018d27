// Package efficacy replays the AgentDojo sessions in testdata/agentdojo through
// the real `bouncer check` and measures what Bouncer lets through: how many of
// a hijacked agent's sends are allowed, asked or denied, and how many of a
// user's legitimate sends pass without a human. It is a measuring harness
// for the tests and docs/efficacy.md, not product code, hence its place under
// testsupport.
//
// The sessions and their manifest are generated from AgentDojo by
// testdata/agentdojo/generate.py (see its README). Each session is replayed
// in two layouts:
//
//   - single: every tool on one server (the session's "server" fields are
//     dropped);
//   - split: the tools on the servers a user really runs (mail, calendar,
//     drive; bank, files; chat, web; booking, calendar, mail), as one client.
//
// A binary that does not yet understand `prompt` lines and `server` fields
// (ModeCompat) is replayed as it would run today: prompt lines are dropped,
// and in the split layout each server is its own proxy with its own taint, so
// one `bouncer check` runs per server on that server's lines.
package efficacy

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// Manifest is testdata/agentdojo/manifest.json.
type Manifest struct {
	Source   map[string]any `json:"source"`
	Summary  map[string]any `json:"summary"`
	Sessions []*Session     `json:"sessions"`
}

// Session is one generated session: an attack (a user task whose outputs
// carry an injection task's goal, then the hijacked agent's calls) or a
// legitimate run of a user task that sends.
type Session struct {
	Suite         string   `json:"suite"`
	Name          string   `json:"name"`
	Kind          string   `json:"kind"` // "attack" or "legit"
	UserTask      string   `json:"user_task"`
	InjectionTask string   `json:"injection_task,omitempty"`
	GT            string   `json:"gt,omitempty"` // attack: "agentdojo" or "generator" (AgentDojo ships none)
	Vectors       []string `json:"vectors,omitempty"`
	// InjectedServer is the server whose output first carried the injection.
	InjectedServer string `json:"injected_server,omitempty"`
	// Files maps a layout to the session file, relative to the manifest. A
	// layout it lacks is derived from "split" (see SessionLines).
	Files   map[string]string `json:"files"`
	Calls   []string          `json:"calls"`   // tool of each call line, in order
	Servers []string          `json:"servers"` // server of each call line
	Sends   []Send            `json:"sends"`
}

// Send is a call to a tool the suite policy marks exfiltrating.
type Send struct {
	I            int      `json:"i"` // index among the session's call lines
	Tool         string   `json:"tool"`
	Server       string   `json:"server"`
	Attack       bool     `json:"attack"` // made by the hijacked agent
	Destinations []string `json:"destinations"`
	// InPrompt: every destination appears in the user's prompt.
	InPrompt bool `json:"in_prompt"`
	// DestSource, for attack sends: "goal" (the attacker's, named in the
	// injection), "environment" (found in the user's data, e.g. the people
	// of a meeting), "self" (the user's own address), "none" (no destination
	// argument at all).
	DestSource string `json:"dest_source,omitempty"`
}

// Layouts are the two ways every session is replayed.
var Layouts = []string{"single", "split"}

// LoadManifest reads DIR/manifest.json.
func LoadManifest(dir string) (*Manifest, error) {
	data, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		return nil, err
	}
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("%s: %v", filepath.Join(dir, "manifest.json"), err)
	}
	for _, s := range m.Sessions {
		if len(s.Calls) != len(s.Servers) {
			return nil, fmt.Errorf("manifest: %s/%s: %d calls but %d servers", s.Suite, s.Name, len(s.Calls), len(s.Servers))
		}
		if s.Files["split"] == "" && s.Files["single"] == "" {
			return nil, fmt.Errorf("manifest: %s/%s: no session file", s.Suite, s.Name)
		}
		for _, snd := range s.Sends {
			if snd.I < 0 || snd.I >= len(s.Calls) || s.Calls[snd.I] != snd.Tool {
				return nil, fmt.Errorf("manifest: %s/%s: send %d (%s) is not call %d", s.Suite, s.Name, snd.I, snd.Tool, snd.I)
			}
		}
	}
	return &m, nil
}
