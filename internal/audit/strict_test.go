package audit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/bouncer-mcp/bouncer/internal/jsontext"
	"github.com/bouncer-mcp/bouncer/internal/testsupport/need"
)

// strictJSON checks that b is one JSON text by RFC 8259, valid UTF-8
// throughout, with no lone surrogate escapes in its strings (the I-JSON
// rule, RFC 7493; strict readers such as serde_json and Python's encoder
// fail on them). Go's own json.Valid checks neither UTF-8 nor surrogates.
func strictJSON(b []byte) error {
	p := &strictParser{b: b}
	p.ws()
	if err := p.value(0); err != nil {
		return err
	}
	p.ws()
	if p.i != len(b) {
		return p.errorf("content after the value")
	}
	return nil
}

type strictParser struct {
	b []byte
	i int
}

func (p *strictParser) errorf(format string, a ...any) error {
	return fmt.Errorf("offset %d: %s", p.i, fmt.Sprintf(format, a...))
}

func (p *strictParser) ws() {
	for p.i < len(p.b) && strings.IndexByte(" \t\r\n", p.b[p.i]) >= 0 {
		p.i++
	}
}

func (p *strictParser) eat(c byte) bool {
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *strictParser) value(depth int) error {
	if depth > 20000 {
		return p.errorf("too deep")
	}
	if p.i >= len(p.b) {
		return p.errorf("unexpected end")
	}
	switch c := p.b[p.i]; {
	case c == '{':
		p.i++
		p.ws()
		if p.eat('}') {
			return nil
		}
		for {
			p.ws()
			if err := p.string(); err != nil {
				return err
			}
			p.ws()
			if !p.eat(':') {
				return p.errorf("no colon")
			}
			p.ws()
			if err := p.value(depth + 1); err != nil {
				return err
			}
			p.ws()
			if p.eat('}') {
				return nil
			}
			if !p.eat(',') {
				return p.errorf("no comma in object")
			}
		}
	case c == '[':
		p.i++
		p.ws()
		if p.eat(']') {
			return nil
		}
		for {
			p.ws()
			if err := p.value(depth + 1); err != nil {
				return err
			}
			p.ws()
			if p.eat(']') {
				return nil
			}
			if !p.eat(',') {
				return p.errorf("no comma in array")
			}
		}
	case c == '"':
		return p.string()
	case c == '-' || ('0' <= c && c <= '9'):
		return p.number()
	}
	for _, lit := range []string{"true", "false", "null"} {
		if bytes.HasPrefix(p.b[p.i:], []byte(lit)) {
			p.i += len(lit)
			return nil
		}
	}
	return p.errorf("unexpected %q", p.b[p.i])
}

func (p *strictParser) digits() bool {
	start := p.i
	for p.i < len(p.b) && '0' <= p.b[p.i] && p.b[p.i] <= '9' {
		p.i++
	}
	return p.i > start
}

func (p *strictParser) number() error {
	p.eat('-')
	if !p.eat('0') && !p.digits() {
		return p.errorf("bad number")
	}
	if p.eat('.') && !p.digits() {
		return p.errorf("bad fraction")
	}
	if p.eat('e') || p.eat('E') {
		if !p.eat('+') {
			p.eat('-')
		}
		if !p.digits() {
			return p.errorf("bad exponent")
		}
	}
	return nil
}

func (p *strictParser) hex4() (rune, error) {
	if p.i+4 > len(p.b) {
		return 0, p.errorf("short \\u escape")
	}
	r, ok := jsontext.Hex4(p.b[p.i:])
	if !ok {
		return 0, p.errorf("bad \\u escape")
	}
	p.i += 4
	return r, nil
}

func (p *strictParser) string() error {
	if !p.eat('"') {
		return p.errorf("not a string")
	}
	for {
		if p.i >= len(p.b) {
			return p.errorf("unterminated string")
		}
		c := p.b[p.i]
		switch {
		case c == '"':
			p.i++
			return nil
		case c < 0x20:
			return p.errorf("raw control character %#x in a string", c)
		case c == '\\':
			p.i++
			if p.i >= len(p.b) {
				return p.errorf("unterminated escape")
			}
			e := p.b[p.i]
			p.i++
			if strings.IndexByte(`"\/bfnrt`, e) >= 0 {
				continue
			}
			if e != 'u' {
				return p.errorf("bad escape \\%c", e)
			}
			r, err := p.hex4()
			if err != nil {
				return err
			}
			if !utf16.IsSurrogate(r) {
				continue
			}
			if r >= 0xdc00 {
				return p.errorf("lone low surrogate \\u%04x", r)
			}
			if !bytes.HasPrefix(p.b[p.i:], []byte(`\u`)) {
				return p.errorf("lone high surrogate \\u%04x", r)
			}
			p.i += 2
			r2, err := p.hex4()
			if err != nil {
				return err
			}
			if r2 < 0xdc00 || r2 > 0xdfff {
				return p.errorf("high surrogate \\u%04x followed by \\u%04x", r, r2)
			}
		case c < utf8.RuneSelf:
			p.i++
		default:
			r, size := utf8.DecodeRune(p.b[p.i:])
			if r == utf8.RuneError && size == 1 {
				return p.errorf("invalid UTF-8 byte %#x", c)
			}
			p.i += size
		}
	}
}

// The checker itself must reject what the finding is about, or the tests
// below prove nothing.
func TestStrictJSONChecker(t *testing.T) {
	for _, bad := range []string{`"\ud800"`, `"\udc00x"`, `"\ud800\u0041"`, `"\uDBFF"`, "\"\xff\"", "\"\xed\xa0\x80\"",
		"\"a\nb\"", `{"a":1,}`, `[1 2]`, `01`, `1.`, `{"a"}`, `"\x"`, `nul`, `{} {}`} {
		if strictJSON([]byte(bad)) == nil {
			t.Errorf("strictJSON accepted %q", bad)
		}
	}
	for _, good := range []string{`"\ud83d\ude00"`, `"\\ud800"`, `{"a":[1,-0.5e+3,true,false,null,"\u00e9"]}`, `"é\u2028"`, ` {} `} {
		if err := strictJSON([]byte(good)); err != nil {
			t.Errorf("strictJSON rejected %q: %v", good, err)
		}
	}
}

// toValid replaces each byte that isn't part of valid UTF-8 with U+FFFD,
// as encoding/json does.
func toValid(b []byte) string {
	var s strings.Builder
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		s.WriteRune(r) // RuneError for a bad byte is U+FFFD
		b = b[size:]
	}
	return s.String()
}

// checkLine asserts what every line must be, and that its args mean what
// was sent: the same value as Go's decoding of valid args, or the text of
// invalid ones.
func checkLine(t *testing.T, e Entry, line []byte) Entry {
	t.Helper()
	if !utf8.Valid(line) {
		t.Fatalf("line is not valid UTF-8: %q", line)
	}
	if bytes.ContainsAny(line, "\n\r") {
		t.Fatalf("line has a line break: %q", line)
	}
	if err := strictJSON(line); err != nil {
		t.Fatalf("line is not strict JSON (%v): %q", err, line)
	}
	for _, sep := range []string{"\u0085", "\u2028", "\u2029"} {
		if strings.Contains(string(line), sep) {
			t.Fatalf("line holds %U raw, a line break to some readers: %q", []rune(sep)[0], line)
		}
	}
	got, err := Parse(line)
	if err != nil {
		t.Fatalf("Parse: %v: %q", err, line)
	}
	if got.Server != toValid([]byte(e.Server)) || got.Tool != toValid([]byte(e.Tool)) || got.Reason != toValid([]byte(e.Reason)) {
		t.Fatalf("strings did not read back: %+v", got)
	}
	switch {
	case len(e.Args) == 0:
		if string(got.Args) != "null" {
			t.Fatalf("nil args written as %s", got.Args)
		}
	case json.Valid(e.Args):
		if got.ArgsForm != e.ArgsForm {
			t.Fatalf("args_form %q for valid args", got.ArgsForm)
		}
		var want, have any
		d := json.NewDecoder(bytes.NewReader(e.Args))
		d.UseNumber()
		if err := d.Decode(&want); err != nil {
			break // valid but too deep for the decoder: nothing to compare
		}
		d = json.NewDecoder(bytes.NewReader(got.Args))
		d.UseNumber()
		if err := d.Decode(&have); err != nil || !reflect.DeepEqual(want, have) {
			t.Fatalf("args %q read back as %q (%v)", e.Args, got.Args, err)
		}
	default:
		var text string
		if got.ArgsForm != ArgsText || json.Unmarshal(got.Args, &text) != nil || text != toValid(e.Args) {
			t.Fatalf("invalid args %q recorded as %s %s", e.Args, got.ArgsForm, got.Args)
		}
	}
	return got
}

func TestMarshalStrict(t *testing.T) {
	for _, tc := range []struct {
		name, args, want string // want: the args as written ("" = checkLine only)
		form             string
	}{
		{"lone high surrogate", `{"a":"\ud800"}`, `{"a":"\ufffd"}`, ""},
		{"lone low surrogate", `{"a":"\udc00x"}`, `{"a":"\ufffdx"}`, ""},
		{"high then not low", `{"a":"\ud800\u0041"}`, `{"a":"\ufffd\u0041"}`, ""},
		{"high then high and low", `{"a":"\uD800\uD83D\uDE00"}`, `{"a":"\ufffd\uD83D\uDE00"}`, ""},
		{"high at the end", `{"a":"x\ud800"}`, `{"a":"x\ufffd"}`, ""},
		{"two lows", `{"a":"\udc00\udc00"}`, `{"a":"\ufffd\ufffd"}`, ""},
		{"surrogate in a key", `{"\ud800":1}`, `{"\ufffd":1}`, ""},
		{"pair kept", `{"a":"\ud83d\ude00"}`, `{"a":"\ud83d\ude00"}`, ""},
		{"escaped backslash", `{"a":"\\ud800"}`, `{"a":"\\ud800"}`, ""},
		{"raw invalid byte", "{\"a\":\"\xff\"}", `{"a":"\ufffd"}`, ""},
		{"raw encoded surrogate", "{\"a\xed\xa0\x80\":1}", `{"a\ufffd\ufffd\ufffd":1}`, ""},
		{"raw line separators", "{\"a\":\"1\u2028 2\u2029 3\u0085\"}", `{"a":"1\u2028 2\u2029 3\u0085"}`, ""},
		{"html kept", `{"a":"<b>&</b>"}`, `{"a":"<b>&</b>"}`, ""},
		{"whitespace compacted", "{ \"a\" : [ 1 , 2 ] }", `{"a":[1,2]}`, ""},
		{"raw newline: not JSON", "{\"a\":\"x\ny\"}", `"{\"a\":\"x\ny\"}"`, ArgsText},
		{"truncated", `{"a":`, `"{\"a\":"`, ArgsText},
		{"not JSON, not UTF-8", "\xff{\"a\":\"\\ud800\"", `"\ufffd{\"a\":\"\\ud800\""`, ArgsText},
		{"two values", `{} {}`, `"{} {}"`, ArgsText},
		{"nil", "", "null", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := entry(1)
			e.Args = json.RawMessage(tc.args)
			e.Server, e.Tool, e.Reason = "mail\xff", "send\xed\xa0\x80", "destination \xc0 seen"
			line, err := Marshal(e)
			if err != nil {
				t.Fatal(err)
			}
			got := checkLine(t, e, line)
			if string(got.Args) != tc.want || got.ArgsForm != tc.form {
				t.Errorf("args written as %s (form %q), want %s (form %q)", got.Args, got.ArgsForm, tc.want, tc.form)
			}
		})
	}
	e := entry(1)
	e.ID = json.RawMessage(`{"a":`)
	if _, err := Marshal(e); err == nil {
		t.Error("Marshal accepted an id that isn't JSON")
	}
	e.ID = json.RawMessage(`"\ud800"`)
	line, err := Marshal(e)
	if err != nil || !strings.Contains(string(line), `"id":"\ufffd"`) {
		t.Errorf("id with a lone surrogate: %s, %v", line, err)
	}
}

// hostileArgs are arguments a client can send that once made lines no
// strict reader could read.
var hostileArgs = []string{
	`{"to":"\ud800@evil.com"}`, `{"to":"\udc00x"}`, `{"to":"\ud800\u0041"}`,
	"{\"to\":\"\xff\"}", "{\"to\":\"a\u2028b\"}", "{\"to\":\"x\ny\"}", "\xfe\xff",
}

// Lines with hostile args, appended to a real log, keep the chain intact and
// read back.
func TestHostileArgsKeepTheLogReadable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l := openLog(t, path)
	var es []Entry
	for i, a := range hostileArgs {
		e := entry(i)
		e.Args = json.RawMessage(a)
		e.Reason = "reason \xff " + a
		es = append(es, e)
		if err := l.Append(e); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := VerifyFile(path); err != nil || n != len(hostileArgs) {
		t.Fatalf("VerifyFile = %d, %v", n, err)
	}
	for i, line := range lines(t, path) {
		checkLine(t, es[i], []byte(strings.TrimSuffix(line, "\n")))
	}
	if _, err := ReadFile(path); err != nil {
		t.Fatal(err)
	}
}

// The finding, with a standard reader in another language: Python reads
// every line and every string in it encodes as UTF-8. Skipped without
// python3; strictJSON covers the same ground in Go.
func TestPythonReadsTheLog(t *testing.T) {
	py := need.Program(t, "python3", "apt-get install python3")
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l := openLog(t, path)
	for i, a := range hostileArgs {
		e := entry(i)
		e.Args = json.RawMessage(a)
		if err := l.Append(e); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	script := `
import json, sys
def walk(v):
    if isinstance(v, str): v.encode("utf-8")  # fails on a lone surrogate
    elif isinstance(v, dict): [walk(k) or walk(x) for k, x in v.items()]
    elif isinstance(v, list): [walk(x) for x in v]
n = 0
with open(sys.argv[1], encoding="utf-8", errors="strict", newline="") as f:
    for line in f.read().splitlines():
        walk(json.loads(line)); n += 1
print(n)
`
	out, err := exec.Command(py, "-c", script, path).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != fmt.Sprint(len(hostileArgs)) {
		t.Fatalf("python: %v\n%s", err, out)
	}
}

func FuzzMarshal(f *testing.F) {
	for _, a := range hostileArgs {
		f.Add("mail", "send_email", []byte(a), "reason", []byte(`1`))
	}
	f.Add("m\xff", "t\xed\xa0\x80", []byte(`{"a":"\uDBFF\uDFFF\ud800"}`), "r\u2028\u0085", []byte(`"\udc00"`))
	f.Add("", "", []byte(nil), "", []byte(nil))
	f.Fuzz(func(t *testing.T, server, tool string, args []byte, reason string, id []byte) {
		e := Entry{TS: time.Date(2026, 12, 2, 14, 0, 0, 0, time.UTC), Server: server, Tool: tool,
			Args: args, Verdict: "deny", Reason: reason, Rule: "sink", Prev: Genesis}
		if len(id) > 0 {
			e.ID = id
		}
		first, err := Marshal(e)
		if err != nil {
			if len(e.ID) > 0 && !json.Valid(e.ID) {
				return
			}
			t.Fatalf("Marshal: %v", err)
		}
		checkLine(t, e, first)
		// A second line chains to the first, and the pair verifies.
		e.Prev = Hash(first)
		second, err := Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		checkLine(t, e, second)
		rep, err := Verify(bytes.NewReader(append(append(append(first, '\n'), second...), '\n')))
		if err != nil || !rep.OK() || rep.Lines != 2 {
			t.Fatalf("the chain does not verify: %v %+v", err, rep)
		}
	})
}
