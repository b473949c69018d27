package engine

import (
	"encoding/json"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/bouncer-mcp/bouncer/internal/policy"
	"github.com/bouncer-mcp/bouncer/internal/taint"
)

// fastmcpModify is modify_email's definition as the Python SDK's FastMCP
// (mcp 1.29.0) lists it for `addLabelIds: list[str] | None = None`,
// recorded from the real server (internal/testsupport/testserver/fastmcp_gmail.py).
const fastmcpModify = `{"name":"modify_email","description":"Change the labels of one message.","inputSchema":{"properties":{"messageId":{"title":"Messageid","type":"string"},"addLabelIds":{"anyOf":[{"items":{"type":"string"},"type":"array"},{"type":"null"}],"default":null,"title":"Addlabelids"},"removeLabelIds":{"anyOf":[{"items":{"type":"string"},"type":"array"},{"type":"null"}],"default":null,"title":"Removelabelids"}},"required":["messageId"],"title":"modify_emailArguments","type":"object"}}`

func mustJSON(t *testing.T, s string) map[string]any {
	t.Helper()
	v, err := decodeStrict([]byte(s))
	if err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("%s is not an object", s)
	}
	return m
}

// props wraps property schemas into an inputSchema.
func props(p string) string { return `{"type":"object","properties":` + p + `}` }

func TestTypeRule(t *testing.T) {
	tree := `{"$defs":{"Tree":{"type":"object","properties":{"name":{"type":"string"},"children":{"type":"array","items":{"$ref":"#/$defs/Tree"}}}}},"type":"object","properties":{"tree":{"$ref":"#/$defs/Tree"}}}`
	action := `{"$defs":{"Action":{"type":"object","properties":{"addLabelIds":{"type":"array","items":{"type":"string"}}}}},"type":"object","properties":{"action":{"$ref":"#/$defs/Action"}}}`
	union := props(`{"labels":{"anyOf":[{"type":"string"},{"type":"array","items":{"type":"string"}}]}}`)
	for _, tc := range []struct {
		name, schema, args string
		fault              string // substring of the reason; "" when the args fit
	}{
		// FastMCP's list[str] | None: a string that spells a list is not
		// one of the declared types, and is refused.
		{"list sent as string", props(`{"ids":{"anyOf":[{"type":"array","items":{"type":"string"}},{"type":"null"}]}}`), `{"ids":"[\"TRASH\"]"}`,
			`'arguments.ids' is a string, but the pinned schema of 'tool' declares array or null there`},
		{"list sent as list", props(`{"ids":{"anyOf":[{"type":"array","items":{"type":"string"}},{"type":"null"}]}}`), `{"ids":["TRASH"]}`, ""},
		{"list sent as null", props(`{"ids":{"anyOf":[{"type":"array","items":{"type":"string"}},{"type":"null"}]}}`), `{"ids":null}`, ""},
		{"list advice", props(`{"ids":{"type":"array"}}`), `{"ids":"[1]"}`, "Send the array itself, not a string that spells it"},
		{"list element", props(`{"ids":{"anyOf":[{"type":"array","items":{"type":"string"}},{"type":"null"}]}}`), `{"ids":["a",5]}`,
			`'arguments.ids[1]' is a number, but the pinned schema of 'tool' declares string there`},

		// pydantic's lax mode reads "5" as 5, "true" and 1 as True.
		{"integer as string", props(`{"n":{"type":"integer"}}`), `{"n":"5"}`, "is a string, but the pinned schema of 'tool' declares integer there"},
		{"integer", props(`{"n":{"type":"integer"}}`), `{"n":5}`, ""},
		{"integer written 5.0", props(`{"n":{"type":"integer"}}`), `{"n":5.0}`, ""},
		{"integer written 1e2", props(`{"n":{"type":"integer"}}`), `{"n":-1E+2}`, ""},
		{"integer written 120e-1", props(`{"n":{"type":"integer"}}`), `{"n":120e-1}`, ""},
		{"fraction for integer", props(`{"n":{"type":"integer"}}`), `{"n":5.5}`, "is the number '5.5', which is not whole, but the pinned schema of 'tool' declares integer there"},
		{"fraction advice", props(`{"n":{"type":"integer"}}`), `{"n":1e-400}`, "Send a whole number"},
		{"number", props(`{"n":{"type":"number"}}`), `{"n":5.5}`, ""},
		{"boolean as string", props(`{"b":{"type":"boolean"}}`), `{"b":"true"}`, "is a string, but the pinned schema of 'tool' declares boolean there"},
		{"boolean as number", props(`{"b":{"type":"boolean"}}`), `{"b":1}`, "is a number, but the pinned schema of 'tool' declares boolean there"},
		{"number for string", props(`{"s":{"type":"string"}}`), `{"s":12345}`, "declares string there"},
		{"object as string", props(`{"o":{"type":"object"}}`), `{"o":"{}"}`, "Send the object itself"},

		// Type lists, nullable, enum and const.
		{"type list", props(`{"s":{"type":["string","null"]}}`), `{"s":null}`, ""},
		{"type list refuses", props(`{"s":{"type":["string","null"]}}`), `{"s":5}`, "declares string or null there"},
		{"nullable", props(`{"s":{"type":"string","nullable":true}}`), `{"s":null}`, ""},
		{"not nullable", props(`{"s":{"type":"string"}}`), `{"s":null}`, "is null, but the pinned schema of 'tool' declares string there"},
		{"enum types", props(`{"e":{"enum":["a","b"]}}`), `{"e":5}`, "declares string there"},
		{"enum fits", props(`{"e":{"enum":["a",1]}}`), `{"e":1.0}`, ""},
		{"const", props(`{"c":{"const":5}}`), `{"c":"5"}`, "declares integer there"},

		// A type Bouncer can't read constrains nothing.
		{"unknown type name", props(`{"f":{"type":"file"}}`), `{"f":5}`, ""},
		{"unknown name in list", props(`{"f":{"type":["string","file"]}}`), `{"f":5}`, ""},
		{"boolean schemas", props(`{"t":true,"f":false}`), `{"t":5,"f":5}`, ""},
		{"undeclared key", props(`{}`), `{"x":"[\"TRASH\"]"}`, ""},
		{"additionalProperties false", `{"type":"object","additionalProperties":false}`, `{"x":5}`, ""},
		{"remote ref", props(`{"x":{"$ref":"https://schemas.example/x.json"}}`), `{"x":5}`, ""},
		{"anchor ref", props(`{"x":{"$ref":"#x"}}`), `{"x":5}`, ""},

		// A place whose type is open, or that takes a string and a list
		// or object, refuses a string that spells JSON: FastMCP parses it.
		{"open place spelled", props(`{"x":{"title":"X"}}`), `{"x":" [\"TRASH\"]"}`, `'arguments.x' is a string that starts with '[', and the pinned schema of 'tool' allows`},
		{"open place plain", props(`{"x":{}}`), `{"x":"TRASH"}`, ""},
		{"open place other types", props(`{"x":{}}`), `{"x":[{"a":5}]}`, ""},
		{"open behind remote ref", props(`{"x":{"$ref":"other.json"}}`), `{"x":"{\"a\":1}"}`, "starts with '{'"},
		{"union spelled", union, `{"labels":"[\"TRASH\"]"}`, "allows string or array there: the server may parse the string as JSON"},
		{"union string", union, `{"labels":"TRASH"}`, ""},
		{"union list", union, `{"labels":["TRASH"]}`, ""},
		{"union list element", union, `{"labels":[5]}`, "'arguments.labels[0]' is a number, but the pinned schema of 'tool' declares string there"},
		{"string place spelled", props(`{"s":{"type":"string"}}`), `{"s":"[1]"}`, ""},
		{"oneOf", props(`{"x":{"oneOf":[{"type":"integer"},{"type":"boolean"}]}}`), `{"x":"1"}`, "declares integer or boolean there"},
		{"allOf", props(`{"x":{"allOf":[{"type":["string","integer"]},{"type":"integer"}]}}`), `{"x":"5"}`, "declares integer there"},

		// Nested places: properties, $ref into $defs, items, tuples,
		// additionalProperties and patternProperties.
		{"ref", action, `{"action":{"addLabelIds":"[\"TRASH\"]"}}`, "'arguments.action.addLabelIds' is a string, but the pinned schema of 'tool' declares array there"},
		{"ref fits", action, `{"action":{"addLabelIds":["TRASH"]}}`, ""},
		{"recursive schema", tree, `{"tree":{"name":"a","children":[{"name":"b","children":[{"name":"c"}]}]}}`, ""},
		{"recursive schema deep", tree, `{"tree":{"name":"a","children":[{"name":"b","children":[{"name":7}]}]}}`, "'arguments.tree.children[0].children[0].name' is a number"},
		{"ref cycle", `{"$defs":{"A":{"$ref":"#/$defs/B"},"B":{"$ref":"#/$defs/A"}},"type":"object","properties":{"x":{"$ref":"#/$defs/A"}}}`, `{"x":1}`, "refers to itself without end"},
		{"escaped pointer", `{"$defs":{"a/b~c d":{"type":"integer"}},"type":"object","properties":{"x":{"$ref":"#/$defs/a~1b~0c%20d"}}}`, `{"x":"1"}`, "declares integer there"},
		{"pointer into list", `{"type":"object","properties":{"x":{"anyOf":[{"type":"integer"}]},"y":{"$ref":"#/properties/x/anyOf/0"}}}`, `{"y":"1"}`, "declares integer there"},
		{"pointer with bad index", `{"type":"object","properties":{"x":{"anyOf":[{"type":"integer"}]},"y":{"$ref":"#/properties/x/anyOf/00"}}}`, `{"y":"1"}`, ""},
		{"additionalProperties", `{"type":"object","additionalProperties":{"type":"string"}}`, `{"x":5}`, "'arguments.x' is a number"},
		{"patternProperties", `{"type":"object","patternProperties":{"^n_":{"type":"integer"}},"additionalProperties":{"type":"string"}}`, `{"n_a":"5"}`, "'arguments.n_a' is a string"},
		{"patternProperties and additional", `{"type":"object","patternProperties":{"^n_":{"type":"integer"}},"additionalProperties":{"type":"string"}}`, `{"n_a":5,"other":5}`, "'arguments.other' is a number"},
		{"unreadable pattern", `{"type":"object","patternProperties":{"(?<=n)_":{"type":"integer"}},"additionalProperties":{"type":"string"}}`, `{"other":5}`, ""},
		{"prefixItems", props(`{"t":{"type":"array","prefixItems":[{"type":"string"},{"type":"integer"}],"items":{"type":"boolean"}}}`), `{"t":["a",1,true]}`, ""},
		{"prefixItems element", props(`{"t":{"type":"array","prefixItems":[{"type":"string"},{"type":"integer"}],"items":{"type":"boolean"}}}`), `{"t":["a","1"]}`, "'arguments.t[1]' is a string"},
		{"prefixItems rest", props(`{"t":{"type":"array","prefixItems":[{"type":"string"},{"type":"integer"}],"items":{"type":"boolean"}}}`), `{"t":["a",1,"x"]}`, "'arguments.t[2]' is a string"},
		{"tuple items", props(`{"t":{"type":"array","items":[{"type":"string"}],"additionalItems":{"type":"integer"}}}`), `{"t":["a",1,"2"]}`, "'arguments.t[2]' is a string"},
		{"root", `{"type":"string"}`, `{}`, "'arguments' is an object, but the pinned schema of 'tool' declares string there"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := checkTypes(mustJSON(t, tc.schema), mustJSON(t, tc.args))
			got := ""
			if f != nil {
				got = f.reason("tool")
			}
			if tc.fault == "" && got != "" || tc.fault != "" && !strings.Contains(got, tc.fault) {
				t.Errorf("schema %s\nargs %s\ngot  %q\nwant %q", tc.schema, tc.args, got, tc.fault)
			}
		})
	}
}

// A schema whose anyOf branches all take the same nested value costs
// branches^depth to follow; the walk stops at its step budget and the
// call is refused.
func TestTypeRuleBranchingBudget(t *testing.T) {
	schema := mustJSON(t, `{"anyOf":[{"type":"array","items":{"$ref":"#"}},{"type":"array","items":{"$ref":"#"}},{"type":"object","properties":{"x":{"$ref":"#"}}}]}`)
	nest := func(leaf any) map[string]any {
		v := leaf
		for range 60 {
			v = []any{v}
		}
		return map[string]any{"x": v}
	}
	start := time.Now()
	f := checkTypes(schema, nest("leaf"))
	if f == nil || !f.tooDeep {
		t.Fatalf("got %+v, want a refusal for a schema too branched to follow", f)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("took %v", d)
	}
	// A value that fits the first branch at each level costs little and
	// is allowed.
	if f := checkTypes(schema, nest([]any{})); f != nil {
		t.Fatalf("fitting value refused: %s", f.reason("tool"))
	}
}

func TestWholeNumber(t *testing.T) {
	for s, want := range map[string]bool{
		"0": true, "-0": true, "0.0": true, "5": true, "5.0": true, "5.50": false, "1e2": true, "1E+2": true,
		"1.5e1": true, "1.55e1": false, "120e-1": true, "125e-1": false, "1e-400": false, "0e-400": true,
		"1e999999999999999999999": true, "1e-999999999999999999999": false, "100e-2": true, "100e-3": false,
		"0.000": true, "10.10e1": true, "123456789012345678901234567890": true,
	} {
		if got := wholeNumber(s); got != want {
			t.Errorf("wholeNumber(%q) = %v, want %v", s, got, want)
		}
	}
}

// FuzzWholeNumber holds wholeNumber to math/big on every JSON number
// literal whose exponent big.Rat can take.
func FuzzWholeNumber(f *testing.F) {
	for _, s := range []string{"0", "5.0", "1e2", "120e-1", "1.5", "-0.0e-0", "1e-400", "10.10e1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !validNumber(s) {
			return
		}
		got := wholeNumber(s)
		_, exp, _ := strings.Cut(strings.ToLower(s), "e")
		if len(strings.TrimLeft(exp, "+-0")) > 4 || len(s) > 200 {
			return
		}
		r, ok := new(big.Rat).SetString(s)
		if !ok {
			t.Fatalf("big.Rat can't read %q", s)
		}
		if got != r.IsInt() {
			t.Fatalf("wholeNumber(%q) = %v, big.Rat says %v", s, got, r.IsInt())
		}
	})
}

// FuzzTypeRule walks arbitrary arguments down arbitrary schemas (a
// server's definition is untrusted too). It must end, must not panic, and
// must give the same answer twice; a refusal names what it refuses.
func FuzzTypeRule(f *testing.F) {
	for _, s := range [][2]string{
		{fastmcpModify, `{"messageId":"1","addLabelIds":"[\"TRASH\"]"}`},
		{`{"name":"t","inputSchema":{"$defs":{"A":{"$ref":"#/$defs/A"}},"properties":{"x":{"$ref":"#/$defs/A"}}}}`, `{"x":1}`},
		{`{"name":"t","inputSchema":{"properties":{"x":{"$ref":"#"}}}}`, `{"x":{"x":{"x":"[1]"}}}`},
		{`{"name":"t","inputSchema":{"patternProperties":{"[":{"type":"integer"}},"additionalProperties":{"type":"integer"}}}`, `{"a":"1"}`},
		{`{"name":"t","inputSchema":{"properties":{"x":{"type":"array","prefixItems":[{"type":"integer"}],"items":[{"type":"string"}],"additionalItems":false}}}}`, `{"x":[1,"a",null]}`},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, tool, args string) {
		_, p, err := parseTool(json.RawMessage(tool))
		if err != nil || p.schema == nil {
			return
		}
		v, err := decodeStrict([]byte(args))
		if err != nil {
			return
		}
		a, ok := v.(map[string]any)
		if !ok {
			return
		}
		f1, f2 := checkTypes(p.schema, a), checkTypes(p.schema, a)
		if (f1 == nil) != (f2 == nil) || f1 != nil && f1.reason("t") != f2.reason("t") {
			t.Fatalf("two answers: %+v and %+v", f1, f2)
		}
		if f1 != nil && !strings.HasPrefix(f1.path, "arguments") {
			t.Fatalf("fault at %q", f1.path)
		}
	})
}

// TestCountsAsCoercedList is issue 23's case against the schema FastMCP
// lists: after the delete budget is used, relabelling to TRASH is refused
// whether addLabelIds is sent as a list (counts_as) or as a string that
// FastMCP parses into one (the type rule).
func TestCountsAsCoercedList(t *testing.T) {
	files, err := policy.LoadSources()
	if err != nil {
		t.Fatal(err)
	}
	pol, err := files.ForServer("gmail")
	if err != nil {
		t.Fatal(err)
	}
	e := New(pol, taint.NewStore(), Options{})
	del := `{"name":"delete_email","inputSchema":{"properties":{"messageId":{"title":"Messageid","type":"string"}},"required":["messageId"],"type":"object"}}`
	if err := e.Pin([]json.RawMessage{json.RawMessage(fastmcpModify), json.RawMessage(del)}); err != nil {
		t.Fatal(err)
	}
	check(t, e.Decide(call("delete_email", `{"messageId":"1"}`)), want{Allow, RuleDefault, ""})
	check(t, e.Decide(call("delete_email", `{"messageId":"2"}`)), want{Allow, RuleDefault, ""})
	check(t, e.Decide(call("modify_email", `{"messageId":"3","addLabelIds":"[\"TRASH\"]"}`)),
		want{Deny, RuleDefault, `'arguments.addLabelIds' is a string, but the pinned schema of 'modify_email' declares array or null there`})
	check(t, e.Decide(call("modify_email", `{"messageId":"3","addLabelIds":["TRASH"]}`)),
		want{Deny, RuleBudget, "counts as 'delete_email', whose call budget 2 is used up"})
	check(t, e.Decide(call("modify_email", `{"messageId":"4","addLabelIds":["STARRED"],"removeLabelIds":null}`)), want{Allow, RuleDefault, ""})
}
