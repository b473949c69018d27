package engine

import (
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// The type rule: Bouncer judges an argument as the JSON it was sent as, and
// the server reads it as its pinned inputSchema declares. Where the two
// differ, many servers convert: the Python SDK's FastMCP json.loads a
// string sent for any parameter not annotated plain str (pre_parse_json),
// pydantic's lax mode reads "5" as 5 and "true" or 1 as True, zod's
// z.coerce does the same in TypeScript. The server then acts on a value
// Bouncer never judged: addLabelIds: "[\"TRASH\"]" is a list holding TRASH
// to FastMCP, and one string that is not TRASH to a counts_as pattern.
// Bouncer does not guess which server converts what; it refuses:
//
//   - a value whose JSON type is not one the schema allows at its place
//     (an argument, an object property, an array element, as deep as the
//     schema describes);
//   - a string that spells a JSON array or object (its first non-blank
//     character is [ or {) at a place the schema declares and that may
//     hold an array or object as well as a string, or whose type the
//     schema leaves open: the server may read either, and Bouncer judged
//     the string.
//
// What the schema allows is read from type (a name or a list of names;
// "integer" is a number with no fractional part, so 5.0 is one), nullable,
// enum and const, $ref into the same schema, allOf (every branch), anyOf
// and oneOf (some branch), properties, patternProperties,
// additionalProperties given as a schema, prefixItems, items and
// additionalItems. A part Bouncer can't read constrains no type, which
// leaves the place open: a type name it does not know, a $ref to another
// document or an anchor (the engine does no I/O). A place no schema object
// describes is not checked: a key the schema does not declare, a boolean
// schema, a key beside a patternProperties pattern Go's regexp can't
// compile (additionalProperties is then not applied: Bouncer can't tell
// whether the pattern takes the key).

// kinds is a set of JSON types, as JSON Schema names them, with numbers
// split into whole ones (integer) and the rest.
type kinds uint8

const (
	kindNull kinds = 1 << iota
	kindBoolean
	kindInteger  // a number with no fractional part
	kindFraction // any other number
	kindString
	kindArray
	kindObject

	kindNumber    = kindInteger | kindFraction
	kindContainer = kindArray | kindObject
	kindAll       = kindNull | kindBoolean | kindNumber | kindString | kindContainer
)

// typeNames maps JSON Schema's type names to kinds.
var typeNames = map[string]kinds{
	"null":    kindNull,
	"boolean": kindBoolean,
	"integer": kindInteger,
	"number":  kindNumber,
	"string":  kindString,
	"array":   kindArray,
	"object":  kindObject,
}

// String names the set for a reason: "array or null".
func (k kinds) String() string {
	var names []string
	for _, n := range []struct {
		k    kinds
		name string
	}{{kindString, "string"}, {kindNumber, "number"}, {kindInteger, "integer"}, {kindFraction, "number"},
		{kindBoolean, "boolean"}, {kindArray, "array"}, {kindObject, "object"}, {kindNull, "null"}} {
		if k&n.k == n.k {
			names = append(names, n.name)
			k &^= n.k
		}
	}
	switch len(names) {
	case 0:
		return "no value"
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// kindOf returns the JSON type of a parsed value.
func kindOf(v any) kinds {
	switch x := v.(type) {
	case nil:
		return kindNull
	case bool:
		return kindBoolean
	case json.Number:
		if wholeNumber(string(x)) {
			return kindInteger
		}
		return kindFraction
	case float64:
		if x == math.Trunc(x) && !math.IsInf(x, 0) {
			return kindInteger
		}
		return kindFraction
	case string:
		return kindString
	case []any:
		return kindArray
	case map[string]any:
		return kindObject
	}
	return kindAll
}

// wholeNumber reports whether a JSON number literal has no fractional
// part once its exponent is applied ("5.0", "1e2" and "120e-1" do; "1.5"
// and "1e-400" do not), without building the number: an exponent can be
// larger than any float.
func wholeNumber(s string) bool {
	s = strings.TrimPrefix(s, "-")
	mant, exp, hasExp := strings.Cut(strings.ToLower(s), "e")
	intPart, frac, _ := strings.Cut(mant, ".")
	digits := strings.TrimLeft(intPart+frac, "0")
	if digits == "" {
		return intPart != "" || frac != "" // zero
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
	}
	trimmed := strings.TrimRight(digits, "0")
	// The value is trimmed × 10^shift: whole when shift >= 0.
	shift := int64(len(digits)-len(trimmed)) - int64(len(frac))
	if hasExp {
		neg := strings.HasPrefix(exp, "-")
		exp = strings.TrimLeft(exp, "+-")
		if exp == "" {
			return false
		}
		var e int64
		for _, c := range exp {
			if c < '0' || c > '9' {
				return false
			}
			// Past 1e15 the sign alone decides: no literal has that
			// many digits to make up for it.
			if e < 1e15 {
				e = e*10 + int64(c-'0')
			}
		}
		if neg {
			e = -e
		}
		shift += e
	}
	return shift >= 0
}

// Limits on the schema walk: a schema can refer to itself (a tree's nodes
// are trees), and a $ref or allOf chain that never reaches a value's
// children, or a value nested deep under branching anyOf, would otherwise
// take forever. Past either limit the call is refused.
const (
	maxSchemaHops = 64 // schema steps at one place of the value
	// Schema steps for one call: stepsPerValue for each value in the
	// arguments, and stepsBase more. A schema whose anyOf branches each
	// take the same nested value would cost branches^depth.
	stepsPerValue = 64
	stepsBase     = 4096
)

// typeFault is why an argument does not fit its schema.
type typeFault struct {
	path string
	v    any
	want kinds
	// spelled: a string spelling JSON where an array or object may go.
	spelled bool
	// tooDeep: the schema could not be followed to the end.
	tooDeep bool
}

// reason words the fault for a Decision.
func (f *typeFault) reason(tool string) string {
	switch {
	case f.tooDeep:
		return fmt.Sprintf("the pinned schema of %s refers to itself without end, or is too deep or too branched to follow for these arguments, at %s, so Bouncer can't tell what the server reads there",
			quote(tool), quote(f.path))
	case f.spelled:
		s, _ := f.v.(string)
		return fmt.Sprintf("%s is a string that starts with %s, and the pinned schema of %s allows %s there: the server may parse the string as JSON and act on a value Bouncer did not judge. Send the %s itself, not text that spells it",
			quote(f.path), quote(strings.TrimLeft(s, " \t\r\n")[:1]), quote(tool), f.want, f.want&kindContainer)
	}
	sent := kindOf(f.v)
	advice := "a value of type " + f.want.String()
	if sent == kindString && f.want&kindContainer != 0 {
		advice = "the " + (f.want & kindContainer).String() + " itself, not a string that spells it"
	} else if sent == kindFraction && f.want&kindInteger != 0 {
		advice = "a whole number"
	}
	return fmt.Sprintf("%s is %s, but the pinned schema of %s declares %s there: a server may convert the value (FastMCP parses a string as JSON, pydantic reads \"5\" as 5 and 1 as true) and act on one Bouncer did not judge. Send %s",
		quote(f.path), describeKind(f.v, sent), quote(tool), f.want, advice)
}

func describeKind(v any, k kinds) string {
	switch k {
	case kindNull:
		return "null"
	case kindBoolean:
		return "a boolean"
	case kindInteger:
		return "a number"
	case kindFraction:
		n, _ := scalarString(v)
		return "the number " + quote(n) + ", which is not whole"
	case kindString:
		return "a string"
	case kindArray:
		return "an array"
	}
	return "an object"
}

// schemaCheck walks one call's arguments down the tool's schema.
type schemaCheck struct {
	root     map[string]any
	steps    int
	maxSteps int
}

// checkTypes returns why a call's arguments don't fit the types the pinned
// schema declares, or nil. A nil schema (nothing pinned: bouncer check
// without --tools) constrains nothing.
func checkTypes(schema map[string]any, args map[string]any) *typeFault {
	if schema == nil {
		return nil
	}
	c := &schemaCheck{root: schema, maxSteps: stepsBase + stepsPerValue*countValues(args)}
	return c.value(args, schema, "arguments", 0)
}

// countValues counts the values in a parsed value, itself included.
func countValues(v any) int {
	n := 1
	switch x := v.(type) {
	case map[string]any:
		for _, el := range x {
			n += countValues(el)
		}
	case []any:
		for _, el := range x {
			n += countValues(el)
		}
	}
	return n
}

// place checks a value at a place a schema describes (an argument, a
// property, an element): the value itself, and first whether it is a
// string the server may read as JSON.
func (c *schemaCheck) place(v any, node any, path string) *typeFault {
	s, ok := node.(map[string]any)
	if !ok {
		return nil
	}
	if str, ok := v.(string); ok && spellsContainer(str) {
		if k := c.allowed(s, 0); k&kindString != 0 && k&kindContainer != 0 {
			return &typeFault{path: path, v: v, want: k, spelled: true}
		}
	}
	return c.value(v, s, path, 0)
}

// spellsContainer reports whether a string would parse as a JSON array or
// object, or fail trying: its first character after JSON's blanks is [ or
// {. Python's json.loads reads more than JSON (NaN, duplicate keys), so
// Bouncer does not try to parse it.
func spellsContainer(s string) bool {
	s = strings.TrimLeft(s, " \t\r\n")
	return s != "" && (s[0] == '[' || s[0] == '{')
}

// value checks v against one schema node. hops counts the schema steps
// taken at this place of the value, so a schema that refers to itself
// ends.
func (c *schemaCheck) value(v any, node any, path string, hops int) *typeFault {
	c.steps++
	if hops > maxSchemaHops || c.steps > c.maxSteps {
		return &typeFault{path: path, tooDeep: true}
	}
	s, ok := node.(map[string]any)
	if !ok {
		return nil // a boolean schema, or not a schema: nothing to read
	}
	k := kindOf(v)
	if want, ok := declaredKinds(s); ok && want&k == 0 {
		return &typeFault{path: path, v: v, want: want}
	}
	if ref, ok := s["$ref"].(string); ok {
		if target, ok := c.resolve(ref); ok {
			if f := c.value(v, target, path, hops+1); f != nil {
				return f
			}
		}
	}
	for _, b := range schemaList(s, "allOf") {
		if f := c.value(v, b, path, hops+1); f != nil {
			return f
		}
	}
	for _, key := range []string{"anyOf", "oneOf"} {
		branches := schemaList(s, key)
		if len(branches) == 0 {
			continue
		}
		var deeper *typeFault
		fits := false
		for _, b := range branches {
			f := c.value(v, b, path, hops+1)
			if f == nil {
				fits = true
				break
			}
			if f.tooDeep {
				return f
			}
			if deeper == nil && f.path != path {
				deeper = f
			}
		}
		if !fits {
			// A branch that takes the value's type but not what is
			// inside it says more than the list of types.
			if deeper != nil {
				return deeper
			}
			return &typeFault{path: path, v: v, want: c.allowed(s, 0)}
		}
	}
	switch x := v.(type) {
	case map[string]any:
		return c.object(x, s, path)
	case []any:
		return c.array(x, s, path)
	}
	return nil
}

// object checks the members of an object against properties,
// patternProperties and additionalProperties.
func (c *schemaCheck) object(obj map[string]any, s map[string]any, path string) *typeFault {
	props, _ := s["properties"].(map[string]any)
	type pattern struct {
		re     *regexp.Regexp
		schema any
	}
	var patterns []pattern
	patternsRead := true
	if pp, ok := s["patternProperties"].(map[string]any); ok {
		srcs := make([]string, 0, len(pp))
		for p := range pp {
			srcs = append(srcs, p)
		}
		sort.Strings(srcs)
		for _, p := range srcs {
			re, err := regexp.Compile(p)
			if err != nil {
				patternsRead = false
				continue
			}
			patterns = append(patterns, pattern{re, pp[p]})
		}
	}
	additional, _ := s["additionalProperties"].(map[string]any)
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		p := joinPath(path, k)
		if sub, ok := props[k]; ok {
			if f := c.place(obj[k], sub, p); f != nil {
				return f
			}
			continue
		}
		matched := false
		for _, pt := range patterns {
			if pt.re.MatchString(k) {
				matched = true
				if f := c.place(obj[k], pt.schema, p); f != nil {
					return f
				}
			}
		}
		if !matched && patternsRead && additional != nil {
			if f := c.place(obj[k], additional, p); f != nil {
				return f
			}
		}
	}
	return nil
}

// array checks the elements of an array against prefixItems and items
// (2020-12), or items as a list and additionalItems (earlier drafts).
func (c *schemaCheck) array(list []any, s map[string]any, path string) *typeFault {
	prefix := schemaList(s, "prefixItems")
	var rest any = s["items"]
	if tuple, ok := s["items"].([]any); ok {
		prefix, rest = tuple, s["additionalItems"]
	}
	for i, el := range list {
		sub := rest
		if i < len(prefix) {
			sub = prefix[i]
		}
		if f := c.place(el, sub, path+"["+strconv.Itoa(i)+"]"); f != nil {
			return f
		}
	}
	return nil
}

// allowed returns the types a schema node lets a value have at its own
// level: its declared types, narrowed by every allOf branch and a
// resolvable $ref, and by the union of its anyOf and oneOf branches.
func (c *schemaCheck) allowed(node any, hops int) kinds {
	s, ok := node.(map[string]any)
	if !ok || hops > maxSchemaHops {
		return kindAll
	}
	c.steps++
	if c.steps > c.maxSteps {
		return kindAll // value() refuses the call when it gets here
	}
	k := kindAll
	if want, ok := declaredKinds(s); ok {
		k &= want
	}
	if ref, ok := s["$ref"].(string); ok {
		if target, ok := c.resolve(ref); ok {
			k &= c.allowed(target, hops+1)
		}
	}
	for _, b := range schemaList(s, "allOf") {
		k &= c.allowed(b, hops+1)
	}
	for _, key := range []string{"anyOf", "oneOf"} {
		if branches := schemaList(s, key); len(branches) > 0 {
			var u kinds
			for _, b := range branches {
				u |= c.allowed(b, hops+1)
			}
			k &= u
		}
	}
	return k
}

// declaredKinds reads the types one schema node declares itself, from
// type, nullable, enum and const. ok is false when it declares none it
// can read.
func declaredKinds(s map[string]any) (kinds, bool) {
	k, typed := kindAll, false
	switch t := s["type"].(type) {
	case string:
		if tk, known := typeNames[t]; known {
			k, typed = tk, true
		}
	case []any:
		var u kinds
		known := len(t) > 0
		for _, el := range t {
			name, _ := el.(string)
			tk, ok := typeNames[name]
			if !ok {
				known = false // a name Bouncer can't read: no constraint
				break
			}
			u |= tk
		}
		if known {
			k, typed = u, true
		}
	}
	if typed && s["nullable"] == true {
		k |= kindNull // OpenAPI 3.0's spelling of ["T", "null"]
	}
	if enum, ok := s["enum"].([]any); ok {
		var u kinds
		for _, el := range enum {
			u |= kindOf(el)
		}
		k, typed = k&u, true
	}
	if cv, ok := s["const"]; ok {
		k, typed = k&kindOf(cv), true
	}
	return k, typed
}

// schemaList returns the schemas listed under key.
func schemaList(s map[string]any, key string) []any {
	l, _ := s[key].([]any)
	return l
}

// resolve follows a $ref within the tool's own inputSchema: "#" or a JSON
// pointer fragment ("#/$defs/Label"). A reference to another document, an
// anchor or a pointer that leads nowhere resolves to nothing, and
// constrains nothing: Bouncer does no I/O.
func (c *schemaCheck) resolve(ref string) (any, bool) {
	frag, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return nil, false
	}
	frag, err := url.PathUnescape(frag)
	if err != nil {
		return nil, false
	}
	if frag == "" {
		return c.root, true
	}
	if !strings.HasPrefix(frag, "/") {
		return nil, false // an anchor
	}
	var cur any = c.root
	for _, tok := range strings.Split(frag[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch x := cur.(type) {
		case map[string]any:
			if cur, ok = x[tok]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(x) || strings.Trim(tok, "0123456789") != "" || (len(tok) > 1 && tok[0] == '0') {
				return nil, false
			}
			cur = x[i]
		default:
			return nil, false
		}
	}
	return cur, true
}
