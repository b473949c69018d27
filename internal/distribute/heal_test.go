package distribute

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// run and doctor tell the user to pull again when installed.json no
// longer matches the signed set. Pulling that same set must then install
// it again, not answer "up to date" over the edited record and leave run
// refusing it for good.
func TestInstallHealsAnEditedRecord(t *testing.T) {
	k := newKey(t)
	a := artifact(t, k, "one", 2, baseYAML, "a.yaml", "b.yaml")
	for name, edit := range map[string][2]string{
		"version":    {`"version": "2026-05-01T14:00:00Z"`, `"version": "2026-05-01T15:00:00Z"`},
		"repository": {`"repository": "registry.example/team/policy"`, `"repository": "registry.example/team/other"`},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if _, err := Install(dir, a, opts(true)); err != nil {
				t.Fatal(err)
			}
			s, err := ReadInstalled(dir)
			if err != nil {
				t.Fatal(err)
			}
			rec := filepath.Join(s.Dir, RecordName)
			data, err := os.ReadFile(rec)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(data, []byte(edit[0])) {
				t.Fatalf("installed.json has no %s:\n%s", edit[0], data)
			}
			os.Chmod(rec, 0o600)
			if err := os.WriteFile(rec, bytes.Replace(data, []byte(edit[0]), []byte(edit[1]), 1), 0o600); err != nil {
				t.Fatal(err)
			}
			if _, err := VerifyInstalled(dir, k.verifier(), Freshness{}); err == nil {
				t.Fatal("an edited installed.json verified")
			}
			res, err := Install(dir, a, opts(true))
			if err != nil {
				t.Fatal(err)
			}
			if res.Unchanged {
				t.Fatal("pulling the set again said up to date over an edited installed.json")
			}
			if _, err := VerifyInstalled(dir, k.verifier(), Freshness{}); err != nil {
				t.Fatalf("after pulling again: %v", err)
			}
		})
	}
}
