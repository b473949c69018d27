package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"
	"unicode/utf8"
)

// wireEntry is an Entry as encoding/json writes it, in Marshal's order:
// the reference appendLine is held to.
type wireEntry struct {
	TS       string          `json:"ts"`
	Server   string          `json:"server"`
	Tool     string          `json:"tool"`
	Args     json.RawMessage `json:"args"`
	ArgsForm string          `json:"args_form,omitempty"`
	Verdict  string          `json:"verdict"`
	Reason   string          `json:"reason"`
	Rule     string          `json:"rule"`
	Session  string          `json:"session,omitempty"`
	ID       json.RawMessage `json:"id,omitempty"`
	Code     string          `json:"code,omitempty"`
	Taint    *Taint          `json:"taint,omitempty"`
	Dests    []Dest          `json:"dests,omitempty"`
	Policy   string          `json:"policy,omitempty"`
	Enforced *bool           `json:"enforced,omitempty"`
	Prev     string          `json:"prev"`
}

// encodeJSON is json.Marshal without HTML escaping and without the newline.
func encodeJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// marshalEncodingJSON is Marshal as it was written with encoding/json.
func marshalEncodingJSON(e Entry) ([]byte, error) {
	w := wireEntry{
		TS: e.TS.UTC().Format(TimeFormat), Server: e.Server, Tool: e.Tool,
		Args: e.Args, ArgsForm: e.ArgsForm, Verdict: e.Verdict, Reason: e.Reason, Rule: e.Rule,
		Session: e.Session, ID: e.ID, Code: e.Code, Taint: e.Taint, Dests: e.Dests, Policy: e.Policy, Enforced: e.Enforced, Prev: e.Prev,
	}
	if len(w.Args) == 0 {
		w.Args = json.RawMessage("null")
	}
	if len(w.ID) > 0 && !json.Valid(w.ID) {
		return nil, fmt.Errorf("encoding entry for %q: the id is not valid JSON", e.Tool)
	}
	line, err := encodeJSON(w)
	if err != nil && !json.Valid(w.Args) {
		w.Args, err = encodeJSON(string(w.Args))
		w.ArgsForm = ArgsText
		if err == nil {
			line, err = encodeJSON(w)
		}
	}
	if err != nil {
		return nil, err
	}
	line = strictStrings(line)
	if bytes.IndexByte(line, '\n') >= 0 || !utf8.Valid(line) {
		return nil, errors.New("bad line")
	}
	return line, nil
}

func checkSameLine(t *testing.T, e Entry) {
	t.Helper()
	want, wantErr := marshalEncodingJSON(e)
	got, err := appendLine([]byte("kept"), &e)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("appendLine error %v, encoding/json's %v", err, wantErr)
	}
	if !bytes.HasPrefix(got, []byte("kept")) {
		t.Fatalf("appendLine wrote over its buffer: %q", got)
	}
	if err == nil && !bytes.Equal(got[4:], want) {
		t.Fatalf("appendLine wrote\n%s\nencoding/json wrote\n%s", got[4:], want)
	}
}

func TestMarshalEncodingJSON(t *testing.T) {
	yes, no := true, false
	for _, e := range []Entry{
		entry(1),
		{TS: time.Date(2026, 12, 2, 14, 0, 0, 5, time.FixedZone("x", 3600)), Server: "s<&>", Tool: "t\"\\",
			Args: json.RawMessage(` { "a" : [ 1 , "x y" ] } `), ArgsForm: ArgsElided, Verdict: "allow", Reason: "r\n\t\u2028\x01",
			Rule: "sink", Session: "abc", ID: json.RawMessage(` "id\u00e9" `), Code: "C1,C2",
			Taint:  &Taint{Param: "to", Destination: "a@b.c", Source: "mail"},
			Dests:  []Dest{{Param: "to", Value: "a@b.c", Vouch: "allowlist"}, {Param: "cc", Value: "\xff"}},
			Policy: "sha256:00", Enforced: &no, Prev: Genesis},
		{Verdict: "deny", Args: json.RawMessage("{not json"), ArgsForm: ArgsElided, Enforced: &yes, Taint: &Taint{}, Dests: []Dest{}},
		{Verdict: "ask", ID: json.RawMessage(`{"a":`)},
		{Verdict: "ask", Args: json.RawMessage("\xfe\xff"), ID: json.RawMessage(`-12`)},
	} {
		checkSameLine(t, e)
	}
}

// FuzzMarshalEncodingJSON holds appendLine to the encoding/json encoding
// of the same entry.
func FuzzMarshalEncodingJSON(f *testing.F) {
	for _, a := range hostileArgs {
		f.Add("mail", "send_email", []byte(a), "reason", []byte(`1`), "to", "a@b.c", "", true)
	}
	f.Add("m\xff", "t\xed\xa0\x80", []byte(` {"a":"\uDBFF\uDFFF\ud800" } `), "r\u2028\u0085<>&", []byte(`"\udc00"`), "p\x00", "v\u2029", "vouch", false)
	f.Fuzz(func(t *testing.T, server, tool string, args []byte, reason string, id []byte, param, value, vouch string, observed bool) {
		e := Entry{TS: time.Unix(0, int64(len(args))*7919).UTC(), Server: server, Tool: tool,
			Args: args, Verdict: "deny", Reason: reason, Rule: "sink", Session: vouch, ID: id, Code: param,
			Taint: &Taint{Param: param, Destination: value, Source: vouch},
			Dests: []Dest{{Param: param, Value: value, Vouch: vouch}}, Policy: value, Prev: Genesis}
		if observed {
			e.Enforced = new(bool)
		}
		checkSameLine(t, e)
		e.Taint, e.Dests, e.ArgsForm = nil, nil, ArgsElided
		checkSameLine(t, e)
	})
}
