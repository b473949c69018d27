package protect

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/bouncer-mcp/bouncer/internal/pathtree"
	"github.com/bouncer-mcp/bouncer/internal/policy"
)

// Describe says in one line what the policy pol enforces on a server whose
// tools are those of pack ("" for a server no pack was written for): which
// sending tools are gated and by what, which writing tools are confined and
// where, which are not, and the budgets. relTo shortens policy file names
// in the line.
func Describe(pol *policy.Policy, pack, relTo string) string {
	if pack == "" {
		// Its tools are not known before it runs: what holds for any of
		// them is the fallback (docs/policy.md), whose rules are the
		// policy package's.
		return fmt.Sprintf("no pack; by the fallback: destination-shaped arguments and tools named for sending gated, tools named for deleting capped at %d calls per session, writes not confined", policy.FallbackDeleteBudget)
	}
	// The policy as it applies to that server: the pack's entries under
	// the user's, as its proxy looks them up.
	pol, err := pol.ForServer(pack)
	if err != nil {
		return err.Error()
	}
	var tools []string
	for _, p := range policy.Packs() {
		if p.Name == pack {
			tools = p.Tools
		}
	}
	sendsBy := map[string][]string{}
	confined := map[string][]string{}
	var unconfined, refused, budgets []string
	for _, name := range tools {
		t, ok := pol.Lookup(name)
		if !ok {
			continue
		}
		if t.Exfiltrating {
			src := sourceName(t.Source, relTo)
			sendsBy[src] = append(sendsBy[src], name)
		}
		if len(t.WriteParams) > 0 && t.MaxCalls != nil && *t.MaxCalls == 0 {
			refused = append(refused, name)
			continue
		}
		if len(t.WriteParams) > 0 {
			if len(t.AllowedPathPrefixes) > 0 {
				key := showPaths(t.AllowedPathPrefixes)
				confined[key] = append(confined[key], name)
			} else {
				unconfined = append(unconfined, name)
			}
		}
		if t.MaxCalls != nil {
			budgets = append(budgets, fmt.Sprintf("%s %d", name, *t.MaxCalls))
		}
	}
	var parts []string
	if len(refused) > 0 {
		if len(confined) == 0 && len(unconfined) == 0 {
			parts = append(parts, "writes refused")
		} else {
			parts = append(parts, strings.Join(refused, ", ")+" refused")
		}
	}
	for _, where := range slices.Sorted(maps.Keys(confined)) {
		if len(confined) == 1 && len(unconfined) == 0 && len(refused) == 0 {
			parts = append(parts, "writes confined to "+where)
		} else {
			parts = append(parts, fmt.Sprintf("%s writes confined to %s", strings.Join(confined[where], ", "), where))
		}
	}
	if len(unconfined) > 0 {
		parts = append(parts, strings.Join(unconfined, ", ")+" writes: not confined")
	}
	if len(sendsBy) == 0 {
		parts = append(parts, "sends: none")
	} else {
		var by []string
		for _, src := range slices.Sorted(maps.Keys(sendsBy)) {
			if strings.HasPrefix(src, "the ") {
				by = append(by, src)
			} else {
				by = append(by, fmt.Sprintf("%s (%s)", src, strings.Join(sendsBy[src], ", ")))
			}
		}
		parts = append(parts, "sends gated by "+strings.Join(by, " and "))
	}
	if len(budgets) > 0 {
		parts = append(parts, "calls per session: "+strings.Join(budgets, ", "))
	}
	return strings.Join(parts, "; ")
}

// sourceName names where an entry came from: "the github pack", or the
// policy file (relative to relTo when below it).
func sourceName(src, relTo string) string {
	if name, ok := strings.CutPrefix(src, "pack "); ok {
		return "the " + name + " pack"
	}
	if i := strings.LastIndexByte(src, ':'); i > 0 {
		src = src[:i]
	}
	if relTo != "" {
		if r, ok := pathtree.Below(src, relTo); ok {
			return r
		}
	}
	return src
}

// showPaths lists paths, siblings together: /p/a, /p/b and /q as
// "/p/{a, b}, /q". A directory listed around Bouncer's own files
// (Around) is then one item, not one per entry.
func showPaths(paths []string) string {
	var out []string
	for i := 0; i < len(paths); {
		dir := filepath.Dir(paths[i])
		j := i + 1
		for j < len(paths) && filepath.Dir(paths[j]) == dir && dir != paths[j] {
			j++
		}
		if j-i < 2 {
			out = append(out, paths[i])
		} else {
			names := make([]string, 0, j-i)
			for _, p := range paths[i:j] {
				names = append(names, filepath.Base(p))
			}
			out = append(out, filepath.Join(dir, "{"+strings.Join(names, ", ")+"}"))
		}
		i = j
	}
	return strings.Join(out, ", ")
}
