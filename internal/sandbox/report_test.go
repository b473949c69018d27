package sandbox

import (
	"strings"
	"testing"
)

// The lines an operator reads must say what was skipped and why.
func TestReportAndPlanText(t *testing.T) {
	full := Capabilities{LandlockABI: 7, Seccomp: true}
	old := Capabilities{LandlockABI: 3, Seccomp: true}
	none := Capabilities{LandlockWhy: "this kernel has no Landlock", SeccompWhy: "seccomp unavailable: ENOSYS"}
	cases := []struct {
		name    string
		got     func() (string, error)
		want    string
		wantErr string
	}{
		{"auto full", func() (string, error) { return full.Plan(Auto) }, "landlock ABI 7 (fs+tcp+scope), seccomp allowlist", ""},
		{"auto old", func() (string, error) { return old.Plan(Auto) }, "landlock ABI 3 (fs), seccomp allowlist", ""},
		{"strict old", func() (string, error) { return old.Plan(Strict) }, "", "Landlock ABI 3 is too old"},
		{"auto none", func() (string, error) { return none.Plan(Auto) }, "nothing; skipped landlock: this kernel has no Landlock; seccomp: seccomp unavailable: ENOSYS", ""},
		{"strict none", func() (string, error) { return none.Plan(Strict) }, "", "--sandbox strict: this kernel has no Landlock"},
		{"off", func() (string, error) { return none.Plan(Off) }, "nothing (--sandbox off)", ""},
		{"report full", func() (string, error) { return Report{Mode: Strict, LandlockABI: 7, Seccomp: true}.String(), nil }, "landlock ABI 7 (fs+tcp+scope), seccomp allowlist", ""},
		{"report skipped", func() (string, error) {
			return Report{Mode: Auto, Skipped: []string{"landlock (x)", "seccomp (y)"}}.String(), nil
		}, "NOTHING applied; skipped landlock (x); seccomp (y)", ""},
		{"report off", func() (string, error) { return Report{Mode: Off}.String(), nil }, "off (nothing applied)", ""},
		{"launch none", func() (string, error) { return Launch{caps: none}.String(), nil }, "upstream NOT confined", ""},
		{"launch no seccomp", func() (string, error) { return Launch{caps: Capabilities{LandlockABI: 7}}.String(), nil }, "upstream confined (landlock only, NO seccomp", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.got()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || !strings.HasPrefix(got, tc.want) {
				t.Fatalf("got %q (%v), want prefix %q", got, err, tc.want)
			}
		})
	}
	for _, s := range []string{"auto", "strict", "off"} {
		m, err := ParseMode(s)
		if err != nil || m.String() != s {
			t.Errorf("ParseMode(%q) = %v, %v", s, m, err)
		}
	}
	if _, err := ParseMode("Auto"); err == nil {
		t.Error("ParseMode accepted Auto")
	}
}
