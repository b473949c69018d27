package report

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/bouncer-mcp/bouncer/internal/audit"
)

// policies groups the audit lines of the period by the digest of the
// policy that decided them (the line's "policy" field). The pack describes
// one policy, the one it was given; the lines may have been decided by
// others (another file, another version, another machine), and a reviewer
// must be told which.
type policies struct {
	rows []digestRow
	// mine is the digest of the policy the pack describes; "" when unknown.
	mine string
	// given: --policy files were given (else the built-in packs alone).
	given bool
	// total, other and unknown count lines: all of them, those decided by
	// another policy than mine, and those that carry no digest.
	total, other, unknown int
}

// digestRow is one policy digest and the lines it decided.
type digestRow struct {
	digest      string // "" for lines that carry none
	servers     map[string]bool
	lines       int
	first, last time.Time
}

func policiesOf(in *Input, entries []audit.Entry) *policies {
	p := &policies{mine: in.PolicyDigest, given: len(in.PolicyFiles) > 0}
	by := map[string]*digestRow{}
	for _, e := range entries {
		r := by[e.Policy]
		if r == nil {
			r = &digestRow{digest: e.Policy, servers: map[string]bool{}, first: e.TS}
			by[e.Policy] = r
		}
		r.servers[e.Server] = true
		r.lines++
		if e.TS.Before(r.first) {
			r.first = e.TS
		}
		if e.TS.After(r.last) {
			r.last = e.TS
		}
		p.total++
		switch {
		case e.Policy == "":
			p.unknown++
		case p.mine != "" && e.Policy != p.mine:
			p.other++
		}
	}
	for _, r := range by {
		p.rows = append(p.rows, *r)
	}
	// The policy the pack describes first, then by lines, then by digest;
	// lines with no digest last.
	sort.Slice(p.rows, func(i, j int) bool {
		a, b := p.rows[i], p.rows[j]
		if (a.digest == "") != (b.digest == "") {
			return b.digest == ""
		}
		if (a.digest == p.mine) != (b.digest == p.mine) {
			return a.digest == p.mine
		}
		if a.lines != b.lines {
			return a.lines > b.lines
		}
		return a.digest < b.digest
	})
	return p
}

// headline is the summary's one line about which policy decided the lines.
func (p *policies) headline() string {
	switch {
	case p.mine == "":
		return fmt.Sprintf("the lines name %s; this report was not told the digest of its own.", plural(p.digests(), "policy digest"))
	case p.other == 0 && p.unknown == 0:
		return "every line was decided by the policy this pack describes."
	}
	var parts []string
	if p.other > 0 {
		parts = append(parts, fmt.Sprintf("**%d of %d lines were decided by another policy** than the one this pack describes", p.other, p.total))
	}
	if p.unknown > 0 {
		parts = append(parts, fmt.Sprintf("%d of %d carry no policy digest", p.unknown, p.total))
	}
	return strings.Join(parts, "; ") + " (see \"Which policy decided the lines\")."
}

func serverWord(n int) string {
	if n == 1 {
		return "server"
	}
	return "servers"
}

// otherFor lists the digests of the lines of server that another policy
// than the pack's decided ("" when none did, or the pack's is unknown).
func (p *policies) otherFor(server string) []string {
	if p.mine == "" {
		return nil
	}
	var out []string
	for _, r := range p.rows {
		if r.digest != p.mine && r.digest != "" && r.servers[server] {
			out = append(out, r.digest)
		}
	}
	return out
}

// digests counts the distinct digests the lines carry.
func (p *policies) digests() int {
	n := 0
	for _, r := range p.rows {
		if r.digest != "" {
			n++
		}
	}
	return n
}

// policies writes which policy decided the lines, and what that means for
// the rest of the pack.
func (w *writer) policies(in *Input, p *policies) {
	if in.AuditFile == "" || p.total == 0 {
		return
	}
	w.f("## Which policy decided the lines\n\n")
	w.f("Every audit line carries the digest of the effective policy set that decided it: the built-in packs, each policy file's bytes in load order, and the Bouncer version (`bouncer policy digest --policy FILE...` prints it for a set of files).\n\n")
	w.f("| Policy digest | Servers | Lines | First | Last |\n|---|---|---:|---|---|\n")
	for _, r := range p.rows {
		d := code(r.digest)
		switch {
		case r.digest == "":
			d = "none recorded (a Bouncer from before policy digests)"
		case r.digest == p.mine:
			d += " (the policy this pack describes)"
		}
		var ss []string
		for _, s := range slices.Sorted(maps.Keys(r.servers)) {
			ss = append(ss, serverName(s))
		}
		w.f("| %s | %s | %d | %s | %s |\n", d, strings.Join(ss, ", "), r.lines,
			r.first.UTC().Format("2006-01-02 15:04:05Z"), r.last.UTC().Format("2006-01-02 15:04:05Z"))
	}
	w.f("\n")
	facts := "the verdicts, denials, destinations and vouches are the lines' own, and so is what the \"In force in the log\" column shows"
	switch {
	case p.mine == "":
		w.f("This report was not told the digest of the policy it describes, so it can't say which lines that policy decided; %s.\n\n", facts)
	case p.other == 0 && p.unknown == 0 && p.given:
		w.f("Every line in the period was decided by the policy this pack describes (%s, digest %s).\n\n", policyText(in), code(p.mine))
	case p.other == 0 && p.unknown == 0:
		w.f("No `--policy` was given, and every line in the period was decided by the built-in packs alone (their digest is the lines'), which is what this pack describes.\n\n")
	default:
		var others []string
		servers := map[string]bool{}
		for _, r := range p.rows {
			if r.digest == p.mine {
				continue
			}
			if r.digest != "" {
				others = append(others, code(r.digest))
			}
			for s := range r.servers {
				servers[s] = true
			}
		}
		var ss []string
		for _, s := range slices.Sorted(maps.Keys(servers)) {
			ss = append(ss, serverName(s))
		}
		if p.other > 0 {
			if p.given {
				w.f("**%d of %d lines were decided by another policy than the one given** (%s; %s %s). ", p.other, p.total, strings.Join(others, ", "), serverWord(len(ss)), strings.Join(ss, ", "))
				w.f("This pack describes the policy given (%s, digest %s): the tool controls and the findings are that policy's, and may not be what decided those lines; %s. ", policyText(in), code(p.mine), facts)
			} else {
				w.f("No `--policy` was given, so this pack can only show what the lines say: **%d of %d lines were decided by a policy this report was not given** (%s; %s %s), not by the built-in packs alone (%s). ", p.other, p.total, strings.Join(others, ", "), serverWord(len(ss)), strings.Join(ss, ", "), code(p.mine))
				w.f("The tool controls below are the built-in packs' entries, which may not be what decided those lines; %s. ", facts)
			}
			w.f("To describe the other policy, run `bouncer report --policy FILE...` with its files; the same files under another Bouncer version have another digest.\n\n")
		}
		if p.unknown > 0 {
			w.f("%d of %d lines carry no policy digest (written by a Bouncer from before digests were recorded): which policy decided them can't be told.\n\n", p.unknown, p.total)
		}
	}
}
