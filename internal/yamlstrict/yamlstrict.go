// Package yamlstrict is the one YAML dialect of the files a person writes
// for Bouncer (policy files and trust files).
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
package yamlstrict

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

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
		return nil, syntaxError(file, lines, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, at(file, lines, &extra, "", "the file holds one YAML document; found another (remove the extra ---)")
	} else if !errors.Is(err, io.EOF) {
		return nil, syntaxError(file, lines, err)
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

// syntaxError turns yaml.v3's "yaml: line N: msg" into a *filepos.Error
// at line N. Some of its errors carry no line ("unknown anchor"); those
// name the file alone rather than a line that would be a guess.
func syntaxError(file string, lines int, err error) *filepos.Error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 0
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		if n, convErr := strconv.Atoi(m[1]); convErr == nil && n >= 1 {
			line = min(n, lines)
		}
		msg = msg[len(m[0]):]
	}
	return &filepos.Error{File: file, Line: line, Msg: "invalid YAML: " + msg}
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
