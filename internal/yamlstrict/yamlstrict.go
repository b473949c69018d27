// Package yamlstrict is the one YAML dialect of the files a person writes
// for Bouncer (policy files and trust files), and the one way Bouncer
// writes a YAML scalar into such a file.
//
// Reading: Decode takes one document to a node tree and refuses what
// would make the file mean something other than it reads: anchors and
// aliases (a reviewer reads the anchor, the engine enforces every alias),
// merge keys (<<: a half-merged entry), a key given twice (YAML readers
// differ on which one wins), a key that is not a string (123 or true never
// matches a name), explicit tags (!!binary, !custom: a value whose type
// the tag chose), and a second document. What the keys and values mean is
// the caller's business; every refusal is a *filepos.Error naming the file,
// the line and the key.
//
// Writing: Quote and Scalar turn a string into YAML text that Decode reads
// back as exactly that string, or fail: a string that is not UTF-8 has no
// YAML spelling, and writing a near miss would put a value in the file
// that nobody chose.
package yamlstrict

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/bouncer-mcp/bouncer/internal/filepos"
)

// Decode reads data as one YAML document and returns its top node: a
// mapping, a list or a scalar, never an alias or a document node. It
// returns nil, nil for a file that holds no document at all (empty, or only
// comments); an explicit empty document ("---", "~") is a null scalar.
// Lines in errors are 1-based and inside the file; file names it.
func Decode(file string, data []byte) (top *yaml.Node, err error) {
	lines := bytes.Count(data, []byte("\n")) + 1
	// yaml.v3 has panicked on hostile input before; a file that can't be
	// parsed is an error, never a crash.
	defer func() {
		if r := recover(); r != nil {
			top, err = nil, &filepos.Error{File: file, Msg: fmt.Sprintf("invalid YAML: the parser failed: %v", r)}
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, syntaxError(file, data, lines, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, at(file, lines, &extra, "", "the file holds one YAML document; found another (remove the extra ---)")
	} else if !errors.Is(err, io.EOF) {
		return nil, syntaxError(file, data, lines, err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return nil, nil
	}
	top = doc.Content[0]
	if err := check(file, lines, top, ""); err != nil {
		return nil, err
	}
	return top, nil
}

// check walks n in document order and returns the first thing the dialect
// refuses. path is the dotted key path to n ("" at the top); list items
// share their list's path, as the callers' messages name items by number.
func check(file string, lines int, n *yaml.Node, path string) error {
	if n.Kind == yaml.AliasNode || n.Anchor != "" {
		return at(file, lines, n, path, "YAML anchors and aliases are not allowed; write the value out where it is used")
	}
	if n.Style&yaml.TaggedStyle != 0 {
		return at(file, lines, n, path, "the YAML tag %s is not allowed; write the value without it (quote it if you mean text)", strconv.Quote(n.Tag))
	}
	switch n.Kind {
	case yaml.SequenceNode:
		for _, item := range n.Content {
			if err := check(file, lines, item, path); err != nil {
				return err
			}
		}
	case yaml.MappingNode:
		seen := map[string]int{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
				return at(file, lines, k, path, "YAML merge keys (<<) are not supported; repeat the keys")
			}
			if err := check(file, lines, k, path); err != nil {
				return err
			}
			if k.Kind != yaml.ScalarNode || k.ShortTag() != "!!str" {
				return at(file, lines, k, path, "a key must be a string, got %s (quote it)", Describe(k))
			}
			full := k.Value
			if path != "" {
				full = path + "." + k.Value
			}
			if prev, dup := seen[k.Value]; dup {
				return at(file, lines, k, full, "set twice (first at line %d); keep one (merge the two if both hold what you need)", prev)
			}
			seen[k.Value] = k.Line
			if err := check(file, lines, v, full); err != nil {
				return err
			}
		}
	}
	return nil
}

// at is a refusal at node n, its line kept inside the file.
func at(file string, lines int, n *yaml.Node, key, format string, a ...any) *filepos.Error {
	return &filepos.Error{File: file, Line: min(max(n.Line, 1), lines), Key: key, Msg: fmt.Sprintf(format, a...)}
}

var yamlLine = regexp.MustCompile(`^line (\d+): ?`)

// parserProblems are yaml.v3's parser errors (parserc.go), as opposed to
// its scanner's: yaml.v3 reports their line 0-based (the line before the
// one at fault), and none at all for the first line.
var parserProblems = map[string]bool{
	"did not find expected ',' or ']'":       true,
	"did not find expected ',' or '}'":       true,
	"did not find expected '-' indicator":    true,
	"did not find expected <document start>": true,
	"did not find expected <stream-start>":   true,
	"did not find expected key":              true,
	"did not find expected node content":     true,
	"found duplicate %TAG directive":         true,
	"found duplicate %YAML directive":        true,
	"found incompatible YAML document":       true,
	"found undefined tag handle":             true,
}

// scannerProblem reports one of yaml.v3's scanner errors (scannerc.go),
// whose line yaml.v3 leaves out when it is the first.
func scannerProblem(msg string) bool {
	for _, p := range []string{"found ", "did not find ", "could not find ", "exceeded max depth"} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return strings.HasSuffix(msg, " are not allowed in this context")
}

// hints say what usually causes a syntax error, in a policy author's terms.
var hints = map[string]string{
	"did not find expected ',' or ']'":               "a [list] not closed with ]?",
	"did not find expected ',' or '}'":               "a {mapping} not closed with }?",
	"found unexpected end of stream":                 "a quote not closed?",
	"mapping values are not allowed in this context": "a second ': ' on one line (quote a value that holds ': '), or a key indented under a value?",
	"did not find expected key":                      "a line indented differently from the keys beside it?",
	"found character that cannot start any token":    "a value starting with @ or ` must be quoted",
}

// syntaxError turns yaml.v3's "yaml: line N: msg" into a *filepos.Error
// at the line at fault (yaml.v3's parser errors are a line early, see
// parserProblems). Some of its errors carry no line: one about the end of
// the stream (an unclosed quote or bracket) is at the last line, where the
// reader ran out; a parser or scanner error is at the first; the others
// ("unknown anchor") name the file alone rather than a line that would be
// a guess. A hint in the author's terms follows the parser's words.
func syntaxError(file string, data []byte, lines int, err error) *filepos.Error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 0
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		msg = msg[len(m[0]):]
		if n, convErr := strconv.Atoi(m[1]); convErr == nil && n >= 1 {
			if parserProblems[msg] {
				// A line early, unless yaml.v3 fell back on the problem's
				// own mark (a construct opened on the first line): then it
				// may be the blank end of the file, past the text at fault.
				n++
				for n > 1 && strings.TrimSpace(lineOf(data, n)) == "" {
					n--
				}
			}
			line = min(n, lines)
		}
	} else if strings.Contains(msg, "end of stream") {
		line = lines
	} else if parserProblems[msg] || scannerProblem(msg) {
		line = 1
	}
	hint := hints[msg]
	if l := lineOf(data, line); strings.Contains(l[:len(l)-len(strings.TrimLeft(l, " \t"))], "\t") {
		hint = "a tab? YAML indents with spaces"
	}
	if hint != "" {
		msg += " (" + hint + ")"
	}
	return &filepos.Error{File: file, Line: line, Msg: "invalid YAML: " + msg}
}

// lineOf is line n (1-based) of data, or "".
func lineOf(data []byte, n int) string {
	for i, l := range bytes.Split(data, []byte("\n")) {
		if i+1 == n {
			return string(l)
		}
	}
	return ""
}

// Describe names a node's type for messages: "a list", "the string \"no\"",
// "the integer 1".
func Describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			return "nothing (null)"
		case "!!bool":
			return "the boolean " + n.Value
		case "!!int":
			return "the integer " + n.Value
		case "!!float":
			return "the number " + n.Value
		case "!!str":
			return "the string " + strconv.Quote(n.Value)
		}
		// Explicit tags are refused, so this is a type YAML resolved on
		// its own, such as !!timestamp for 2001-12-14.
		return "a " + n.ShortTag() + " value " + strconv.Quote(n.Value)
	}
	return "an unexpected node"
}

// ErrNotUTF8 is returned by Quote and Scalar for a string YAML can't hold.
var ErrNotUTF8 = errors.New("not valid UTF-8, so YAML can't hold it")

// Quote returns s as a YAML double-quoted scalar that reads back as
// exactly s. Characters a person could not see (controls, bidirectional
// overrides, invisible ones) are written as escapes, so the file shows
// what it holds.
func Quote(s string) (string, error) {
	if !utf8.ValidString(s) {
		return "", fmt.Errorf("%s: %w", strconv.QuoteToASCII(s), ErrNotUTF8)
	}
	// For valid UTF-8, Go's escapes (\n, \x1b, \u202e, \U000e0041) are all
	// YAML double-quoted escapes with the same meaning; \xHH is only ever
	// written below U+0080, where YAML's code point and Go's byte agree.
	return strconv.Quote(s), nil
}

// plainSafe is what Scalar considers writing unquoted: path and name
// characters only, so no indicator (: # - ? [ { & * ! | > ' " % @ `)
// can change how the text is read.
var plainSafe = regexp.MustCompile(`^[A-Za-z0-9_./][A-Za-z0-9_./-]*$`)

// Scalar returns s unquoted when YAML reads that back as the same string
// (a path, a tool name), else Quote(s): "true", "1.5", "null" stay quoted.
func Scalar(s string) (string, error) {
	if plainSafe.MatchString(s) {
		var n yaml.Node
		if yaml.Unmarshal([]byte(s), &n) == nil && len(n.Content) == 1 {
			if v := n.Content[0]; v.Kind == yaml.ScalarNode && v.ShortTag() == "!!str" && v.Value == s {
				return s, nil
			}
		}
	}
	return Quote(s)
}

// maxKey is the longest text YAML reads as a key on one line ("KEY: v"),
// in characters, quotes and escapes included.
const maxKey = 1024

// Key returns s written by write (Quote or Scalar) for a mapping key, as
// in "KEY: value" with the colon right after it. YAML reads no key on one
// line longer than 1024 characters, so a longer one is an error rather
// than a file that does not load.
func Key(s string, write func(string) (string, error)) (string, error) {
	q, err := write(s)
	if err != nil {
		return "", err
	}
	if utf8.RuneCountInString(q) > maxKey {
		r := []rune(s)
		return "", fmt.Errorf("%s…: %w", strconv.QuoteToASCII(string(r[:min(len(r), 40)])), ErrLongKey)
	}
	return q, nil
}

// ErrLongKey is returned by Key for a key YAML can't hold on one line.
var ErrLongKey = fmt.Errorf("longer than the %d characters YAML allows a key", maxKey)

// Flow returns items as a YAML flow list, "[a, b]", each item written by
// write (Quote or Scalar).
func Flow(items []string, write func(string) (string, error)) (string, error) {
	parts := make([]string, len(items))
	for i, s := range items {
		q, err := write(s)
		if err != nil {
			return "", err
		}
		parts[i] = q
	}
	return "[" + strings.Join(parts, ", ") + "]", nil
}
