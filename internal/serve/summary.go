package serve

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/bouncer-mcp/bouncer/internal/audit"
	"github.com/bouncer-mcp/bouncer/internal/statefile"
)

// AuditSummary is audit_summary's answer.
type AuditSummary struct {
	Path   string `json:"path"`
	Exists bool   `json:"exists"`
	// Lines is every line read; Entries the ones that parsed.
	Lines   int `json:"lines"`
	Entries int `json:"entries"`
	// Malformed lists the first lines that did not parse (MalformedCount
	// counts them all). They are reported, not skipped in silence.
	Malformed      []LineProblem  `json:"malformed,omitempty"`
	MalformedCount int            `json:"malformed_count"`
	Verdicts       map[string]int `json:"verdicts"`
	Rules          map[string]int `json:"rules"`
	Tools          map[string]int `json:"tools"`
	Servers        map[string]int `json:"servers"`
	// Recent are the last entries, oldest first.
	Recent []RecentEntry `json:"recent"`
	Chain  ChainState    `json:"chain"`
}

// LineProblem is one bad line.
type LineProblem struct {
	Line    int    `json:"line"`
	Problem string `json:"problem"`
}

// RecentEntry is one audit line as listed. Arguments longer than
// maxArgsBytes are cut and given as a string, so one large mail body can't
// crowd out the rest of the summary.
type RecentEntry struct {
	Line    int    `json:"line"`
	TS      string `json:"ts"`
	Server  string `json:"server"`
	Tool    string `json:"tool"`
	Verdict string `json:"verdict"`
	Reason  string `json:"reason"`
	Rule    string `json:"rule"`
	Code    string `json:"code,omitempty"`
	Args    any    `json:"args,omitempty"`
	// ArgsTruncated is set when Args holds only the first maxArgsBytes.
	ArgsTruncated bool `json:"args_truncated,omitempty"`
}

// ChainState is the hash chain's verification.
type ChainState struct {
	OK bool `json:"ok"`
	// Lines is how many lines the verification read.
	Lines int `json:"lines"`
	// Head is the hash of the last line: record it elsewhere to detect
	// lines cut from the end later.
	Head     string        `json:"head"`
	Problems []LineProblem `json:"problems,omitempty"`
}

const (
	maxArgsBytes   = 1024
	maxProblemsOut = 20
)

// Summarize reads the audit log at path (read-only) and summarises it, with
// the last limit entries. A missing log is an empty summary, not an error:
// a fresh install has none yet.
func Summarize(path string, limit int) (*AuditSummary, error) {
	s := &AuditSummary{
		Path:     path,
		Verdicts: map[string]int{},
		Rules:    map[string]int{},
		Tools:    map[string]int{},
		Servers:  map[string]int{},
		Recent:   []RecentEntry{},
	}
	missing, err := statMissing(path)
	if err != nil {
		return nil, err
	}
	if missing {
		s.Chain = ChainState{OK: true, Head: audit.Genesis}
		return s, nil
	}
	s.Exists = true
	f, err := statefile.Open(path)
	if err != nil {
		return nil, fmt.Errorf("audit %s: %w", path, err)
	}
	defer f.Close()

	// A ring of the last limit entries: one pass, memory bounded by limit.
	ring := make([]RecentEntry, limit)
	n := 0
	err = audit.Scan(f, func(line int, e audit.Entry, perr error) error {
		s.Lines = line
		if perr != nil {
			s.MalformedCount++
			if len(s.Malformed) < maxProblemsOut {
				s.Malformed = append(s.Malformed, LineProblem{Line: line, Problem: unwrapLine(perr)})
			}
			return nil
		}
		s.Entries++
		s.Verdicts[e.Verdict]++
		s.Rules[e.Rule]++
		s.Tools[e.Tool]++
		s.Servers[e.Server]++
		if limit > 0 {
			ring[n%limit] = recent(line, e)
			n++
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("audit %s: %w", path, err)
	}
	if limit > 0 {
		start := 0
		if n > limit {
			start = n % limit
		}
		for i := 0; i < n && i < limit; i++ {
			s.Recent = append(s.Recent, ring[(start+i)%limit])
		}
	}

	rep, err := audit.VerifyFileReport(path)
	if err != nil {
		return nil, err
	}
	s.Chain = ChainState{OK: rep.OK(), Lines: rep.Lines, Head: rep.Head}
	for i, p := range rep.Problems {
		if i == maxProblemsOut {
			break
		}
		s.Chain.Problems = append(s.Chain.Problems, LineProblem{Line: p.Line, Problem: p.Msg})
	}
	return s, nil
}

func recent(line int, e audit.Entry) RecentEntry {
	r := RecentEntry{
		Line:    line,
		TS:      e.TS.UTC().Format(time.RFC3339Nano),
		Server:  e.Server,
		Tool:    e.Tool,
		Verdict: e.Verdict,
		Reason:  e.Reason,
		Rule:    e.Rule,
		Code:    e.Code,
	}
	switch {
	case len(e.Args) == 0:
	case len(e.Args) <= maxArgsBytes && json.Valid(e.Args):
		r.Args = json.RawMessage(e.Args)
	default:
		cut := e.Args
		if len(cut) > maxArgsBytes {
			cut = cut[:maxArgsBytes]
		}
		r.Args = string(cut)
		r.ArgsTruncated = true
	}
	return r
}

// unwrapLine drops the "line N: " prefix a LineError carries, since the
// line number is already its own field.
func unwrapLine(err error) string {
	if le, ok := err.(*audit.LineError); ok {
		return le.Err.Error()
	}
	return err.Error()
}
