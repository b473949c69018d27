package main

import (
	"runtime/debug"
	"testing"
)

func TestVersionLine(t *testing.T) {
	vcs := func(kv ...string) *debug.BuildInfo {
		bi := &debug.BuildInfo{Main: debug.Module{Path: "github.com/bouncer-mcp/bouncer", Version: "(devel)"}}
		for i := 0; i+1 < len(kv); i += 2 {
			bi.Settings = append(bi.Settings, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return bi
	}
	tests := []struct {
		name                  string
		version, commit, date string
		bi                    *debug.BuildInfo
		want                  string
	}{
		{"the release build's flags win", "1.2.0", "abc1234", "2026-01-01T00:00:00Z",
			vcs("vcs.revision", "ffff", "vcs.time", "2025-01-01T00:00:00Z"),
			"bouncer 1.2.0 (commit abc1234, built 2026-01-01T00:00:00Z)"},
		{"go build in a clone", "dev", "none", "unknown",
			vcs("vcs", "git", "vcs.revision", "0123456789abcdef0123456789abcdef01234567", "vcs.time", "2026-12-06T19:00:00Z", "vcs.modified", "false"),
			"bouncer dev (commit 0123456789abcdef0123456789abcdef01234567, committed 2026-12-06T19:00:00Z)"},
		{"a clone's pseudo-version is left to the commit", "dev", "none", "unknown",
			&debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261206190000-0123456789ab+dirty"}, Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123"}}},
			"bouncer dev (commit 0123)"},
		{"a clone with changes", "dev", "none", "unknown",
			vcs("vcs.revision", "0123", "vcs.time", "2026-12-06T19:00:00Z", "vcs.modified", "true"),
			"bouncer dev (commit 0123 with uncommitted changes, committed 2026-12-06T19:00:00Z)"},
		{"-buildvcs=false", "dev", "none", "unknown", vcs("-buildvcs", "false"),
			"bouncer dev (no commit recorded: built with -buildvcs=false, or not in a git clone)"},
		{"no build info", "dev", "none", "unknown", nil,
			"bouncer dev (no commit recorded: built with -buildvcs=false, or not in a git clone)"},
		{"go install of a module version", "dev", "none", "unknown",
			&debug.BuildInfo{Main: debug.Module{Path: "github.com/bouncer-mcp/bouncer", Version: "v1.3.0"}},
			"bouncer v1.3.0 (no commit recorded: built with -buildvcs=false, or not in a git clone)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := versionLine(tc.version, tc.commit, tc.date, tc.bi); got != tc.want {
				t.Errorf("versionLine = %q\nwant           %q", got, tc.want)
			}
		})
	}
}
