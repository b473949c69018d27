package jsonc

import (
	"fmt"

	"github.com/bouncer-mcp/bouncer/internal/display"
)

// A key that appears twice in one JSON object is read differently by
// different readers, so Bouncer refuses it where the difference matters.
// The rule is not one function across the project, on purpose:
//
//   - Here, in a client's config, a key repeated in any object on the path
//     init reads and rewrites (a server block and everything in its
//     entries: command, args, env, url, headers, x-bouncer-upstream) is
//     refused, compared exactly (internal/mcpconfig calls CheckUnique on
//     each block). The readers are the clients (JSON.parse, VS Code's
//     jsonc-parser: exact keys, the last of two wins) and bouncer itself;
//     a repeat would have init wrap one server while the client runs the
//     other. A repeat elsewhere in the file (the client's own settings) is
//     left to the client, so a stray one there does not stop init.
//   - In a tools/call (engine.ParseCall), a repeated key is refused at any
//     depth, and so are two keys that fold together (jsontext.FoldKey):
//     the readers include Go servers, whose encoding/json matches struct
//     fields ignoring case. No client reads its config that way.
//   - The policy and trust files (internal/policy, internal/bundle) are
//     YAML: internal/yamlstrict.Decode, their one dialect, refuses a
//     repeated key at any depth, naming both lines.

// repeated returns the first member of object n whose key an earlier member
// already has, with that earlier member; nil when every key is unique.
func (n *Node) repeated() (first, second *Member) {
	if n.Kind != Object || len(n.Members) < 2 {
		return nil, nil
	}
	seen := make(map[string]int, len(n.Members))
	for i := range n.Members {
		if j, ok := seen[n.Members[i].Key]; ok {
			return &n.Members[j], &n.Members[i]
		}
		seen[n.Members[i].Key] = i
	}
	return nil, nil
}

// CheckUnique refuses a key repeated in object n or in any object inside
// it, naming the second key's place (the first in file order) and path,
// which says where n is ("mcpServers.files"), extended as it goes down.
// data is the text n was read from, file its name.
func CheckUnique(file string, data []byte, n *Node, path string) *Error {
	if first, second := n.repeated(); second != nil {
		// A repeat in n itself comes before any inside a later member's
		// value, but may come after one inside an earlier member's: look
		// there first, in file order.
		for i := range n.Members {
			m := &n.Members[i]
			if m == second {
				break
			}
			if err := CheckUnique(file, data, m.Val, path+"."+m.Key); err != nil {
				return err
			}
		}
		return Repeated(file, data, path, first, second)
	}
	for _, m := range n.Members {
		if err := CheckUnique(file, data, m.Val, path+"."+m.Key); err != nil {
			return err
		}
	}
	for i, e := range n.Elems {
		if err := CheckUnique(file, data, e, fmt.Sprintf("%s[%d]", path, i)); err != nil {
			return err
		}
	}
	return nil
}

// Repeated says that second repeats first's key in the object at path, at
// second's place, and what to do about it. The path is made of keys of a
// file that may have come with a cloned project, so it is escaped for the
// terminal like the key (display.Printable).
func Repeated(file string, data []byte, path string, first, second *Member) *Error {
	line, col := LineCol(data, second.KeyStart)
	firstLine, _ := LineCol(data, first.KeyStart)
	where, _ := display.Printable(path)
	return &Error{File: file, Line: line, Col: col, Msg: fmt.Sprintf(
		"%q appears twice in %s (first at line %d); clients keep the last one, and bouncer won't guess which you meant: remove one of the two %q keys",
		second.Key, where, firstLine, second.Key)}
}
