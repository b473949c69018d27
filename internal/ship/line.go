package ship

import (
	"encoding/json"
	"time"
)

// fields are what a record's attributes carry of a line. A line that is not
// a JSON object (a write cut short, then ended by the next append) has none
// of them and is shipped all the same: its bytes are the evidence.
type fields struct {
	TS      string `json:"ts"`
	Server  string `json:"server"`
	Tool    string `json:"tool"`
	Verdict string `json:"verdict"`
	Rule    string `json:"rule"`

	ok   bool      // the line is a JSON object
	time time.Time // TS parsed; zero when absent or malformed
}

// parseFields reads the fields a destination labels a line with. It is
// lenient on purpose: a line of a newer Bouncer with more fields, or an
// older one with fewer, is still labelled with what it has.
func parseFields(text []byte) fields {
	var f fields
	if json.Unmarshal(text, &f) != nil {
		return fields{}
	}
	f.ok = true
	if t, err := time.Parse(time.RFC3339Nano, f.TS); err == nil {
		f.time = t.UTC()
	}
	return f
}
