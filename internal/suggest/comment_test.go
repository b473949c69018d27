package suggest

import (
	"errors"
	"strings"
	"testing"

	"github.com/bouncer-mcp/bouncer/internal/audit"
	"github.com/bouncer-mcp/bouncer/internal/policy"
	"github.com/bouncer-mcp/bouncer/internal/yamlstrict"
)

// The comments of a suggestion show what an agent chose as bouncer log
// does: a real U+202E and the text of its escape read apart, and nothing
// hides in or breaks out of a comment line.
func TestCommentsEscaped(t *testing.T) {
	pol, err := policy.LoadSources(policy.Source{Name: "bouncer.yaml", Dir: "/srv", Data: []byte(current)})
	if err != nil {
		t.Fatal(err)
	}
	res := Suggest(pol, []audit.Entry{
		taintDeny(1, "s1", "1", "a\u202eb@evil.example", "tickets"),
		taintDeny(2, "s1", "2", `a\u202eb@evil.example`, "tickets"),
		taintDeny(3, "s1", "3", "c\u3164d@evil.example", "tickets\nsend_email:\n  exfiltrating: false"),
	}, Options{})
	var out strings.Builder
	if err := res.WriteYAML(&out, "2026-11-02"); err != nil {
		t.Fatal(err)
	}
	y := out.String()
	for _, want := range []string{
		`# NOT suggested: a\u202eb@evil.example appeared`,
		`# NOT suggested: a\\u202eb@evil.example appeared`,
		`# NOT suggested: c\u3164d@evil.example appeared in the output of server tickets\x0asend_email:\x0a\x20\x20exfiltrating: false,`,
	} {
		if !strings.Contains(y, want) {
			t.Errorf("suggestion lacks %q:\n%s", want, y)
		}
	}
	next, err := policy.LoadSources(policy.Source{Name: "suggested.yaml", Dir: "/srv", Data: []byte(y)})
	if err != nil {
		t.Fatalf("the suggestion does not load: %v\n%s", err, y)
	}
	if se, ok := next.Lookup("send_email"); ok && !se.Exfiltrating {
		t.Fatalf("a comment broke out of its line:\n%s", y)
	}
}

// A tool's name is the server's choice. One too long for a YAML key would
// make a suggestion that does not load (or loads as something else), so
// the suggestion is refused whole and nothing is written.
func TestUnwritableNameRefused(t *testing.T) {
	pol, err := policy.LoadSources(policy.Source{Name: "bouncer.yaml", Dir: "/srv", Data: []byte(current)})
	if err != nil {
		t.Fatal(err)
	}
	long := "send_" + strings.Repeat("x", 1100)
	res := Suggest(pol, []audit.Entry{
		line(1, "s1", "1", "mail", long, "ask", "sink", `{"to":"carol@partner.example"}`, "to", "carol@partner.example"),
		line(2, "s1", "1", "mail", long, "allow", "approval", `{"to":"carol@partner.example"}`, "to", "carol@partner.example"),
	}, Options{})
	if len(res.Tools) != 1 {
		t.Fatalf("suggested for %d tools, want the one asked about", len(res.Tools))
	}
	var out strings.Builder
	err = res.WriteYAML(&out, "2026-11-02")
	if !errors.Is(err, yamlstrict.ErrLongKey) || out.Len() != 0 {
		t.Fatalf("WriteYAML: %v, and wrote %d bytes; want ErrLongKey and nothing", err, out.Len())
	}
}
