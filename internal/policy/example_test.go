package policy_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/bouncer-mcp/bouncer/internal/policy"
)

// LoadSources reads a policy from bytes (as `bouncer serve` does); the
// built-in packs come first, and For gives the rule a tool's calls meet.
func ExampleLoadSources() {
	pol, err := policy.LoadSources(policy.Source{Name: "bouncer.yaml", Dir: "/srv", Data: []byte(`
send_message:
  exfiltrating: true
  sink_params: [to, cc]
  trusted_destinations: [boss@corp.example]
write_report:
  write_params: [path]
  allowed_path_prefixes: [out]
  max_calls: 3
`)})
	if err != nil {
		fmt.Println(err)
		return
	}
	t := pol.For("send_message", nil)
	fmt.Println(t.Exfiltrating, t.SinkParams, t.TrustedDestinations, t.Source)
	w := pol.For("write_report", nil)
	fmt.Println(w.WriteParams, w.AllowedPathPrefixes, *w.MaxCalls)
	// A tool no entry names gets the fallback, read from its argument names.
	f := pol.For("share_doc", []string{"doc_id", "share_with"})
	fmt.Println(f.Fallback, f.Exfiltrating, f.SinkParams)
	// Output:
	// true [to cc] [boss@corp.example] bouncer.yaml:2
	// [path] [/srv/out] 3
	// true true [share_with]
}

// Load reads policy files; a mistake is a *policy.Error naming the file,
// the line and the key, and no policy is returned.
func ExampleLoad() {
	dir, err := os.MkdirTemp("", "policy-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, "bouncer.yaml")
	if err := os.WriteFile(file, []byte("send_message:\n  exfiltrating: true\n  sink_param: [to]\n"), 0o600); err != nil {
		fmt.Println(err)
		return
	}
	_, err = policy.Load(file)
	var perr *policy.Error
	if errors.As(err, &perr) {
		// Msg goes on to list the keys there are.
		problem, _, _ := strings.Cut(perr.Msg, ";")
		fmt.Printf("%s:%d: %s: %s\n", filepath.Base(perr.File), perr.Line, perr.Key, problem)
	}
	// Output:
	// bouncer.yaml:3: send_message.sink_param: unknown key (did you mean sink_params?)
}
