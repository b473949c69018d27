package main

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"testing"

	"github.com/bouncer-mcp/bouncer/internal/setup"
)

// TestListenBackendsPacks: listen gives a built-in pack to the server it
// was written for only, known by the entry's command as bouncer run knows
// it (policy.Recognize), and none to another stdio server or to a remote.
func TestListenBackendsPacks(t *testing.T) {
	dir, state := t.TempDir(), t.TempDir()
	exe := func(p string) string {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	fs := exe(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "server-filesystem", "dist", "index.js"))
	mail := exe(filepath.Join(dir, "send_email-server"))
	cfg := map[string]any{"mcpServers": map[string]any{
		"fs":     map[string]any{"command": fs, "args": []string{dir}},
		"mail":   map[string]any{"command": mail},
		"remote": map[string]any{"type": "http", "url": "http://127.0.0.1:9/mcp"},
	}}
	data, _ := json.Marshal(cfg)
	file := filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	dec, err := setup.Load(setup.Config{Sources: setup.Sources{StateDir: state}, WorkDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	backends, packs, err := listenBackends(file, "off", dec, state, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(backends) != 3 {
		t.Fatalf("%d backends, want 3", len(backends))
	}
	if want := map[string]string{"fs": "filesystem"}; !maps.Equal(packs, want) {
		t.Fatalf("packs = %v, want %v", packs, want)
	}
	// The judge's engine looks tools up in that view: the filesystem
	// pack's write_file entry for fs, none for mail.
	for server, want := range map[string]bool{"fs": true, "mail": false} {
		eng, err := dec.Engine(server, packs[server])
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := eng.Policy().Lookup("write_file"); ok != want {
			t.Errorf("server %s: write_file has an entry: %v, want %v", server, ok, want)
		}
	}
}
