package engine

import (
	"fmt"
	"slices"
	"sort"
	"strconv"

	"github.com/bouncer-mcp/bouncer/internal/policy"
)

// checkDeclared refuses arguments that the server would read as something
// other than what Bouncer judges, by the pinned inputSchema: a key that is
// not a name the tool declares but that a Go server would read as one, and
// a value whose JSON type the schema does not allow at its place (a server
// may convert it; see checkTypes). It is the one place the engine holds a
// call to the tool's schema, for run, check and serve alike.
//
// Names: "tO" for "to", "Path" or "pAth" for "path", "argumentſ" for
// "arguments". The policy's rules are keyed by the declared names, so such
// a key would slip past the sink gate and the path check while the server
// acts on it. Declared names are the pinned inputSchema's properties (at
// every depth the schema describes) and the names the policy entry uses.
func checkDeclared(t *policy.Tool, schema map[string]any, props map[string]map[string]any, args map[string]any) (Decision, bool) {
	top := make([]string, 0, len(t.SinkParams)+len(t.WriteParams)+len(t.ArgPatterns))
	top = append(top, t.SinkParams...)
	top = append(top, t.WriteParams...)
	for _, ap := range t.ArgPatterns {
		top = append(top, ap.Arg)
	}
	if msg := aliasIn(args, props, top, "arguments"); msg != "" {
		return Decision{Verdict: Deny, Rule: RuleDefault, Reason: msg}, false
	}
	if f := checkTypes(schema, args); f != nil {
		return Decision{Verdict: Deny, Rule: RuleDefault, Reason: f.reason(t.Name)}, false
	}
	return Decision{}, true
}

// aliasIn checks the keys of one object against the names declared for it
// (extra, plus props, the properties of the schema that describes it) and
// recurses where the schema describes deeper levels. It returns why the
// call is refused, or "".
func aliasIn(obj map[string]any, props map[string]map[string]any, extra []string, path string) string {
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	// aliasKey → declared name, made for the first key that is not
	// declared as it is spelled (most calls have none).
	var declared map[string]string
	for _, k := range keys {
		if _, ok := props[k]; ok || slices.Contains(extra, k) {
			continue
		}
		if declared == nil {
			declared = make(map[string]string, len(extra)+len(props))
			for _, n := range extra {
				declared[aliasKey(n)] = n
			}
			for n := range props {
				declared[aliasKey(n)] = n
			}
		}
		if d, ok := declared[aliasKey(k)]; ok {
			return fmt.Sprintf("%s has the key %s, which is not the declared %s but a Go server may read it as that; send the name exactly as declared",
				path, quote(k), quote(d))
		}
	}
	for _, k := range keys {
		sub, ok := props[k]
		if !ok {
			continue
		}
		switch obj[k].(type) {
		case map[string]any, []any:
		default:
			continue // a scalar has no keys
		}
		if msg := aliasValue(obj[k], sub, joinPath(path, k)); msg != "" {
			return msg
		}
	}
	return ""
}

// aliasValue follows a value down the schema that describes it.
func aliasValue(v any, schema map[string]any, path string) string {
	switch x := v.(type) {
	case map[string]any:
		props := properties(schema)
		if len(props) == 0 {
			return ""
		}
		return aliasIn(x, props, nil, path)
	case []any:
		items := subschemas(schema, "items")
		if len(items) == 0 {
			return ""
		}
		merged := map[string]any{"properties": map[string]any{}}
		for _, it := range items {
			for n, p := range properties(it) {
				merged["properties"].(map[string]any)[n] = p
			}
		}
		for i, el := range x {
			if msg := aliasValue(el, merged, path+"["+strconv.Itoa(i)+"]"); msg != "" {
				return msg
			}
		}
	}
	return ""
}

// properties returns the properties a schema declares, merging those of its
// anyOf, oneOf and allOf branches: a key declared by any branch is a name
// the server may read.
func properties(schema map[string]any) map[string]map[string]any {
	out := map[string]map[string]any{}
	var add func(s map[string]any, depth int)
	add = func(s map[string]any, depth int) {
		if s == nil || depth > 8 {
			return
		}
		if ps, ok := s["properties"].(map[string]any); ok {
			for n, p := range ps {
				ps, _ := p.(map[string]any)
				if _, dup := out[n]; !dup || ps != nil {
					out[n] = ps
				}
			}
		}
		for _, k := range []string{"anyOf", "oneOf", "allOf"} {
			if list, ok := s[k].([]any); ok {
				for _, b := range list {
					bs, _ := b.(map[string]any)
					add(bs, depth+1)
				}
			}
		}
	}
	add(schema, 0)
	return out
}

// subschemas returns the schema(s) under key: one object, or a list of them
// (the older tuple form of items).
func subschemas(schema map[string]any, key string) []map[string]any {
	switch x := schema[key].(type) {
	case map[string]any:
		return []map[string]any{x}
	case []any:
		var out []map[string]any
		for _, el := range x {
			if m, ok := el.(map[string]any); ok {
				out = append(out, m)
			}
		}
		return out
	}
	return nil
}
