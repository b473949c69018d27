package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/bouncer-mcp/bouncer/internal/jsontext"
)

// Bouncer writes every member of a line once, spelled as Entry's tags
// spell it. A line that names a member twice, or spells one so that Go's
// encoding/json takes it for a field (it matches names ignoring case,
// with Unicode's simple folding: the long s for s, the Kelvin sign for k)
// while a case-sensitive reader does not, reads as two lines: `bouncer
// log` and report one verdict, jq, Python or the collector a shipped copy
// went to another. The hash covers its bytes, not a reading of them, so
// such a line is refused where lines are read (Parse) and verified
// (Verify), and never chained past as an ordinary one. args and id are the
// call's, as the engine parsed it (it refuses such keys in a call), and
// are not looked into here.

// fieldNames are the members of an audit line, of its taint, and of each
// of its dests, as Entry, Taint and Dest spell them.
var fieldNames = struct{ entry, taint, dest []string }{
	entry: jsonNames(reflect.TypeOf(Entry{})),
	taint: jsonNames(reflect.TypeOf(Taint{})),
	dest:  jsonNames(reflect.TypeOf(Dest{})),
}

func jsonNames(t reflect.Type) []string {
	var out []string
	for i := 0; i < t.NumField(); i++ {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			out = append(out, name)
		}
	}
	return out
}

// checkKeys refuses a line (a JSON object) whose members, or those of its
// taint or any of its dests, are ambiguous as above.
func checkKeys(line []byte) error {
	members, err := objectMembers(line)
	if err != nil {
		return err
	}
	if err := checkMembers(members, fieldNames.entry, ""); err != nil {
		return err
	}
	for _, m := range members {
		switch m.key {
		case "taint":
			if err := checkNested(m.val, fieldNames.taint, "taint"); err != nil {
				return err
			}
		case "dests":
			var ds []json.RawMessage
			if json.Unmarshal(m.val, &ds) != nil {
				continue // not a list: Parse says so
			}
			for i, d := range ds {
				if err := checkNested(d, fieldNames.dest, fmt.Sprintf("dests[%d]", i)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func checkNested(raw json.RawMessage, names []string, where string) error {
	if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] != '{' {
		return nil // null, or not an object: Parse says so
	}
	members, err := objectMembers(raw)
	if err != nil {
		return err
	}
	return checkMembers(members, names, where)
}

type member struct {
	key string
	val json.RawMessage
}

// objectMembers returns the members of the JSON object raw, in order,
// repeats included.
func objectMembers(raw []byte) ([]member, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, errors.New("not a JSON object")
	}
	var out []member
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		k, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		out = append(out, member{k, v})
	}
	return out, nil
}

func checkMembers(members []member, names []string, where string) error {
	in := ""
	if where != "" {
		in = " in " + where
	}
	for i, m := range members {
		for _, prev := range members[:i] {
			if prev.key == m.key {
				return fmt.Errorf("key %q appears twice%s: readers disagree on which one counts, and bouncer never writes one (the line was forged)", m.key, in)
			}
		}
		for _, n := range names {
			if m.key != n && jsontext.FoldKey(m.key) == jsontext.FoldKey(n) {
				return fmt.Errorf("key %q is not %q%s, but Go's JSON readers (bouncer's own) take it for it, and others don't; bouncer never writes one (the line was forged)", m.key, n, in)
			}
		}
	}
	return nil
}
