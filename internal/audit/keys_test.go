package audit

import (
	"os"
	"strings"
	"testing"
)

// A line that names one field twice, or spells a field so that Go's
// encoding/json takes it for the field (another case, the long s, the
// Kelvin sign) while a case-sensitive reader (jq, Python, a SIEM reading
// the shipped text) does not, reads as two different lines: bouncer log
// and report would say allow where the collector's copy says deny.
// Bouncer never writes one. Chained on after the last line (anyone who can
// write the log can append a chained line), it must not pass verify as
// an ordinary line, and Parse must not pick one of the readings.
func TestAmbiguousKeysAreNotALine(t *testing.T) {
	for _, c := range []struct{ name, members, want string }{
		{"a repeated key", `"verdict":"deny","verdict":"allow"`, `key "verdict" appears twice`},
		{"another case", `"verdict":"deny","Verdict":"allow"`, `"Verdict" is not "verdict"`},
		{"another case alone", `"VERDICT":"allow"`, `"VERDICT" is not "verdict"`},
		{"the long s", `"verdict":"deny","ſerver":"x"`, `"ſerver" is not "server"`},
		{"the Kelvin sign in prev's place", `"verdict":"deny","tas\u212a":"x"`, ``},
		{"in taint", `"verdict":"deny","taint":{"param":"to","destination":"a@x.example","Destination":"b@x.example"}`, `"Destination" is not "destination"`},
		{"in dests", `"verdict":"deny","dests":[{"param":"to","value":"a@x.example","value":"b@x.example"}]`, `key "value" appears twice`},
	} {
		t.Run(c.name, func(t *testing.T) {
			path, ls := writeLog(t, 2)
			last := strings.TrimSuffix(ls[1], "\n")
			forged := `{"ts":"2026-12-01T09:30:00.000000000Z","server":"s","tool":"t","args":{},` + c.members + `,"reason":"","rule":"default","prev":"` + Hash([]byte(last)) + `"}`
			f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteString(forged + "\n")
			f.Close()
			rep, err := VerifyFileReport(path)
			if err != nil {
				t.Fatal(err)
			}
			_, perr := Parse([]byte(forged))
			if c.want == "" { // not a field's name under folding: ignored like any unknown key
				if !rep.OK() || perr != nil {
					t.Fatalf("an unknown key: problems %v, Parse %v", rep.Problems, perr)
				}
				return
			}
			if rep.OK() || rep.Problems[0].Line != 3 || !strings.Contains(rep.Problems[0].Msg, c.want) {
				t.Fatalf("verify: %+v, want line 3: %s", rep.Problems, c.want)
			}
			if perr == nil || !strings.Contains(perr.Error(), c.want) {
				t.Fatalf("Parse: %v, want %s", perr, c.want)
			}
			// A proxy that appends next finds a line past its head that
			// does not chain on, and records the divergence for good.
			if err := openLog(t, path).Append(entry(9)); err != nil {
				t.Fatal(err)
			}
			rep, err = VerifyFileReport(path)
			if err != nil {
				t.Fatal(err)
			}
			if rep.OK() || rep.Anchor == nil || rep.Anchor.Diverged == nil {
				t.Fatalf("after an append: %+v, head %+v", rep.Problems, rep.Anchor)
			}
		})
	}
}
