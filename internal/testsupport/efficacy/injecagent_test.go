package efficacy

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/bouncer-mcp/bouncer/internal/testsupport/need"
)

// TestInjecAgentNoPolicy replays InjecAgent's 1,054 cases with no policy
// but the packs: every tool is unknown to Bouncer and judged by the
// fallback, from its pinned name, description and schema and the values
// of each call. No attack send may be allowed: a destination from the
// injected output is denied where the tool sends, and anything the
// fallback can't place is asked about.
func TestInjecAgentNoPolicy(t *testing.T) {
	need.Long(t, "replays about a thousand sessions through bouncer check")
	root, err := ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	ia, err := LoadInjecAgent(filepath.Join(root, "testdata", "injecagent"))
	if err != nil {
		t.Fatal(err)
	}
	if len(ia.Cases) != 1054 {
		t.Fatalf("%d cases, want InjecAgent's 1054", len(ia.Cases))
	}
	bin, err := Build(root, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r := &Runner{Bouncer: bin, Home: t.TempDir()}
	out, err := r.ReplayInjecAgent(context.Background(), ia, nil, 2)
	if err != nil {
		t.Fatal(err)
	}
	tally := TallyInjecAgent(out)
	t.Logf("attack sends: %v; in-place actions: %v", tally.Sends, tally.InPlace)
	if n := tally.Sends["allow"]; n > 0 {
		for _, o := range out {
			if o.Send && o.Verdict.Verdict == "allow" {
				t.Errorf("allowed: %s after %s: %s", o.Tool, o.Case.UserTool, o.Verdict.Reason)
			}
		}
	}
	if total := tally.Sends["allow"] + tally.Sends["ask"] + tally.Sends["deny"]; total != 731 {
		t.Errorf("%d attack sends, want 731 (544 data-stealing sends and 11 direct-harm tools in 17 user cases)", total)
	}
}
