package policy

import (
	"bytes"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// FuzzParse: any document is either a valid policy that keeps the package's
// invariants or an *Error pointing inside the document; it never panics.
func FuzzParse(f *testing.F) {
	seeds := []string{
		"",
		"send_email:\n  exfiltrating: true\n  sink_params: [to, cc]\n  trusted_destinations: [a@b.example]\n",
		"write_file:\n  write_params: [path]\n  allowed_path_prefixes: [out, /abs, ../x]\n",
		"set_mode:\n  arg_patterns:\n    mode: read|write\n",
		"d:\n  max_calls: 0\n",
		"sandbox:\n  read_write: [w]\n  read_only: [/usr]\n  connect_tcp: [443]\n",
		"a: &x {max_calls: 1}\nb: *x\n",
		"- 1\n",
		"send_email:\n",
		"a: [\n",
		"a:\n  <<: {max_calls: 1}\n",
		"x:\n  exfiltrating: !!bool \"true\"\n",
		"x:\n  max_calls: !!int \"7\"\n",
		"---\n---\n",
		"x: {arg_patterns: {a: '(?i)A+'}}\n",
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var pol *Policy
		var err error
		done := make(chan struct{})
		go func() {
			defer close(done)
			pol, err = LoadSources(Source{Name: "f.yaml", Dir: "/d", Data: data})
		}()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("LoadSources hangs on %q", data)
		}
		if err != nil {
			var pe *Error
			if !errors.As(err, &pe) {
				t.Fatalf("error %T is not a *Error: %v", err, err)
			}
			lines := bytes.Count(data, []byte("\n")) + 1
			// Line 0 is an error with no single place (yamlstrict names
			// the file alone rather than guess a line).
			if pe.File != "f.yaml" || pe.Line < 0 || pe.Line > lines {
				t.Fatalf("error outside the document (%d lines): %v", lines, err)
			}
			if pol != nil {
				t.Fatal("policy returned with an error")
			}
			return
		}
		for _, name := range pol.Names() {
			tl, _ := pol.Lookup(name)
			if tl.Name != name || name == "" {
				t.Fatalf("entry %q named %q", name, tl.Name)
			}
			if !strings.HasPrefix(tl.Source, "f.yaml:") && !strings.HasPrefix(tl.Source, "pack ") {
				t.Fatalf("%s: source %q", name, tl.Source)
			}
			if !tl.Exfiltrating && (len(tl.SinkParams) > 0 || len(tl.TrustedDestinations) > 0) {
				t.Fatalf("%s: sinks without exfiltrating", name)
			}
			if tl.MaxCalls != nil && *tl.MaxCalls < 0 {
				t.Fatalf("%s: negative budget", name)
			}
			if len(tl.AllowedPathPrefixes) > 0 && len(tl.WriteParams) == 0 {
				t.Fatalf("%s: prefixes without write params", name)
			}
			for _, p := range tl.AllowedPathPrefixes {
				if !filepath.IsAbs(p) || filepath.Clean(p) != p {
					t.Fatalf("%s: prefix %q not absolute and clean", name, p)
				}
			}
			for _, ap := range tl.ArgPatterns {
				if ap.Re == nil {
					t.Fatalf("%s: pattern %q not compiled", name, ap.Pattern)
				}
			}
		}
		if pol.Sandbox != nil {
			for _, port := range pol.Sandbox.ConnectTCP {
				if port < 1 || port > 65535 {
					t.Fatalf("port %d", port)
				}
			}
		}
	})
}
