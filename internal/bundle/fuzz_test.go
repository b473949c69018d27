package bundle

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParseTrust feeds arbitrary bytes to the trust-file parser and loader.
// Whatever the input, it must not panic, and every failure must be an *Error
// that starts with the file name, the form bouncer prints.
func FuzzParseTrust(f *testing.F) {
	for _, s := range []string{
		"require_signed: true\nkeys:\n  - team.pub\n",
		"identities:\n  - issuer: https://token.actions.githubusercontent.com\n    subject_regexp: '^x$'\ntrusted_root: trusted_root.json\n",
		"require_signed: false\n",
		"keys: &a [x]\nidentities: *a\n",
		"{}",
		"- a",
		"require_signed: !!str true\n",
		"keys: [\"\\u0000\"]\n",
		"identities:\n  - {issuer: x, subject: y, subject_regexp: z}\n",
		"---\n---\n",
	} {
		f.Add([]byte(s))
	}
	dir := f.TempDir()
	file := filepath.Join(dir, "trust.yaml")
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := parseTrust(file, data)
		if err == nil {
			_, err = cfg.load(dir)
		}
		if err == nil {
			return
		}
		var te *Error
		if !errors.As(err, &te) {
			t.Fatalf("error of type %T: %v", err, err)
		}
		if !strings.HasPrefix(err.Error(), file) {
			t.Fatalf("error does not name the file: %v", err)
		}
	})
}
