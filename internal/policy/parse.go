package policy

import (
	"bytes"
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/bouncer-mcp/bouncer/internal/dest"
	"github.com/bouncer-mcp/bouncer/internal/yamlstrict"
)

// The per-tool keys, in the order the docs list them.
const (
	keyExfiltrating = "exfiltrating"
	keySinkParams   = "sink_params"
	keyTrusted      = "trusted_destinations"
	keyImplicit     = "implicit_destination"
	keySinkKinds    = "sink_kinds"
	keyDirectory    = "directory"
	keyAnchor       = "anchor_records"
	// anchorTextJSON is anchor_records' value that also reads records
	// from text blocks that are wholly JSON.
	anchorTextJSON = "text_json"
	keyWriteParams = "write_params"
	keyPrefixes    = "allowed_path_prefixes"
	keyRelative    = "relative_paths"
	keyArgPatterns = "arg_patterns"
	keyMaxCalls    = "max_calls"
	keyCountsAs    = "counts_as"
	keyTrustedOut  = "trusted_output"
	keyApproval    = "approval"
	// approvalAlways is approval's one value: every call asks a human.
	approvalAlways = "always"
)

var toolKeys = []string{keyExfiltrating, keySinkParams, keyTrusted, keyImplicit, keySinkKinds, keyWriteParams, keyPrefixes, keyRelative, keyArgPatterns, keyMaxCalls, keyCountsAs, keyTrustedOut, keyDirectory, keyAnchor, keyApproval}

// SandboxKey is the reserved top-level key that configures the upstream's
// confinement instead of a tool. A tool literally named "sandbox" can't be
// given an entry; its calls get the fallback.
const SandboxKey = "sandbox"

// SharedSessionKey is the reserved top-level key that takes a server out
// of its client's shared session (`shared_session: false`): its proxy
// keeps its own history, and what its server returns taints nothing for
// the client's other servers.
const SharedSessionKey = "shared_session"

// OwnKey is the reserved top-level key that lists the user's own
// destinations (own_destinations: [me@corp.example]): a record anchors no
// send that goes to them alone.
const OwnKey = "own_destinations"

// OwnFilesKey is the reserved top-level key that says how the upstream is
// kept off Bouncer's own files (own_files: namespace, landlock or
// arguments): the strongest form bouncer run may use for this server. The
// default is namespace; a server that can't run in a user namespace (a
// setuid helper, owner checks on other users' files) is given a weaker
// form here, and the start line says which form holds.
const OwnFilesKey = "own_files"

// OwnFilesForms are the values own_files takes, strongest first.
var OwnFilesForms = []string{"namespace", "landlock", "arguments"}

// Reserved reports whether name is a reserved top-level key of a policy
// file (sandbox, shared_session, own_destinations, own_files): no tool
// entry can be written under it.
func Reserved(name string) bool {
	return name == SandboxKey || name == SharedSessionKey || name == OwnKey || name == OwnFilesKey
}

const (
	keyReadWrite  = "read_write"
	keyReadOnly   = "read_only"
	keyConnectTCP = "connect_tcp"
)

var sandboxKeys = []string{keyReadWrite, keyReadOnly, keyConnectTCP}

type document struct {
	tools   []*Tool // in file order
	sandbox *Confinement
	shared  *bool           // shared_session, if set
	own     map[string]bool // own_destinations, if set
	ownFile *OwnFiles       // own_files, if set
}

// parser carries one document through validation.
type parser struct {
	src   Source
	lines int // lines in the document, to keep reported lines inside it
}

func (p *parser) errf(n *yaml.Node, key, format string, a ...any) *Error {
	line := 1
	if n != nil && n.Line > 0 {
		line = n.Line
	}
	if line > p.lines {
		line = p.lines
	}
	return &Error{File: p.src.Name, Line: line, Key: key, Msg: fmt.Sprintf(format, a...)}
}

func (p *parser) source(n *yaml.Node) string {
	if p.src.pack != "" {
		return "pack " + p.src.pack
	}
	name := p.src.Name
	if p.src.abs != "" {
		name = p.src.abs
	}
	return name + ":" + strconv.Itoa(n.Line)
}

// parse validates one document. Packs may not carry a sandbox key: the
// confinement of a server is the user's choice, not a pack's.
func parse(src Source, isPack bool) (*document, error) {
	p := &parser{src: src, lines: bytes.Count(src.Data, []byte("\n")) + 1}
	return p.document(isPack)
}

func (p *parser) document(isPack bool) (*document, error) {
	// The YAML dialect (one document, no anchors, aliases, merge keys,
	// tags, duplicate or non-string keys) is yamlstrict's, shared with the
	// trust file; what follows is what the keys mean.
	top, err := yamlstrict.Decode(p.src.Name, p.src.Data)
	if err != nil {
		return nil, err
	}
	if isNull(top) {
		return &document{}, nil // an empty file is an empty policy
	}
	if top.Kind != yaml.MappingNode {
		return nil, p.errf(top, "", "the top level must be a mapping of tool name to entry, got %s", yamlstrict.Describe(top))
	}
	doc := &document{}
	for i := 0; i+1 < len(top.Content); i += 2 {
		k, v := top.Content[i], top.Content[i+1]
		name, err := p.keyName(k, "", "tool name")
		if err != nil {
			return nil, err
		}
		if name == SharedSessionKey {
			if isPack {
				return nil, p.errf(k, name, "a pack can't take a server out of its client session")
			}
			b, err := p.boolean(v, name)
			if err != nil {
				return nil, err
			}
			doc.shared = &b
			continue
		}
		if name == OwnKey {
			if isPack {
				return nil, p.errf(k, name, "a pack can't say whose the user's own destinations are")
			}
			if _, err := p.strings(v, name, "a destination"); err != nil {
				return nil, err
			}
			own, err := p.destinations(v, name)
			if err != nil {
				return nil, err
			}
			doc.own = own
			continue
		}
		if name == OwnFilesKey {
			if isPack {
				return nil, p.errf(k, name, "a pack can't say how the server is kept off Bouncer's files")
			}
			if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!str" || !slices.Contains(OwnFilesForms, v.Value) {
				return nil, p.errf(v, name, "must be one of %s, got %s", strings.Join(OwnFilesForms, ", "), yamlstrict.Describe(v))
			}
			doc.ownFile = &OwnFiles{Form: v.Value, Source: p.source(k)}
			continue
		}
		if name == SandboxKey {
			if isPack {
				return nil, p.errf(k, name, "a pack can't set the upstream's confinement")
			}
			c, err := p.sandbox(k, v)
			if err != nil {
				return nil, err
			}
			doc.sandbox = c
			continue
		}
		t, err := p.tool(name, k, v)
		if err != nil {
			return nil, err
		}
		doc.tools = append(doc.tools, t)
	}
	return doc, nil
}

// uriScheme matches "file:///srv" and "C:\\x": neither is a path this
// platform's path checks can place.
var uriScheme = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:`)

func isNull(n *yaml.Node) bool {
	return n == nil || (n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null")
}

// keyName returns a mapping key's string (yamlstrict made sure it is one,
// and that it is not given twice), refusing one that could never match a
// tool or argument name.
func (p *parser) keyName(k *yaml.Node, ctx, what string) (string, error) {
	if strings.TrimSpace(k.Value) == "" {
		return "", p.errf(k, ctx, "%s is empty", what)
	}
	if strings.TrimSpace(k.Value) != k.Value {
		return "", p.errf(k, ctx, "%s %s has leading or trailing spaces, so it would never match", what, strconv.Quote(k.Value))
	}
	return k.Value, nil
}

func (p *parser) tool(name string, k, v *yaml.Node) (*Tool, error) {
	if isNull(v) {
		return nil, p.errf(k, name, "entry is empty; give it at least one key (%s), or remove it", strings.Join(toolKeys, ", "))
	}
	if v.Kind != yaml.MappingNode {
		return nil, p.errf(v, name, "entry must be a mapping of keys (%s), got %s", strings.Join(toolKeys, ", "), yamlstrict.Describe(v))
	}
	if len(v.Content) == 0 {
		return nil, p.errf(v, name, "entry is empty; give it at least one key (%s), or remove it", strings.Join(toolKeys, ", "))
	}
	t := &Tool{Name: name, Source: p.source(k)}
	var sinkKey, trustedKey, prefixKey, relativeKey, implicitKey, kindsKey *yaml.Node
	for i := 0; i+1 < len(v.Content); i += 2 {
		kk, vv := v.Content[i], v.Content[i+1]
		key, err := p.keyName(kk, name, "key")
		if err != nil {
			return nil, err
		}
		full := name + "." + key
		switch key {
		case keyExfiltrating:
			b, err := p.boolean(vv, full)
			if err != nil {
				return nil, err
			}
			t.Exfiltrating = b
		case keySinkParams:
			if t.SinkParams, err = p.strings(vv, full, "an argument name"); err != nil {
				return nil, err
			}
			sinkKey = kk
		case keyTrusted:
			if t.TrustedDestinations, err = p.strings(vv, full, "a destination"); err != nil {
				return nil, err
			}
			if t.trusted, err = p.destinations(vv, full); err != nil {
				return nil, err
			}
			trustedKey = kk
		case keyWriteParams:
			if t.WriteParams, err = p.strings(vv, full, "an argument name"); err != nil {
				return nil, err
			}
		case keyPrefixes:
			raw, err := p.strings(vv, full, "a path prefix")
			if err != nil {
				return nil, err
			}
			if t.AllowedPathPrefixes, err = p.paths(vv, full, raw); err != nil {
				return nil, err
			}
			prefixKey = kk
		case keyRelative:
			if t.RelativePaths, err = p.relative(vv, full); err != nil {
				return nil, err
			}
			relativeKey = kk
		case keyArgPatterns:
			if t.ArgPatterns, err = p.patterns(vv, full); err != nil {
				return nil, err
			}
		case keyMaxCalls:
			n, err := p.count(vv, full)
			if err != nil {
				return nil, err
			}
			t.MaxCalls = &n
		case keySinkKinds:
			if t.SinkKinds, err = p.kinds(vv, full); err != nil {
				return nil, err
			}
			kindsKey = kk
		case keyDirectory:
			if t.Directory, err = p.kind(vv, full); err != nil {
				return nil, err
			}
		case keyAnchor:
			if vv.Kind == yaml.ScalarNode && vv.ShortTag() == "!!str" && vv.Value == anchorTextJSON {
				t.AnchorRecords, t.AnchorText = true, true
				break
			}
			if vv.Kind == yaml.ScalarNode && vv.ShortTag() != "!!bool" {
				return nil, p.errf(vv, full, "must be true, false or %s (records from a text block that is wholly JSON), got %s", anchorTextJSON, yamlstrict.Describe(vv))
			}
			if t.AnchorRecords, err = p.boolean(vv, full); err != nil {
				return nil, err
			}
		case keyTrustedOut:
			b, err := p.boolean(vv, full)
			if err != nil {
				return nil, err
			}
			t.TrustedOutput = b
		case keyImplicit:
			b, err := p.boolean(vv, full)
			if err != nil {
				return nil, err
			}
			t.Implicit = ImplicitNo
			if b {
				t.Implicit = ImplicitYes
			}
			implicitKey = kk
		case keyCountsAs:
			if t.CountsAs, err = p.countsAs(name, vv, full); err != nil {
				return nil, err
			}
		case keyApproval:
			if vv.Kind != yaml.ScalarNode || vv.ShortTag() != "!!str" || vv.Value != approvalAlways {
				return nil, p.errf(vv, full, "must be %s (every call asks a human, bound to its exact arguments), got %s", approvalAlways, yamlstrict.Describe(vv))
			}
			t.AlwaysAsk = true
		default:
			return nil, p.errf(kk, full, "unknown key%s; the keys are %s", suggest(key, toolKeys), strings.Join(toolKeys, ", "))
		}
	}
	if !t.Exfiltrating {
		if sinkKey != nil {
			return nil, p.errf(sinkKey, name+"."+keySinkParams, "set without exfiltrating: true, so nothing would check it; add exfiltrating: true")
		}
		if trustedKey != nil {
			return nil, p.errf(trustedKey, name+"."+keyTrusted, "set without exfiltrating: true, so nothing would check it; add exfiltrating: true")
		}
		if implicitKey != nil {
			return nil, p.errf(implicitKey, name+"."+keyImplicit, "set without exfiltrating: true, so nothing would check it; add exfiltrating: true")
		}
		if kindsKey != nil {
			return nil, p.errf(kindsKey, name+"."+keySinkKinds, "set without exfiltrating: true, so nothing would check it; add exfiltrating: true")
		}
	}
	if kindsKey != nil && len(t.SinkParams) > 0 {
		for arg := range t.SinkKinds {
			if !slices.Contains(t.SinkParams, arg) && !IsDestinationName(arg) {
				return nil, p.errf(kindsKey, name+"."+keySinkKinds+"."+arg, "%s is not one of sink_params (%s), so no destination is ever read from it; add it there", strconv.Quote(arg), strings.Join(t.SinkParams, ", "))
			}
		}
	}
	if prefixKey != nil && len(t.AllowedPathPrefixes) > 0 && len(t.WriteParams) == 0 {
		return nil, p.errf(prefixKey, name+"."+keyPrefixes, "set without write_params, so no argument would be confined; name the path arguments in write_params")
	}
	if relativeKey != nil && len(t.AllowedPathPrefixes) == 0 {
		return nil, p.errf(relativeKey, name+"."+keyRelative, "set without allowed_path_prefixes, so no path is checked; add allowed_path_prefixes")
	}
	return t, nil
}

// relative reads relative_paths: deny, workdir, or a directory written as
// an absolute path or as ./DIR or ../DIR (resolved against the policy
// file's directory, like a prefix). A bare word is refused, so a typo of
// "deny" can't become a directory.
func (p *parser) relative(v *yaml.Node, key string) (RelativePaths, error) {
	const want = "deny, workdir, or a directory (an absolute path, or ./DIR relative to this file)"
	if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!str" {
		return RelativePaths{}, p.errf(v, key, "must be %s, got %s", want, yamlstrict.Describe(v))
	}
	switch s := v.Value; {
	case s == RelativeDenyWord:
		return RelativePaths{Mode: RelativeDeny}, nil
	case s == RelativeWorkDirWord:
		return RelativePaths{Mode: RelativeWorkDir}, nil
	case filepath.IsAbs(s) || s == "." || s == ".." || strings.HasPrefix(s, "./") || strings.HasPrefix(s, "../"):
		if strings.TrimSpace(s) != s || strings.ContainsRune(s, 0) {
			return RelativePaths{}, p.errf(v, key, "%s has leading or trailing spaces or a NUL character", strconv.Quote(s))
		}
		dir, err := p.path(v, key, "", s)
		if err != nil {
			return RelativePaths{}, err
		}
		return RelativePaths{Mode: RelativeDir, Dir: dir}, nil
	default:
		return RelativePaths{}, p.errf(v, key, "must be %s, got %s%s", want, yamlstrict.Describe(v), suggest(s, []string{RelativeDenyWord, RelativeWorkDirWord}))
	}
}

// kindRE is what a kind of directory entry is called: a lowercase word.
var kindRE = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,31}$`)

// kind reads a kind of directory entry (directory: channel).
func (p *parser) kind(v *yaml.Node, key string) (string, error) {
	if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!str" || !kindRE.MatchString(v.Value) {
		return "", p.errf(v, key, "must be a kind of entry, a lowercase word such as channel, got %s", yamlstrict.Describe(v))
	}
	return v.Value, nil
}

// kinds reads sink_kinds: {ARGUMENT: KIND}.
func (p *parser) kinds(v *yaml.Node, key string) (map[string]string, error) {
	if v.Kind != yaml.MappingNode || len(v.Content) == 0 {
		return nil, p.errf(v, key, "must be a mapping of argument name to kind (channel: channel), got %s", yamlstrict.Describe(v))
	}
	out := map[string]string{}
	for i := 0; i+1 < len(v.Content); i += 2 {
		k, kv := v.Content[i], v.Content[i+1]
		arg, err := p.keyName(k, key, "argument name")
		if err != nil {
			return nil, err
		}
		if out[arg], err = p.kind(kv, key+"."+arg); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// boolean accepts only a YAML boolean: "false" in quotes is a string, and
// yes/no are strings in YAML 1.2, so both are refused rather than guessed.
func (p *parser) boolean(v *yaml.Node, key string) (bool, error) {
	if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!bool" {
		return false, p.errf(v, key, "must be true or false, got %s", yamlstrict.Describe(v))
	}
	var b bool
	if err := v.Decode(&b); err != nil {
		return false, p.errf(v, key, "must be true or false, got %s", yamlstrict.Describe(v))
	}
	return b, nil
}

// count accepts a non-negative YAML integer.
func (p *parser) count(v *yaml.Node, key string) (int, error) {
	if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!int" {
		return 0, p.errf(v, key, "must be a whole number of calls (0 forbids the tool), got %s", yamlstrict.Describe(v))
	}
	var n int64
	if err := v.Decode(&n); err != nil || n > math.MaxInt32 {
		return 0, p.errf(v, key, "must be a whole number of calls up to %d, got %s", math.MaxInt32, strconv.Quote(v.Value))
	}
	if n < 0 {
		return 0, p.errf(v, key, "must not be negative (0 forbids the tool), got %d", n)
	}
	return int(n), nil
}

// destinations reads a list already checked by strings as destinations:
// each must have a canonical form (package dest), since an entry that has
// none would never match and only look like a vouch.
func (p *parser) destinations(v *yaml.Node, key string) (map[string]bool, error) {
	out := map[string]bool{}
	for i, item := range v.Content {
		k, err := dest.Parse(item.Value)
		if err != nil {
			return nil, p.errf(item, key, "item %d: %s is not a destination Bouncer can compare exactly: %v", i+1, strconv.Quote(item.Value), err)
		}
		out[k.Key()] = true
	}
	return out, nil
}

// strings accepts a list of non-empty strings. Numbers and booleans are
// refused rather than turned into text: `trusted_destinations: [1]` is more
// likely a mistake than a recipient named "1".
func (p *parser) strings(v *yaml.Node, key, what string) ([]string, error) {
	if v.Kind != yaml.SequenceNode {
		hint := ""
		if v.Kind == yaml.ScalarNode && v.ShortTag() == "!!str" {
			hint = fmt.Sprintf(" (write [%s])", v.Value)
		}
		return nil, p.errf(v, key, "must be a list, got %s%s", yamlstrict.Describe(v), hint)
	}
	out := make([]string, 0, len(v.Content))
	for i, item := range v.Content {
		if item.Kind != yaml.ScalarNode || item.ShortTag() != "!!str" {
			return nil, p.errf(item, key, "item %d must be %s (a string), got %s; quote it if you mean the text", i+1, what, yamlstrict.Describe(item))
		}
		if strings.TrimSpace(item.Value) == "" {
			return nil, p.errf(item, key, "item %d is empty", i+1)
		}
		// Destinations are compared with surrounding space folded away;
		// argument names and paths are exact, so a stray space would make
		// the entry silently miss.
		if what != "a destination" && strings.TrimSpace(item.Value) != item.Value {
			return nil, p.errf(item, key, "item %d: %s has leading or trailing spaces", i+1, strconv.Quote(item.Value))
		}
		if strings.ContainsRune(item.Value, 0) {
			return nil, p.errf(item, key, "item %d contains a NUL character", i+1)
		}
		out = append(out, item.Value)
	}
	return out, nil
}

// paths resolves path prefixes: a relative one against the directory of the
// file that names it, then cleaned. "~" is refused rather than expanded, so
// the policy means the same thing whoever's environment loads it.
func (p *parser) paths(v *yaml.Node, key string, raw []string) ([]string, error) {
	out := make([]string, 0, len(raw))
	for i, r := range raw {
		abs, err := p.path(v.Content[i], key, fmt.Sprintf("item %d: ", i+1), r)
		if err != nil {
			return nil, err
		}
		out = append(out, abs)
	}
	return out, nil
}

// path resolves one path of a policy (see paths); label says which item it
// is in messages.
func (p *parser) path(item *yaml.Node, key, label, r string) (string, error) {
	switch {
	case uriScheme.MatchString(r):
		return "", p.errf(item, key, "%s%s is a URI, not a path; write the absolute path", label, strconv.Quote(r))
	case strings.HasPrefix(r, "~"):
		return "", p.errf(item, key, "%s%s: ~ is not expanded; write the absolute path", label, strconv.Quote(r))
	case filepath.IsAbs(r):
		return filepath.Clean(r), nil
	case p.src.Dir == "":
		return "", p.errf(item, key, "%s%s is relative and this policy has no directory to resolve it against; write an absolute path", label, strconv.Quote(r))
	}
	dir := p.src.Dir
	if !filepath.IsAbs(dir) {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return "", p.errf(item, key, "%sresolving %s: %v", label, strconv.Quote(r), err)
		}
		dir = abs
	}
	return filepath.Join(dir, r), nil
}

// patterns compiles arg_patterns. Each pattern is compiled on its own first,
// so that a pattern like `a)|(.*` can't escape the ^(?:...)$ wrapper that
// makes it match whole values.
func (p *parser) patterns(v *yaml.Node, key string) ([]ArgPattern, error) {
	if v.Kind != yaml.MappingNode {
		return nil, p.errf(v, key, "must be a mapping of argument name to pattern, got %s", yamlstrict.Describe(v))
	}
	var out []ArgPattern
	for i := 0; i+1 < len(v.Content); i += 2 {
		k, pv := v.Content[i], v.Content[i+1]
		arg, err := p.keyName(k, key, "argument name")
		if err != nil {
			return nil, err
		}
		full := key + "." + arg
		if pv.Kind != yaml.ScalarNode || pv.ShortTag() != "!!str" {
			return nil, p.errf(pv, full, "pattern must be a string, got %s; quote it", yamlstrict.Describe(pv))
		}
		if _, err := regexp.Compile(pv.Value); err != nil {
			return nil, p.errf(pv, full, "pattern %s does not compile: %s%s", strconv.Quote(pv.Value), strings.TrimPrefix(err.Error(), "error parsing regexp: "), re2Hint(err))
		}
		re, err := regexp.Compile(`^(?:` + pv.Value + `)$`)
		if err != nil {
			return nil, p.errf(pv, full, "pattern %s does not compile: %s", strconv.Quote(pv.Value), strings.TrimPrefix(err.Error(), "error parsing regexp: "))
		}
		out = append(out, ArgPattern{Arg: arg, Pattern: pv.Value, Re: re})
	}
	return out, nil
}

// countsAs reads `counts_as: {OTHER_TOOL: {ARG: PATTERN, ...}}`: a call in
// which any listed argument matches (a list argument: any element) takes a
// slot of OTHER_TOOL's budget too.
func (p *parser) countsAs(name string, v *yaml.Node, key string) ([]CountsAs, error) {
	if v.Kind != yaml.MappingNode || len(v.Content) == 0 {
		return nil, p.errf(v, key, "must be a mapping of tool name to {argument: pattern}, got %s", yamlstrict.Describe(v))
	}
	var out []CountsAs
	for i := 0; i+1 < len(v.Content); i += 2 {
		k, cv := v.Content[i], v.Content[i+1]
		other, err := p.keyName(k, key, "tool name")
		if err != nil {
			return nil, err
		}
		full := key + "." + other
		if other == name {
			return nil, p.errf(k, full, "a tool already counts against its own max_calls")
		}
		if cv.Kind != yaml.MappingNode || len(cv.Content) == 0 {
			return nil, p.errf(cv, full, "must be a mapping of argument name to pattern saying when the call counts, got %s", yamlstrict.Describe(cv))
		}
		when, err := p.patterns(cv, full)
		if err != nil {
			return nil, err
		}
		out = append(out, CountsAs{Tool: other, When: when})
	}
	return out, nil
}

func re2Hint(err error) string {
	if strings.Contains(err.Error(), "invalid or unsupported Perl syntax") || strings.Contains(err.Error(), "invalid escape sequence") {
		return " (patterns are RE2: no lookarounds or backreferences)"
	}
	return ""
}

func (p *parser) sandbox(k, v *yaml.Node) (*Confinement, error) {
	if isNull(v) || v.Kind != yaml.MappingNode {
		return nil, p.errf(v, SandboxKey, "must be a mapping with %s, got %s", strings.Join(sandboxKeys, ", "), yamlstrict.Describe(v))
	}
	c := &Confinement{Source: p.src.Name + ":" + strconv.Itoa(k.Line)}
	if p.src.abs != "" {
		c.Source = p.src.abs + ":" + strconv.Itoa(k.Line)
	}
	for i := 0; i+1 < len(v.Content); i += 2 {
		kk, vv := v.Content[i], v.Content[i+1]
		key, err := p.keyName(kk, SandboxKey, "key")
		if err != nil {
			return nil, err
		}
		full := SandboxKey + "." + key
		switch key {
		case keyReadWrite, keyReadOnly:
			raw, err := p.strings(vv, full, "a path")
			if err != nil {
				return nil, err
			}
			paths, err := p.paths(vv, full, raw)
			if err != nil {
				return nil, err
			}
			if key == keyReadWrite {
				c.ReadWrite = paths
			} else {
				c.ReadOnly = paths
			}
		case keyConnectTCP:
			if vv.Kind != yaml.SequenceNode {
				return nil, p.errf(vv, full, "must be a list of TCP ports, got %s", yamlstrict.Describe(vv))
			}
			for j, item := range vv.Content {
				var port int64
				if item.Kind != yaml.ScalarNode || item.ShortTag() != "!!int" || item.Decode(&port) != nil || port < 1 || port > 65535 {
					return nil, p.errf(item, full, "item %d must be a TCP port from 1 to 65535, got %s", j+1, yamlstrict.Describe(item))
				}
				c.ConnectTCP = append(c.ConnectTCP, int(port))
			}
		default:
			return nil, p.errf(kk, full, "unknown key%s; the keys are %s", suggest(key, sandboxKeys), strings.Join(sandboxKeys, ", "))
		}
	}
	return c, nil
}

// suggest returns " (did you mean K?)" for the known key nearest to key, when
// one is near enough to be a typo.
func suggest(key string, known []string) string {
	best, bestD := "", -1
	lk := strings.ToLower(key)
	for _, k := range known {
		d := editDistance(lk, k)
		if bestD < 0 || d < bestD {
			best, bestD = k, d
		}
	}
	limit := len(best) / 3
	if limit < 2 {
		limit = 2
	}
	if bestD >= 0 && bestD <= limit {
		return " (did you mean " + best + "?)"
	}
	return ""
}

// editDistance is the Levenshtein distance over bytes; keys are ASCII and
// short, and the input is capped so a huge key can't make it quadratic.
func editDistance(a, b string) int {
	if len(a) > 64 {
		return len(a)
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
