package jsonc

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// toAny turns a parsed tree into the values encoding/json would decode
// (numbers as json.Number, the last of duplicate keys winning).
func toAny(n *Node, data []byte) any {
	switch n.Kind {
	case Object:
		m := map[string]any{}
		for _, kv := range n.Members {
			m[kv.Key] = toAny(kv.Val, data)
		}
		return m
	case Array:
		a := []any{}
		for _, e := range n.Elems {
			a = append(a, toAny(e, data))
		}
		return a
	case String:
		return n.Str
	case Number:
		return json.Number(data[n.Start:n.End])
	case True:
		return true
	case False:
		return false
	}
	return nil
}

func stdDecode(t *testing.T, data []byte) any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("encoding/json: %v", err)
	}
	if v == nil {
		return nil
	}
	return v
}

// stripJSONC is a second, independent reading of JSONC: it blanks comments
// and trailing commas, giving strict JSON with the same value. It returns
// nil for an unclosed block comment.
func stripJSONC(data []byte) []byte {
	out := append([]byte(nil), data...)
	for i := 0; i < len(out); i++ {
		switch {
		case out[i] == '"':
			for i++; i < len(out) && out[i] != '"'; i++ {
				if out[i] == '\\' {
					i++
				}
			}
		case out[i] == '/' && i+1 < len(out) && out[i+1] == '/':
			for ; i < len(out) && out[i] != '\n'; i++ {
				out[i] = ' '
			}
		case out[i] == '/' && i+1 < len(out) && out[i+1] == '*':
			end := bytes.Index(out[i+2:], []byte("*/"))
			if end < 0 {
				return nil
			}
			for j := i; j < i+2+end+2; j++ {
				if out[j] != '\n' {
					out[j] = ' '
				}
			}
			i += 2 + end + 1
		}
	}
	// Trailing commas: a comma whose next non-space byte closes.
	for i := 0; i < len(out); i++ {
		if out[i] == '"' {
			for i++; i < len(out) && out[i] != '"'; i++ {
				if out[i] == '\\' {
					i++
				}
			}
			continue
		}
		if out[i] == ',' {
			j := i + 1
			for j < len(out) && isSpace(out[j]) {
				j++
			}
			if j < len(out) && (out[j] == '}' || out[j] == ']') {
				out[i] = ' '
			}
		}
	}
	return out
}

// FuzzJSONC checks the reader against encoding/json: in strict mode it
// accepts exactly what json.Valid accepts, with the same values; in JSONC
// mode it accepts all of that too, and whatever else it accepts is, with
// comments and trailing commas blanked, JSON of the same value.
func FuzzJSONC(f *testing.F) {
	for _, s := range []string{
		`{}`, `[]`, `""`, `0`, `-0.5e+10`, `{"a": [1, 2, {"b": null}]}`, `{"a":1,"a":2}`,
		"{\"a\": 1, // c\n}", "[1, /* two */ 2,]", `"\ud800"`, "\"\xff\"", `"\u00e9\n"`,
		"// only a comment\n{}", "{/**/}", `[01]`, `1.`, `{"a" 1}`, `[1,,2]`, "\xef\xbb\xbf{}",
		`{"k": "v"} x`, `tru`, `"a\qb"`, "\"a\x01\"", `[1e]`, `{"":""}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		valid := json.Valid(data)
		strict, _, err := parse(data, false)
		if (err == nil) != valid {
			t.Fatalf("strict mode accepts=%v, encoding/json accepts=%v: %q (%v)", err == nil, valid, data, err)
		}
		if valid && !reflect.DeepEqual(toAny(strict, data), stdDecode(t, data)) {
			t.Fatalf("strict mode reads another value: %q", data)
		}
		loose, off, err := parse(data, true)
		if valid && err != nil {
			t.Fatalf("JSONC mode refuses JSON: %q: %v at %d", data, err, off)
		}
		if err != nil {
			if off < 0 || off > len(data) {
				t.Fatalf("error offset %d outside the input", off)
			}
			return
		}
		plain := stripJSONC(data)
		if !json.Valid(plain) {
			t.Fatalf("JSONC mode accepts what is not JSON with comments: %q", data)
		}
		if !reflect.DeepEqual(toAny(loose, data), stdDecode(t, plain)) {
			t.Fatalf("JSONC mode reads another value: %q", data)
		}
	})
}

func TestJSONCDepth(t *testing.T) {
	for _, depth := range []int{maxDepth, maxDepth + 1} {
		doc := []byte(strings.Repeat("[", depth) + strings.Repeat("]", depth))
		_, _, err := parse(doc, false)
		if (err == nil) != json.Valid(doc) {
			t.Errorf("depth %d: accepts=%v, encoding/json accepts=%v", depth, err == nil, json.Valid(doc))
		}
	}
}

// get reads a repeated key as the clients do (JSON.parse and VS Code's
// jsonc-parser keep the last; so does encoding/json, checked here), for the
// readers off the path that CheckUnique guards, such as a hook file.
func TestGetReadsTheLastOfARepeatedKey(t *testing.T) {
	data := []byte(`{"hooks": {"a": "first"}, "x": null, "hooks": {"b": "last"}}`)
	root, _, err := parse(data, true)
	if err != nil {
		t.Fatal(err)
	}
	var std map[string]any
	if err := json.Unmarshal(data, &std); err != nil {
		t.Fatal(err)
	}
	got, ok := root.Get("hooks")
	if !ok || !reflect.DeepEqual(toAny(got, data), std["hooks"]) {
		t.Errorf("get(hooks) = %s, the clients read %v", data[got.Start:got.End], std["hooks"])
	}
}

// RemoveMember takes out a member as Append's addMember put it in: with
// its separating comma, and its line when it has one of its own.
func TestRemoveMember(t *testing.T) {
	for _, tt := range []struct{ in, key, want string }{
		{`{"a": 1, "b": 2, "c": 3}`, "b", `{"a": 1, "c": 3}`},
		{`{"a": 1, "b": 2}`, "b", `{"a": 1}`},
		{`{"a": 1, "b": 2}`, "a", `{"b": 2}`},
		{"{\n  \"a\": 1,\n  \"b\": [],\n  \"c\": 3\n}\n", "b", "{\n  \"a\": 1,\n  \"c\": 3\n}\n"},
		{"{\n  \"a\": 1,\n  \"b\": []\n}\n", "b", "{\n  \"a\": 1\n}\n"},
		{"{\n  \"b\": []\n}\n", "b", "{\n}\n"},
		{`{"a": 1}`, "missing", `{"a": 1}`},
	} {
		d, err := ParseDoc("f.json", []byte(tt.in))
		if err != nil {
			t.Fatal(err)
		}
		if err := d.RemoveMember(d.At(), tt.key); err != nil || string(d.Bytes()) != tt.want {
			t.Errorf("%q without %s: %q (%v), want %q", tt.in, tt.key, d.Bytes(), err, tt.want)
		}
	}
	// Inside an object that is not the root: its last member goes as {}.
	d, _ := ParseDoc("f.json", []byte(`{"p": {"deny": []}, "x": 1}`))
	if err := d.RemoveMember(d.At("p"), "deny"); err != nil || string(d.Bytes()) != `{"p": {}, "x": 1}` {
		t.Errorf("nested: %q (%v)", d.Bytes(), err)
	}
}
